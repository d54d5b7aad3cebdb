"""Default metrics: accuracy and macro-F1 over categorical targets, and the calibration of classifiers that give
probabilities (expected calibration error, Brier score), which read items rather than targets."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from dynaforge.hookspecs import hookimpl
from dynaforge.tasks.base import Metric, MetricItem

#: The expected calibration error's bins: this many of equal width over [0, 1] (Guo et al. 2017 use 15).
ECE_BINS = 15


def accuracy(golds: list[Any], preds: list[Any]) -> float:
    """Share of predictions equal to gold; 0.0 for an empty list."""
    if len(golds) != len(preds):
        raise ValueError("golds and preds differ in length")
    if not golds:
        return 0.0
    return float(sum(g == p for g, p in zip(golds, preds, strict=True))) / len(golds)


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


def _top_label(probabilities: Any) -> tuple[Any, float]:
    """The most probable label and its probability (ties: the first in the task's label order)."""
    label, p = None, -1.0
    for candidate, value in probabilities.items():
        if value > p:
            label, p = candidate, value
    return label, p


def expected_calibration_error(items: list[MetricItem]) -> float:
    """Expected calibration error of the top label (Naeini et al. 2015; Guo et al. 2017): each item's confidence is
    the largest of its probabilities, and it is right when that label is the gold one; items are put in
    :data:`ECE_BINS` equal-width bins by confidence, ``(0, 1/15], (1/15, 2/15], ..., (14/15, 1]`` (a confidence of 0
    in the first); the ECE is the mean over bins, weighted by their share of the items, of ``|accuracy - mean
    confidence|`` within the bin (empty bins count for nothing). 0 is perfectly calibrated; 0.0 for no items."""
    if not items:
        return 0.0
    count = [0] * ECE_BINS
    right = [0] * ECE_BINS
    confidence = [0.0] * ECE_BINS
    for item in items:
        label, p = _top_label(item.probabilities)
        b = min(ECE_BINS - 1, max(0, math.ceil(p * ECE_BINS) - 1))
        count[b] += 1
        right[b] += label == item.gold
        confidence[b] += p
    return math.fsum(abs(right[b] - confidence[b]) for b in range(ECE_BINS) if count[b]) / len(items)


def brier_score(items: list[MetricItem]) -> float:
    """Multi-class Brier score (Brier 1950): the mean over items of ``sum over labels of (p(label) - y(label))^2``,
    ``y`` being 1 for the gold label and 0 for the others. 0 for certain and right, 2 for certain and wrong; 0.0 for
    no items."""
    if not items:
        return 0.0
    total = 0.0
    for item in items:
        probabilities = item.probabilities or {}
        total += math.fsum((p - (label == item.gold)) ** 2 for label, p in probabilities.items())
        if item.gold not in probabilities:
            total += 1.0
    return total / len(items)


@hookimpl(trylast=True)
def register_metrics(register: Callable[[Metric], None]) -> None:
    register(Metric("accuracy", accuracy, "Share of examples whose prediction equals the gold target."))
    register(Metric("macro_f1", macro_f1, "Mean F1 over classes, each class weighted equally."))
    register(
        Metric(
            "ece",
            expected_calibration_error,
            f"Expected calibration error of the most probable label, over {ECE_BINS} equal-width confidence bins "
            "(0: calibrated). Items whose prediction gives no probabilities over the task's labels are left out.",
            higher_is_better=False,
            reads="items",
            needs=("probabilities",),
        )
    )
    register(
        Metric(
            "brier",
            brier_score,
            "Multi-class Brier score: mean squared distance of the probabilities from the gold label (0 to 2). "
            "Items whose prediction gives no probabilities over the task's labels are left out.",
            higher_is_better=False,
            reads="items",
            needs=("probabilities",),
        )
    )
