"""The task's fixed recipe: multinomial naive Bayes over lower-cased word unigrams with Laplace smoothing, in pure
Python, so that a selection is all that differs between two submissions.

:func:`fit` is the trainer the task's ``DataSelection`` names: ``fit(examples, *, seed)`` trains on the selected
items' ``text`` and ``label`` and returns a predictor whose ``predict(inputs)`` answers each ``{"text": ...}`` with
``{"label": ..., "probabilities": {label: p}}``. Naive Bayes draws no random numbers, so the result is the same for
every seed (the argument is there because the contract passes one); ties go to the label that comes first in
:data:`~dynaforge_data_selection.data.LABELS`.

:func:`load_seed` is the ``python`` backend's factory of the task's default target: the recipe trained on the
package's seed set.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from dynaforge_data_selection.data import LABELS, SEED_FILE, read_jsonl

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def words(text: str) -> list[str]:
    """The lower-cased words of a text; punctuation and case are not features."""
    return _WORD.findall(text.lower())


def _label_order(seen: Iterable[str]) -> list[str]:
    """The task's labels first, in their order, then any other label seen, sorted: the order ties are broken in."""
    extra = sorted(set(seen) - set(LABELS))
    return [*LABELS, *extra]


class NaiveBayes:
    """A trained model. Labels the selection never showed get probability 0 and are never predicted; with no
    training item at all every label is equally likely and the first one is the answer."""

    def __init__(self, examples: list[dict[str, Any]], *, alpha: float = 1.0):
        self.alpha = alpha
        counts: Counter[str] = Counter()
        word_counts: dict[str, Counter[str]] = {}
        for example in examples:
            label = example["label"]
            counts[label] += 1
            word_counts.setdefault(label, Counter()).update(words(example["text"]))
        self.labels = _label_order(counts)
        self.trained = [label for label in self.labels if counts[label]]
        self.vocabulary = set().union(*word_counts.values()) if word_counts else set()
        total = sum(counts.values())
        self.log_prior = {label: math.log(counts[label] / total) for label in self.trained}
        self.log_likelihood: dict[str, dict[str, float]] = {}
        self.log_unseen: dict[str, float] = {}
        for label in self.trained:
            label_words = word_counts[label]
            denominator = sum(label_words.values()) + alpha * len(self.vocabulary)
            self.log_likelihood[label] = {w: math.log((n + alpha) / denominator) for w, n in label_words.items()}
            self.log_unseen[label] = math.log(alpha / denominator)

    def scores(self, text: str) -> dict[str, float]:
        """The log of each trained label's joint probability with the text's known words."""
        known = [w for w in words(text) if w in self.vocabulary]
        return {
            label: self.log_prior[label] + sum(self.log_likelihood[label].get(w, self.log_unseen[label]) for w in known)
            for label in self.trained
        }

    def predict_one(self, text: str) -> dict[str, Any]:
        if not self.trained:
            share = 1 / len(self.labels)
            return {"label": self.labels[0], "probabilities": {label: share for label in self.labels}}
        scores = self.scores(text)
        best = max(scores.values())
        label = next(label for label in self.trained if scores[label] == best)  # the first of equals wins
        exps = {label: math.exp(score - best) for label, score in scores.items()}
        total = sum(exps.values())
        return {
            "label": label,
            "probabilities": {name: exps.get(name, 0.0) / total for name in self.labels},
        }

    def predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [self.predict_one(item["text"]) for item in inputs]


def fit(examples: list[dict[str, Any]], *, seed: int = 0) -> NaiveBayes:
    """The trainer of the task's data selection: the recipe trained on the selected items (``seed`` is unused)."""
    del seed  # naive Bayes is deterministic
    return NaiveBayes(list(examples))


def load_seed() -> NaiveBayes:
    """The default target's factory: the recipe trained on the shipped seed set."""
    return fit(read_jsonl(SEED_FILE), seed=0)
