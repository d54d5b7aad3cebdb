"""A word bigram language model with interpolated Kneser-Ney smoothing, in pure Python: the task's target model.

It answers the task's model input ``{"sentence_a": ..., "sentence_b": ...}`` with the log-likelihood of each
sentence, ``{"log_likelihoods": {"a": float, "b": float}}`` (natural log, with sentence start and end), which the task
turns into the sentence the model prefers.

``python -m dynaforge_minimal_pairs.ngram build`` trains it on :mod:`dynaforge_minimal_pairs.corpus` and writes the
shipped weights, ``weights/bigram.json``; ``... ngram check`` fails when they differ from a fresh build.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dynaforge_minimal_pairs import corpus

WEIGHTS = Path(__file__).parent / "weights" / "bigram.json"
START, END = "<s>", "</s>"
_TOKEN = re.compile(r"[a-z0-9']+|[^\sa-z0-9']")


def tokens(sentence: str) -> list[str]:
    """Lower-cased words and punctuation marks, a full stop added when the sentence has no final mark."""
    words = _TOKEN.findall(sentence.lower())
    if not words or words[-1] not in {".", "!", "?"}:
        words.append(".")
    return words


def train(sentences: Iterable[str], *, discount: float = 0.75, unknown_share: float = 0.01) -> dict[str, Any]:
    """The model's parameters (JSON-ready) from the sentences: bigram counts and continuation counts."""
    bigrams: dict[str, Counter[str]] = defaultdict(Counter)
    for sentence in sentences:
        words = [START, *tokens(sentence), END]
        for previous, word in zip(words, words[1:], strict=False):
            bigrams[previous][word] += 1
    continuation: Counter[str] = Counter()
    for following in bigrams.values():
        continuation.update(following.keys())
    return {
        "discount": discount,
        "unknown_share": unknown_share,
        "bigrams": {v: dict(sorted(c.items())) for v, c in sorted(bigrams.items())},
        "continuation": dict(sorted(continuation.items())),
    }


class BigramModel:
    """Scores sentences with the parameters :func:`train` made."""

    def __init__(self, params: dict[str, Any], *, use_context: bool = True):
        self.use_context = use_context
        self.discount = float(params["discount"])
        self.unknown_share = float(params["unknown_share"])
        self.bigrams: dict[str, dict[str, int]] = params["bigrams"]
        self.continuation: dict[str, int] = params["continuation"]
        self.bigram_types = sum(self.continuation.values())
        self.vocabulary = len(self.continuation)
        self.totals = {v: sum(c.values()) for v, c in self.bigrams.items()}

    def _p_continuation(self, word: str) -> float:
        known = self.continuation.get(word, 0) / self.bigram_types
        return (1 - self.unknown_share) * known + self.unknown_share / (self.vocabulary + 1)

    def probability(self, previous: str, word: str) -> float:
        """P(word | previous), interpolated Kneser-Ney; never zero (unknown words share a small mass). Without
        context, P(word) alone: a bag-of-words baseline, blind to agreement and order."""
        following = self.bigrams.get(previous) if self.use_context else None
        if not following:
            return self._p_continuation(word)
        total = self.totals[previous]
        seen = max(following.get(word, 0) - self.discount, 0.0) / total
        backoff = self.discount * len(following) / total
        return seen + backoff * self._p_continuation(word)

    def log_likelihood(self, sentence: str) -> float:
        words = [START, *tokens(sentence), END]
        return sum(math.log(self.probability(v, w)) for v, w in zip(words, words[1:], strict=False))

    def predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {
                "log_likelihoods": {
                    "a": self.log_likelihood(item["sentence_a"]),
                    "b": self.log_likelihood(item["sentence_b"]),
                }
            }
            for item in inputs
        ]


def load(weights: str | None = None, use_context: bool = True) -> BigramModel:
    """The ``python`` backend's factory: the shipped weights, or the JSON file ``weights`` names;
    ``use_context=False`` makes the bag-of-words baseline from the same counts."""
    path = Path(weights) if weights else WEIGHTS
    return BigramModel(json.loads(path.read_text(encoding="utf-8")), use_context=use_context)


def build() -> str:
    """The shipped weights' JSON text, trained afresh on the package's corpus."""
    return json.dumps(train(corpus.sentences()), indent=0, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if command == "build":
        WEIGHTS.parent.mkdir(exist_ok=True)
        WEIGHTS.write_text(build(), encoding="utf-8")
        print(f"wrote {WEIGHTS}")
        return 0
    if command == "check":
        if not WEIGHTS.exists() or WEIGHTS.read_text(encoding="utf-8") != build():
            print(f"{WEIGHTS} is stale: run python -m dynaforge_minimal_pairs.ngram build", file=sys.stderr)
            return 1
        return 0
    print("usage: python -m dynaforge_minimal_pairs.ngram build|check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
