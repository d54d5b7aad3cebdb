"""The minimal-pairs task: two sentences a word or two apart, one grammatical; the annotator wins when the language
model gives the ungrammatical one the higher likelihood.

The model in the loop is a language model, not a classifier: it answers each pair with the log-likelihood of each
sentence (:mod:`dynaforge_minimal_pairs.ngram`), and the task reads that into the sentence it prefers. A model that
can only classify may answer ``{"grammatical": "a" | "b"}`` instead. Submissions are scored by pair accuracy (the
share of pairs where the grammatical sentence is the more likely), with phenomena as fairness slices.
"""

from __future__ import annotations

import math
from typing import Any

from dynaforge import ChoiceField, FieldError, InvalidInput, ModelSpec, Role, Slice, Task, TextField, hookimpl

from dynaforge_minimal_pairs.ngram import tokens

CODE = "minimal-pairs"
PHENOMENA = ("agreement", "determiner", "tense", "negation", "word-order", "other")
#: How many words the two sentences may differ by (an edit: a word replaced, added or dropped).
MAX_EDITS = 2


def word_edits(a: list[str], b: list[str]) -> int:
    """The word-level edit distance (Levenshtein) between two token lists."""
    previous = list(range(len(b) + 1))
    for i, word_a in enumerate(a, 1):
        current = [i]
        for j, word_b in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word_a != word_b)))
        previous = current
    return previous[-1]


class MinimalPairsTask(Task):
    code = CODE
    name = "Minimal pairs"
    description = "Two sentences a word apart, one grammatical: does the language model know which?"
    instructions = (
        "Write a grammatical English sentence and a copy of it that changes one or two words so that it becomes "
        "ungrammatical (a verb that no longer agrees, a wrong article, a wrong past tense, a misplaced word). Say "
        "which one is grammatical and what kind of rule the pair tests. The language model fails when it finds "
        "the ungrammatical sentence more likely. Both must be ordinary sentences a reader would judge the same way."
    )
    labels = ("a", "b")
    fields = (
        TextField(name="sentence_a", role=Role.INPUT, min_length=3, max_length=200, description="Sentence A."),
        TextField(name="sentence_b", role=Role.INPUT, min_length=3, max_length=200, description="Sentence B."),
        ChoiceField(name="grammatical", role=Role.TARGET, description="Which sentence is grammatical, A or B?"),
        ChoiceField(
            name="phenomenon",
            role=Role.METADATA,
            choices=PHENOMENA,
            description="The rule the ungrammatical sentence breaks.",
        ),
    )
    metrics = ("accuracy",)
    principal_metric = "accuracy"
    perturbations = ("lowercase",)  # the same change to both sentences keeps the pair and its answer
    fairness_slices = ("minimal-pairs-phenomenon",)
    default_target_models = (
        ModelSpec(name="bigram-kn", backend="python", config={"factory": "dynaforge_minimal_pairs.ngram:load"}),
    )
    sample_examples = (
        {
            "sentence_a": "The dogs walk in the garden.",
            "sentence_b": "The dogs walks in the garden.",
            "grammatical": "a",
            "phenomenon": "agreement",
        },
        {
            "sentence_a": "Yesterday the cat sleeped at home.",
            "sentence_b": "Yesterday the cat slept at home.",
            "grammatical": "b",
            "phenomenon": "tense",
        },
        # the model has seen "an" only after plural subjects: it prefers the wrong article here
        {
            "sentence_a": "My sister has an apple.",
            "sentence_b": "My sister has a apple.",
            "grammatical": "a",
            "phenomenon": "determiner",
        },
    )

    def validate_example(self, values: Any, context: dict[str, Any] | None) -> dict[str, Any]:
        """The field rules, then the pair's: the sentences differ, by at most :data:`MAX_EDITS` words."""
        cleaned = super().validate_example(values, context)
        a, b = tokens(cleaned["sentence_a"]), tokens(cleaned["sentence_b"])
        edits = word_edits(a, b)
        if edits == 0:
            raise InvalidInput.from_errors(
                [FieldError("sentence_b", "minimal_pair", "is the same sentence as A: change one or two words")]
            )
        if edits > MAX_EDITS:
            raise InvalidInput.from_errors(
                [
                    FieldError(
                        "sentence_b",
                        "minimal_pair",
                        f"differs from A by {edits} words; a minimal pair differs by at most {MAX_EDITS} (a word "
                        "replaced, added, dropped, or two words swapped)",
                    )
                ]
            )
        return cleaned

    def read_model_output(self, output: dict[str, Any]) -> dict[str, Any]:
        """A language model's ``{"log_likelihoods": {"a": float, "b": float}}`` becomes the sentence it prefers
        (``grammatical``, None on a tie, which counts as wrong) with the two as probabilities; a classifier's
        ``{"grammatical": "a" | "b"}`` is read as the default reads labels."""
        if not isinstance(output, dict) or "log_likelihoods" not in output:
            return super().read_model_output(output)
        scores = output["log_likelihoods"]
        if not isinstance(scores, dict) or set(scores) != {"a", "b"}:
            raise ValueError('log_likelihoods must be an object {"a": number, "b": number}')
        a, b = (float(scores[k]) for k in ("a", "b"))
        if not all(math.isfinite(x) for x in (a, b)):
            raise ValueError(f"log_likelihoods must be finite numbers, got {scores}")
        top = max(a, b)
        share_a = math.exp(a - top) / (math.exp(a - top) + math.exp(b - top))
        return {
            "grammatical": None if a == b else ("a" if a > b else "b"),
            "probabilities": {"a": share_a, "b": 1 - share_a},
            "log_likelihoods": {"a": a, "b": b},
        }


def phenomenon_group(fields: dict[str, Any]) -> str | None:
    return fields.get("phenomenon")


@hookimpl
def register_tasks(register):
    register(MinimalPairsTask())


@hookimpl
def register_fairness_slices(register):
    register(
        Slice(
            name="minimal-pairs-phenomenon",
            group=phenomenon_group,
            task_code=CODE,
            description="Pairs by the rule they test: agreement, determiner, tense, negation, word order.",
        )
    )
