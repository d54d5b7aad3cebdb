"""SQuAD answer scoring in pure Python: normalisation, token F1 and exact match.

These are the rules of the official SQuAD evaluation script (Rajpurkar et al. 2016): answers are compared after
lower-casing, removing punctuation and the articles a/an/the, and collapsing whitespace; F1 is computed over the
bag of remaining words. The task's fooled rule and its two registered metrics are built on them, so the API
process uses this module without importing torch.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower case, drop punctuation, drop the articles a/an/the, collapse whitespace (SQuAD's normalisation)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD word-overlap F1 of two answer texts; when either normalises to nothing, 1.0 iff both do."""
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    overlap = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the two answer texts are equal after normalisation, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def best_over_golds(metric, prediction: str, golds: Iterable[str]) -> float:
    """The best score of ``prediction`` against any of several gold answers (how SQuAD scores a question)."""
    return max((metric(prediction, gold) for gold in golds), default=0.0)


def span_text(span: Mapping[str, Any] | None) -> str:
    """The text of a ``{"text", "start"}`` span; a missing span (None) reads as the empty answer."""
    if span is None:
        return ""
    if not isinstance(span, Mapping) or not isinstance(span.get("text"), str):
        raise TypeError(f'a span must be an object {{"text": string, "start": integer}}, got {span!r}')
    return span["text"]


def _mean_over_spans(metric, golds: list[Any], preds: list[Any]) -> float:
    if len(golds) != len(preds):
        raise ValueError(f"golds and preds differ in length ({len(golds)} vs {len(preds)})")
    if not golds:
        return 0.0
    return sum(metric(span_text(p), span_text(g)) for g, p in zip(golds, preds, strict=True)) / len(golds)


def span_f1(golds: list[Any], preds: list[Any]) -> float:
    """Mean SQuAD token F1 of predicted vs gold span texts (span dicts; a None prediction scores 0)."""
    return _mean_over_spans(token_f1, golds, preds)


def span_exact_match(golds: list[Any], preds: list[Any]) -> float:
    """Mean normalised exact match of predicted vs gold span texts (span dicts; a None prediction scores 0)."""
    return _mean_over_spans(exact_match, golds, preds)
