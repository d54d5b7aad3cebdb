"""Default metrics: accuracy and macro-F1 over categorical targets."""

from __future__ import annotations

from typing import Any

from dynaforge.hookspecs import hookimpl
from dynaforge.tasks.base import Metric


def accuracy(golds: list[Any], preds: list[Any]) -> float:
    """Share of predictions equal to gold; 0.0 for an empty list."""
    if len(golds) != len(preds):
        raise ValueError("golds and preds differ in length")
    if not golds:
        return 0.0
    return sum(g == p for g, p in zip(golds, preds, strict=True)) / len(golds)


def macro_f1(golds: list[Any], preds: list[Any]) -> float:
    """Unweighted mean of per-class F1 over the classes present in gold or predictions."""
    if len(golds) != len(preds):
        raise ValueError("golds and preds differ in length")
    classes = sorted(set(golds) | set(preds), key=str)
    if not classes:
        return 0.0
    total = 0.0
    for c in classes:
        tp = sum(1 for g, p in zip(golds, preds, strict=True) if g == c and p == c)
        fp = sum(1 for g, p in zip(golds, preds, strict=True) if g != c and p == c)
        fn = sum(1 for g, p in zip(golds, preds, strict=True) if g == c and p != c)
        denominator = 2 * tp + fp + fn
        total += (2 * tp / denominator) if denominator else 0.0
    return total / len(classes)


@hookimpl(trylast=True)
def register_metrics(register):
    register(Metric("accuracy", accuracy, "Share of examples whose prediction equals the gold target."))
    register(Metric("macro_f1", macro_f1, "Mean F1 over classes, each class weighted equally."))
