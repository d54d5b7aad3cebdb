"""A Dynaforge task plugin in the style of BabyLM's minimal pairs: annotators write two sentences that differ in a
word or two, one grammatical and one not, and win when a small language model finds the wrong one more likely."""
