"""The text the target model learns from: English sentences made from templates by this package, deterministic, so
the shipped weights can be rebuilt and checked (``python -m dynaforge_minimal_pairs.ngram build``).

The templates cover what the task's phenomena test (subject-verb agreement, determiners, past tense, negation,
word order), but not every combination: a model trained on them has gaps an annotator can find."""

from __future__ import annotations

import itertools
import random

SINGULAR = ["the dog", "the cat", "the child", "my sister", "the teacher", "a farmer", "the bird", "our neighbour"]
PLURAL = ["the dogs", "the cats", "the children", "my sisters", "the teachers", "two farmers", "the birds"]
# (base form, third person singular, past tense)
VERBS = [
    ("walk", "walks", "walked"),
    ("sing", "sings", "sang"),
    ("sleep", "sleeps", "slept"),
    ("run", "runs", "ran"),
    ("read", "reads", "read"),
    ("play", "plays", "played"),
    ("eat", "eats", "ate"),
]
PLACES = ["in the garden", "at home", "near the river", "every morning", "after school", "on the hill"]
A_NOUNS = ["book", "house", "song", "ball", "cake", "letter"]
AN_NOUNS = ["apple", "orange", "egg", "idea", "umbrella", "old car"]
OBJECT_VERBS = [("has", "have"), ("wants", "want"), ("finds", "find"), ("likes", "like")]


def sentences(seed: int = 0) -> list[str]:
    """Every sentence of the corpus, in a fixed shuffled order."""
    out: list[str] = []
    for subject, (base, third, past), place in itertools.product(SINGULAR, VERBS, PLACES):
        out.append(f"{subject} {third} {place} .")
        out.append(f"yesterday {subject} {past} {place} .")
        out.append(f"{subject} does not {base} {place} .")
    for subject, (base, _third, past), place in itertools.product(PLURAL, VERBS, PLACES):
        out.append(f"{subject} {base} {place} .")
        out.append(f"yesterday {subject} {past} {place} .")
        out.append(f"{subject} do not {base} {place} .")
    for subject, (singular_verb, _plural_verb), noun in itertools.product(SINGULAR, OBJECT_VERBS, A_NOUNS):
        out.append(f"{subject} {singular_verb} a {noun} .")
    for subject, (_singular_verb, plural_verb), noun in itertools.product(PLURAL, OBJECT_VERBS, AN_NOUNS):
        out.append(f"{subject} {plural_verb} an {noun} .")
    random.Random(seed).shuffle(out)
    return out
