"""The statistics an evaluation reports for one model on one data set, as pure functions.

Everything here is pure Python (the API process imports it and must not import numpy) and runs in O(n) per pass, so
the evaluation worker can call it on lists of about a hundred thousand predictions.

Records and target values
    Gold records are the examples' field values (a mapping holding at least the task's target fields); predictions
    are what :meth:`Task.read_model_output` returns (the target fields, maybe ``probabilities``/``confidence``), or
    ``None`` for an item the model gave no answer for (the metric's own rule decides what that scores). A metric is
    given the *target values*: the value of the task's single target field (a label, a span ``{"text", "start"}``),
    or a tuple of the values, in field order, when a task has several target fields. See :func:`target_key`.

Metrics that read items
    A metric registered with ``reads="items"`` is given :class:`~dynaforge.tasks.base.MetricItem` objects instead:
    each item's field values (its inputs among them), gold and predicted target values, the prediction's
    probabilities over the task's labels (:func:`read_probabilities`) and its confidence. Items that lack what the
    metric ``needs`` are skipped (:func:`coverage` counts them, by reason); a set on which every item is skipped has
    no value for the metric, which is then left out of :func:`score` and of a slice group's figures. Intervals and
    slices work alike for both forms.

What an evaluation reports per data set
    - :func:`score`: the task's metrics, each a registered :class:`~dynaforge.tasks.base.Metric`, with its own
      semantics (item-averaged like accuracy, or corpus-level like macro-F1).
    - :func:`metric_interval`: a percentile bootstrap interval for a metric, usually the principal one
      (:func:`bootstrap_interval` is the general tool underneath).
    - :func:`consistency`: Dynabench's robustness and fairness measure, the share of perturbed variants whose
      prediction equals the model's prediction on the original, averaged over originals that have variants.
    - :func:`perturbed_score`: the task's metrics on the perturbed variants against their originals' gold.
    - :func:`slice_metrics` and :func:`slice_gaps`: metrics per fairness-slice group, and how far the worst group
      (of at least :data:`DEFAULT_MIN_GROUP_SIZE` examples) falls below the whole data set.

Bad input (lists of different lengths, empty lists, unknown metrics, a slice of another task...) raises
:class:`~dynaforge.errors.InvalidInput` with a message that says what is wrong.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, NamedTuple

from dynaforge.defaults.metrics import macro_f1 as _core_macro_f1
from dynaforge.errors import InvalidInput
from dynaforge.tasks.base import Metric, MetricItem, Slice, Task, choice_labels
from dynaforge.tasks.fields import Role, TextField

#: Groups of a fairness slice with fewer examples than this are reported but not used for the worst-group gap:
#: on a handful of examples a metric swings by tens of points by chance alone (one example of five is 20 points).
DEFAULT_MIN_GROUP_SIZE = 10

DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95

# How many random subsets :func:`item_scores` checks a metric on before treating it as item-averaged.
_ADDITIVITY_CHECKS = 8
_ADDITIVITY_SUBSET_MAX = 200
_ADDITIVITY_TOLERANCE = 1e-9

#: How far from 1 the probabilities a prediction gives may sum (rounding by a model server) and still be read.
PROBABILITY_TOLERANCE = 0.01


# -------------------------------------------------------------------------------------------------------------- values
def target_key(task: Task) -> Callable[[Mapping[str, Any] | None], Any]:
    """A function from a gold record or a prediction to its target value, the thing a metric compares.

    For a task with one target field it returns that field's value (a label, a span ``{"text", "start"}``); with
    several it returns the tuple of their values in field order. ``None`` (no prediction) maps to ``None``. Extra
    keys of a prediction (``probabilities``, ``confidence``) are ignored, which makes this the key to pass to
    :func:`consistency` for prediction dicts.
    """
    names = tuple(task.field_names(Role.TARGET))
    if not names:
        raise InvalidInput(f"task {task.code} has no target field to score")
    if len(names) == 1:
        (name,) = names

        def single(record: Mapping[str, Any] | None) -> Any:
            return None if record is None else record.get(name)

        return single

    def several(record: Mapping[str, Any] | None) -> Any:
        return None if record is None else tuple(record.get(n) for n in names)

    return several


def _gold_values(task: Task, golds: Sequence[Any], what: str = "golds") -> list[Any]:
    names = task.field_names(Role.TARGET)
    key = target_key(task)
    values = []
    for i, record in enumerate(golds):
        if not isinstance(record, Mapping):
            raise InvalidInput(f"{what}[{i}] must be an object of field values, got {type(record).__name__}")
        missing = [n for n in names if record.get(n) is None]
        if missing:
            raise InvalidInput(f"{what}[{i}] lacks the target field {missing[0]!r} of task {task.code}")
        values.append(key(record))
    return values


def _predicted_values(task: Task, predictions: Sequence[Any], what: str = "predictions") -> list[Any]:
    names = task.field_names(Role.TARGET)
    key = target_key(task)
    values: list[Any] = []
    for i, record in enumerate(predictions):
        if record is None:
            values.append(None)
            continue
        if not isinstance(record, Mapping):
            raise InvalidInput(f"{what}[{i}] must be a prediction object or null, got {type(record).__name__}")
        missing = [n for n in names if n not in record]
        if missing:
            raise InvalidInput(f"{what}[{i}] lacks the target field {missing[0]!r} of task {task.code}")
        values.append(key(record))
    return values


def _check_lengths(golds: Sequence[Any], predictions: Sequence[Any], *, what: str = "golds and predictions") -> int:
    if len(golds) != len(predictions):
        raise InvalidInput(f"{what} differ in length ({len(golds)} vs {len(predictions)})")
    if not golds:
        raise InvalidInput(f"{what} are empty: there is nothing to score")
    return len(golds)


def _resolve_metrics(task: Task, metric_names: Iterable[str] | None, metrics: Mapping[str, Metric]) -> list[Metric]:
    if isinstance(metric_names, str):
        raise InvalidInput("metric_names must be a list of metric names, not one string")
    names = list(task.metrics if metric_names is None else metric_names)
    if not names:
        raise InvalidInput(f"no metric to compute for task {task.code}")
    resolved = []
    for name in names:
        metric = metrics.get(name)
        if metric is None:
            known = ", ".join(sorted(metrics)) or "none"
            raise InvalidInput(f"unknown metric {name!r}: no plugin registered it (registered: {known})")
        resolved.append(metric)
    return resolved


def _finite(metric: Metric, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"metric {metric.name} returned {value!r}, not a number") from None
    if not math.isfinite(number):
        raise InvalidInput(f"metric {metric.name} returned {number}: a metric's value must be a finite number")
    return number


def _compute(metric: Metric, golds: list[Any], preds: list[Any]) -> float:
    """``metric.compute(golds, preds)``; whatever it raises comes back as InvalidInput naming the metric."""
    try:
        value = metric.compute(golds, preds)
    except Exception as exc:  # a plugin's code: any failure is the metric's, and is named so
        raise InvalidInput(
            f"metric {metric.name} could not score these predictions: {type(exc).__name__}: {exc}"
        ) from exc
    return _finite(metric, value)


def _compute_items(metric: Metric, items: list[MetricItem]) -> float:
    """``metric.compute(items)`` for a metric that reads items; failures as in :func:`_compute`."""
    try:
        value = metric.compute(items)
    except Exception as exc:  # a plugin's code: any failure is the metric's, and is named so
        raise InvalidInput(f"metric {metric.name} could not score these items: {type(exc).__name__}: {exc}") from exc
    return _finite(metric, value)


# ------------------------------------------------------------------------------------------------- items and needs
def _read_probabilities(
    labels: tuple[str, ...] | None, prediction: Mapping[str, Any] | None
) -> tuple[dict[str, float] | None, str | None]:
    if prediction is None:
        return None, "no prediction"
    given = prediction.get("probabilities")
    if given is None:
        return None, "no probabilities"
    if labels is None:
        return None, "no single choice target to give probabilities over"
    if not isinstance(given, Mapping) or not given:
        return None, "probabilities that are not a mapping of label to probability"
    if any(label not in labels for label in given):
        return None, "probabilities over labels the task does not have"
    values = list(given.values())
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0 for v in values):
        return None, "probabilities outside [0, 1]"
    total = math.fsum(values)
    if abs(total - 1.0) > PROBABILITY_TOLERANCE:
        return None, f"probabilities that sum to {total:.3g}, not 1"
    return {label: float(given.get(label, 0.0)) / total for label in labels}, None


def read_probabilities(task: Task, prediction: Mapping[str, Any] | None) -> dict[str, float] | None:
    """The prediction's ``probabilities`` as a distribution over the task's labels, in label order (a label left out
    has 0; divided by their sum, which must be within :data:`PROBABILITY_TOLERANCE` of 1), or None when it has none
    that can be read: no prediction, no probabilities, a task whose target is not one choice field, a label the
    task lacks, a value outside [0, 1]."""
    return _read_probabilities(choice_labels(task), prediction)[0]


def _read_confidence(prediction: Mapping[str, Any] | None) -> tuple[float | None, str | None]:
    if prediction is None:
        return None, "no prediction"
    value = prediction.get("confidence")
    if value is None:
        return None, "no confidence"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        return None, "a confidence outside [0, 1]"
    return float(value), None


@dataclass(frozen=True)
class _Items:
    """The items of a data set as metrics that read items see them, and why each lacks what a metric may need."""

    items: list[MetricItem]
    missing: list[dict[str, str]]  # per item: need -> why it is missing

    @classmethod
    def build(
        cls,
        task: Task,
        golds: Sequence[Mapping[str, Any]],
        predictions: Sequence[Mapping[str, Any] | None],
        gold_values: list[Any],
        predicted: list[Any],
    ) -> _Items:
        labels = choice_labels(task)
        items, missing = [], []
        for record, prediction, gold, value in zip(golds, predictions, gold_values, predicted, strict=True):
            probabilities, no_probabilities = _read_probabilities(labels, prediction)
            confidence, no_confidence = _read_confidence(prediction)
            items.append(
                MetricItem(
                    fields=record,
                    gold=gold,
                    prediction=value,
                    probabilities=probabilities,
                    confidence=confidence,
                    output=prediction,
                )
            )
            why = {"prediction": "no prediction"} if prediction is None else {}
            if no_probabilities is not None:
                why["probabilities"] = no_probabilities
            if no_confidence is not None:
                why["confidence"] = no_confidence
            missing.append(why)
        return cls(items, missing)

    def skip_reason(self, metric: Metric, i: int) -> str | None:
        for need in metric.needs:
            if need in self.missing[i]:
                return self.missing[i][need]
        return None


@dataclass(frozen=True)
class _Scored:
    """One metric's view of a data set: the items it scores, and ``value(indices)`` of the metric on them (indices
    into the scored items, repeats allowed)."""

    metric: Metric
    golds: list[Any]  # target values, or MetricItems for a metric that reads items
    preds: list[Any] | None  # predicted target values; None for a metric that reads items
    skipped: Counter[str]

    @property
    def size(self) -> int:
        return len(self.golds)

    def value(self, indices: Sequence[int] | None = None) -> float:
        golds = self.golds if indices is None else list(map(self.golds.__getitem__, indices))
        if self.preds is None:
            return _compute_items(self.metric, golds)
        preds = self.preds if indices is None else list(map(self.preds.__getitem__, indices))
        return _compute(self.metric, golds, preds)


class _DataSet:
    """A data set's gold records and predictions, read once for every metric scored on it."""

    def __init__(self, task: Task, golds: Sequence[Mapping[str, Any]], predictions: Sequence[Any]):
        _check_lengths(golds, predictions)
        self.task, self.golds, self.predictions = task, golds, predictions
        self.gold_values = _gold_values(task, golds)
        self.predicted = _predicted_values(task, predictions)
        self._items: _Items | None = None

    def scored(self, metric: Metric) -> _Scored:
        if metric.takes_task:
            metric = replace(metric, compute=partial(metric.compute, task=self.task))
        if metric.reads != "items":
            return _Scored(metric, self.gold_values, self.predicted, Counter())
        if self._items is None:
            self._items = _Items.build(self.task, self.golds, self.predictions, self.gold_values, self.predicted)
        kept: list[MetricItem] = []
        skipped: Counter[str] = Counter()
        for i, item in enumerate(self._items.items):
            why = self._items.skip_reason(metric, i)
            if why is None:
                kept.append(item)
            else:
                skipped[why] += 1
        return _Scored(metric, kept, None, skipped)


# -------------------------------------------------------------------------------------------------------------- scores
def score(
    task: Task,
    metric_names: Iterable[str] | None,
    golds: Sequence[Mapping[str, Any]],
    predictions: Sequence[Mapping[str, Any] | None],
    *,
    metrics: Mapping[str, Metric],
) -> dict[str, float]:
    """The named metrics of ``predictions`` against ``golds``: ``{metric name: value}``.

    ``metric_names`` are registered metric names (``None``: the task's ``metrics``); ``metrics`` is the registry's
    ``{name: Metric}`` (``plugins.registry.metrics``). Each metric is computed once over the whole list, exactly as
    its ``compute`` defines it: on the target values (see :func:`target_key`), or on the items for a metric that
    reads items, skipping those that lack what it needs. A metric that skips every item has no value and is left
    out (:func:`coverage` says why). A metric that raises, whatever it raises, or returns something other than a
    finite number, raises InvalidInput naming it.
    """
    resolved = _resolve_metrics(task, metric_names, metrics)
    data = _DataSet(task, golds, predictions)
    values = {}
    for metric in resolved:
        scored = data.scored(metric)
        if scored.size:
            values[metric.name] = scored.value()
    return values


def coverage(
    task: Task,
    metric_names: Iterable[str] | None,
    golds: Sequence[Mapping[str, Any]],
    predictions: Sequence[Mapping[str, Any] | None],
    *,
    metrics: Mapping[str, Metric],
) -> dict[str, dict[str, Any]]:
    """Which items each metric that needs something of them (``needs``) scored, and why it skipped the others:
    ``{metric: {"scored": n, "skipped": {reason: count}}}`` (reasons such as ``"no prediction"``, ``"no
    probabilities"``); metrics that score every item are not listed. ``scored`` 0 means the metric has no value on
    these items."""
    data = _DataSet(task, golds, predictions)
    result = {}
    for metric in _resolve_metrics(task, metric_names, metrics):
        if metric.needs:
            scored = data.scored(metric)
            result[metric.name] = {"scored": scored.size, "skipped": dict(sorted(scored.skipped.items()))}
    return result


# ----------------------------------------------------------------------------------------------------------- bootstrap
class Interval(NamedTuple):
    """A confidence interval; a tuple ``(low, high)``."""

    low: float
    high: float


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolating linearly between order statistics (numpy's default)."""
    position = (len(ordered) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    fraction = position - below
    if fraction == 0 or ordered[above] == ordered[below]:
        return ordered[below]
    return ordered[below] + fraction * (ordered[above] - ordered[below])


def bootstrap_interval(
    data: Sequence[float] | Callable[[list[int]], float],
    *,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    size: int | None = None,
) -> Interval:
    """A percentile bootstrap interval (Efron 1979; Efron & Tibshirani 1993, ch. 13).

    Draws ``resamples`` samples of the ``n`` items *with replacement*, computes the statistic on each, and returns
    the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of those values (linear interpolation
    between order statistics). Items are drawn by ``random.Random(seed)``, so a seed gives the same interval.

    ``data`` is either

    - a sequence of per-item scores: the statistic is their mean (right for item-averaged metrics such as
      accuracy, exact match or token F1, and the fast path: about 1 s for 1000 resamples of 10k items; the cost
      is resamples x n draws, so lower ``resamples`` for very large data sets), or
    - a callable ``statistic(indices) -> float`` that recomputes the statistic on the items at ``indices`` (a list
      of ``size`` item indices, repeats included): right for corpus-level metrics such as macro-F1, whose value
      is not a mean over items. Give ``size``, the number of items.

    With constant scores every resample gives the same value and the interval is that point.
    """
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise InvalidInput(f"resamples must be a positive integer, got {resamples!r}")
    if not (isinstance(confidence, (int, float)) and 0.0 < confidence < 1.0):
        raise InvalidInput(f"confidence must be strictly between 0 and 1, got {confidence!r}")
    rng = random.Random(seed)
    if callable(data):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidInput("a bootstrap over a statistic needs size, the number of items (a positive integer)")
        population = range(size)
        values = [float(data(rng.choices(population, k=size))) for _ in range(resamples)]
    else:
        scores = [float(s) for s in data]
        n = len(scores)
        if n == 0:
            raise InvalidInput("per-item scores are empty: there is nothing to resample")
        if size is not None and size != n:
            raise InvalidInput(f"size is {size} but {n} per-item scores were given")
        if any(not math.isfinite(s) for s in scores):
            raise InvalidInput("per-item scores must be finite numbers")
        # choices(scores) draws the same items as choices(range(n)) from the same state: both paths agree.
        values = [math.fsum(rng.choices(scores, k=n)) / n for _ in range(resamples)]
    values.sort()
    alpha = 1.0 - confidence
    return Interval(_quantile(values, alpha / 2), _quantile(values, 1.0 - alpha / 2))


def _additive_scores(value: Callable[[Sequence[int] | None], float], n: int) -> list[float] | None:
    """Per-item scores of a statistic over ``n`` items when it is their mean (see :func:`item_scores`), else None.
    ``value(indices)`` computes it on the items at ``indices`` (None: all of them)."""
    cache: dict[int, float] = {}

    def single(i: int) -> float:
        if i not in cache:
            cache[i] = value([i])
        return cache[i]

    def agrees(indices: Sequence[int]) -> bool:
        whole = value(indices)
        mean = math.fsum(single(i) for i in indices) / len(indices)
        return math.isclose(whole, mean, rel_tol=_ADDITIVITY_TOLERANCE, abs_tol=_ADDITIVITY_TOLERANCE)

    rng = random.Random(0)
    for _ in range(_ADDITIVITY_CHECKS):
        k = rng.randint(min(2, n), min(n, _ADDITIVITY_SUBSET_MAX))
        if not agrees(rng.sample(range(n), k)):
            return None
    scores = [single(i) for i in range(n)]
    whole = value(None)
    if not math.isclose(whole, math.fsum(scores) / n, rel_tol=_ADDITIVITY_TOLERANCE, abs_tol=_ADDITIVITY_TOLERANCE):
        return None
    return scores


def item_scores(metric: Metric, golds: Sequence[Any], preds: Sequence[Any]) -> list[float] | None:
    """Per-item scores of an item-averaged metric over target values, or ``None`` for a corpus-level one.

    A metric is taken to be item-averaged when, on the full list and on a few random subsets (seeded, at most
    200 items each), its value equals the mean of its values on the single items, within 1e-9. Accuracy, exact
    match and token F1 pass; macro-F1 fails as soon as the predictions are imperfect (on one item it is 1 or 0,
    i.e. accuracy). A metric that agrees with its item mean on every subset is one for which resampling per-item
    scores and resampling the whole metric give the same distribution. (A metric that reads items is tested the
    same way on its items, by :func:`metric_interval`.)
    """
    n = _check_lengths(golds, preds, what="golds and preds")
    return _additive_scores(_Scored(metric, list(golds), list(preds), Counter()).value, n)


def _macro_f1_statistic(golds: Sequence[Any], preds: Sequence[Any]) -> Callable[[list[int]], float] | None:
    """The core macro-F1 of a resample from its confusion counts (same value as ``macro_f1``, O(n) per resample
    with a small constant): ``None`` when the values are not hashable."""
    try:
        pair_ids: dict[tuple[Any, Any], int] = {}
        ids = [pair_ids.setdefault((g, p), len(pair_ids)) for g, p in zip(golds, preds, strict=True)]
    except TypeError:
        return None
    pairs = list(pair_ids)

    def statistic(indices: list[int]) -> float:
        counts = Counter(map(ids.__getitem__, indices))
        tp: Counter = Counter()
        fp: Counter = Counter()
        fn: Counter = Counter()
        for pair_id, count in counts.items():
            g, p = pairs[pair_id]
            if g == p:
                tp[g] += count
            else:
                fn[g] += count
                fp[p] += count
        classes = sorted({pairs[i][0] for i in counts} | {pairs[i][1] for i in counts}, key=str)
        total = 0.0
        for c in classes:
            denominator = 2 * tp[c] + fp[c] + fn[c]
            total += (2 * tp[c] / denominator) if denominator else 0.0
        return total / len(classes)

    return statistic


def metric_interval(
    task: Task,
    metric_name: str | None,
    golds: Sequence[Mapping[str, Any]],
    predictions: Sequence[Mapping[str, Any] | None],
    *,
    metrics: Mapping[str, Metric],
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    per_item: bool | None = None,
) -> Interval:
    """A percentile bootstrap interval for one metric (``None``: the task's principal metric) on a data set.

    Item-averaged metrics resample precomputed per-item scores; corpus-level ones recompute the whole metric on
    each resample (the core macro-F1 from confusion counts, any other through its ``compute``, which costs
    ``resamples`` calls). ``per_item`` forces the choice; by default :func:`item_scores` decides. A metric that
    reads items is resampled over the items it scores (those with what it needs); InvalidInput when it scores none.
    The same seed gives the same interval.
    """
    name = task.principal_metric if metric_name is None else metric_name
    (metric,) = _resolve_metrics(task, [name], metrics)
    scored = _DataSet(task, golds, predictions).scored(metric)
    n = scored.size
    if n == 0:
        reasons = ", ".join(f"{why} ({count})" for why, count in sorted(scored.skipped.items()))
        raise InvalidInput(f"metric {metric.name} has no value on these items: it skipped every one: {reasons}")
    scores: list[float] | None = None
    if per_item is None:
        scores = _additive_scores(scored.value, n)
    elif per_item:
        scores = [scored.value([i]) for i in range(n)]
    if scores is not None:
        return bootstrap_interval(scores, seed=seed, resamples=resamples, confidence=confidence)
    statistic: Callable[[Sequence[int]], float] | Callable[[list[int]], float] | None = None
    if metric.statistic is not None and scored.preds is not None:
        statistic = metric.statistic(scored.golds, scored.preds, **({"task": task} if metric.takes_task else {}))
    elif metric.compute is _core_macro_f1 and scored.preds is not None:
        statistic = _macro_f1_statistic(scored.golds, scored.preds)
    return bootstrap_interval(statistic or scored.value, seed=seed, resamples=resamples, confidence=confidence, size=n)


# ------------------------------------------------------------------------------------------------------- perturbations
@dataclass(frozen=True)
class Consistency:
    """Dynabench's robustness or fairness score of a model on one set of perturbations.

    ``score`` is the mean over originals with at least one variant of the share of its variants predicted the same
    as the original; ``originals_with_variants`` and ``variants`` count what it was computed on.
    """

    score: float
    originals_with_variants: int
    variants: int


def consistency(
    originals: Mapping[Hashable, Any],
    variants: Sequence[tuple[Hashable, Any]],
    *,
    key: Callable[[Any], Any] | None = None,
    same: Callable[[Any, Any], bool | float] | None = None,
) -> Consistency:
    """How often the model predicts on perturbed variants what it predicted on their originals.

    ``originals`` maps an original's id to the model's prediction on it; ``variants`` lists
    ``(original id, prediction on the variant)``. For each original with variants, the share of its variants whose
    prediction is the same as the original's; the score is the mean of these shares, so each original counts once
    however many variants it has (originals without variants do not count).

    Two predictions are the same when ``same(original, variant)`` is true; by default when ``key(original) ==
    key(variant)``, and ``key`` defaults to the prediction itself. ``same`` may also return how alike they are, a
    number from 0 to 1 (text a model writes: see :func:`output_agreement`), and the shares are then mean
    agreements. For prediction dicts pass
    ``key=target_key(task)``, which compares the task's target fields and ignores probabilities and confidence: a
    label is the same label, a span ``{"text", "start"}`` is the same span only when both its text and its offset
    are equal (the same words elsewhere in the passage are another answer). A task may pass a looser ``key``, say
    the normalised span text.
    """
    if key is not None and same is not None:
        raise InvalidInput("give key or same, not both")
    if not variants:
        raise InvalidInput("there are no perturbed variants to compare with their originals")
    if same is None:
        keyed = key or (lambda prediction: prediction)

        def same(a: Any, b: Any) -> bool:
            return keyed(a) == keyed(b)

    agreeing: dict[Hashable, float] = defaultdict(float)
    counts: dict[Hashable, int] = defaultdict(int)
    for i, item in enumerate(variants):
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise InvalidInput(f"variants[{i}] must be a pair (original id, prediction)")
        original_id, prediction = item
        try:
            original = originals[original_id]
        except KeyError:
            raise InvalidInput(
                f"variants[{i}] is a variant of original {original_id!r}, which has no prediction in originals"
            ) from None
        except TypeError:
            raise InvalidInput(f"variants[{i}] has an original id that cannot be a key: {original_id!r}") from None
        counts[original_id] += 1
        agreeing[original_id] += float(same(original, prediction))
    shares = [agreeing[o] / counts[o] for o in counts]
    return Consistency(
        score=math.fsum(shares) / len(shares), originals_with_variants=len(counts), variants=len(variants)
    )


def output_agreement(task: Task) -> Callable[[Any, Any], float]:
    """How alike two of a model's predictions are, from 0 to 1, for robustness and fairness: for a task whose one
    target is text the model writes (a :class:`~dynaforge.tasks.fields.TextField`), the chrF of the output on the
    perturbed copy against the output on the original, over 100 (an output that moves a little loses a little);
    for any other task 1 when the target values are equal (:func:`target_key`) and 0 otherwise. An unusable
    prediction (None) agrees with nothing."""
    targets = task.fields_with(Role.TARGET)
    if len(targets) == 1 and isinstance(targets[0], TextField):
        name = targets[0].name

        def alike(a: Any, b: Any) -> float:
            if a is None or b is None or not isinstance(a.get(name), str) or not isinstance(b.get(name), str):
                return 0.0
            if a[name] == b[name]:
                return 1.0
            from dynaforge.defaults.text_metrics import sentence_score

            return sentence_score("chrf", a[name], b[name]) / 100.0 if a[name].strip() else 0.0

        return alike
    key = target_key(task)

    def equal(a: Any, b: Any) -> float:
        return float(a is not None and b is not None and key(a) == key(b))

    return equal


def generation_figures(outputs: Sequence[Any], seconds: float) -> dict[str, Any] | None:
    """What a model that writes did over a set (from the ``generation`` its outputs carry, the unusable ones
    included: they took their time too): ``tokens`` written,
    ``tokens_per_second`` over the set's prediction time, and the median and 90th percentile time to first token in
    milliseconds; None when no output says."""
    tokens, ttfts = 0, []
    for output in outputs:
        g = output.get("generation") if isinstance(output, Mapping) else None
        if not isinstance(g, Mapping):
            continue
        if isinstance(g.get("tokens"), int) and not isinstance(g.get("tokens"), bool):
            tokens += g["tokens"]
        if isinstance(g.get("ttft_ms"), (int, float)) and not isinstance(g.get("ttft_ms"), bool):
            ttfts.append(float(g["ttft_ms"]))
    if not ttfts and not tokens:
        return None
    ttfts.sort()
    return {
        "tokens": tokens,
        "tokens_per_second": tokens / seconds if seconds > 0 else None,
        "ttft_ms_median": _quantile(ttfts, 0.5) if ttfts else None,
        "ttft_ms_p90": _quantile(ttfts, 0.9) if ttfts else None,
    }


def perturbed_score(
    task: Task,
    metric_names: Iterable[str] | None,
    golds: Mapping[Hashable, Mapping[str, Any]],
    variants: Sequence[tuple[Hashable, Mapping[str, Any] | None]],
    *,
    metrics: Mapping[str, Metric],
) -> dict[str, float]:
    """The task's metrics on perturbed variants, each scored against its original's gold.

    ``golds`` maps an original's id to its gold record; ``variants`` lists ``(original id, prediction on the
    variant)``. Perturbations leave target fields alone, so the original's gold is the variant's gold. Every
    variant is one item of the perturbed data set (an original with three variants counts three times, as in the
    accuracy of a perturbed copy of the data set), unlike :func:`consistency`, which averages per original.
    """
    if not variants:
        raise InvalidInput("there are no perturbed variants to score")
    gold_records = []
    predictions = []
    for i, item in enumerate(variants):
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise InvalidInput(f"variants[{i}] must be a pair (original id, prediction)")
        original_id, prediction = item
        try:
            gold_records.append(golds[original_id])
        except (KeyError, TypeError):
            raise InvalidInput(f"variants[{i}] is a variant of original {original_id!r}, which has no gold") from None
        predictions.append(prediction)
    return score(task, metric_names, gold_records, predictions, metrics=metrics)


# ----------------------------------------------------------------------------------------------------- fairness slices
def slice_metrics(
    task: Task,
    slices: Iterable[Slice],
    golds: Sequence[Mapping[str, Any]],
    predictions: Sequence[Mapping[str, Any] | None],
    examples: Sequence[Mapping[str, Any]],
    *,
    metrics: Mapping[str, Metric],
    metric_names: Iterable[str] | None = None,
) -> dict[str, dict[str, dict[str, float | int]]]:
    """Metrics per group of each fairness slice: ``{slice: {group: {metric: value, ..., "n": examples}}}``.

    ``examples`` are the items' full field values (context and example fields), given to each slice's
    ``group(fields)``; an item in no group (``None``) counts for no group. ``golds``, ``predictions`` and
    ``examples`` are parallel lists. The metrics are ``metric_names`` (``None``: the task's), computed on each
    group's items alone; a metric with no value on a group's items (one that reads items and skipped them all) is
    left out of that group. Groups are listed in name order; a slice that puts no item in a group maps to ``{}``.
    A slice whose ``group`` raises, whatever it raises, raises InvalidInput naming it.
    """
    slices = list(slices)
    names = [metric.name for metric in _resolve_metrics(task, metric_names, metrics)]
    n = _check_lengths(golds, predictions)
    if len(examples) != n:
        raise InvalidInput(f"examples and golds differ in length ({len(examples)} vs {n})")
    result: dict[str, dict[str, dict[str, float | int]]] = {}
    for slice_ in slices:
        if not isinstance(slice_, Slice):
            raise InvalidInput(f"slices must be Slice objects, got {type(slice_).__name__}")
        if slice_.task_code is not None and slice_.task_code != task.code:
            raise InvalidInput(f"slice {slice_.name} belongs to task {slice_.task_code}, not {task.code}")
        members: dict[str, list[int]] = defaultdict(list)
        for i, fields in enumerate(examples):
            if not isinstance(fields, Mapping):
                raise InvalidInput(f"examples[{i}] must be an object of field values, got {type(fields).__name__}")
            try:
                group = slice_.group(dict(fields))
            except Exception as exc:  # a plugin's code: any failure is the slice's, and is named so
                raise InvalidInput(
                    f"slice {slice_.name} could not group examples[{i}]: {type(exc).__name__}: {exc}"
                ) from exc
            if group is not None:
                members[str(group)].append(i)
        groups: dict[str, dict[str, float | int]] = {}
        for group in sorted(members):
            indices = members[group]
            values: dict[str, float | int] = dict(
                score(task, names, [golds[i] for i in indices], [predictions[i] for i in indices], metrics=metrics)
            )
            values["n"] = len(indices)
            groups[group] = values
        result[slice_.name] = groups
    return result


def slice_gaps(
    overall: Mapping[str, float],
    per_slice: Mapping[str, Mapping[str, Mapping[str, float | int]]],
    *,
    metrics: Mapping[str, Metric] | None = None,
    min_group_size: int = DEFAULT_MIN_GROUP_SIZE,
) -> dict[str, dict[str, dict[str, Any]]]:
    """How far each slice's worst group falls below the whole data set, per metric.

    ``overall`` is :func:`score` on the whole data set, ``per_slice`` is :func:`slice_metrics`. Returns
    ``{slice: {metric: {"gap", "worst_group", "worst_value", "overall", "groups_compared"}}}`` where ``gap`` is
    ``overall - worst`` (``worst - overall`` for a metric whose ``higher_is_better`` is false in ``metrics``), so a
    positive gap always means the worst group is served worse. The worst group of each metric is chosen on its own
    (ties: the first group by name). Only groups of at least ``min_group_size`` examples
    (:data:`DEFAULT_MIN_GROUP_SIZE`, 10) are compared; they stay in ``per_slice`` with their ``n``. When no group
    is large enough, ``gap``, ``worst_group`` and ``worst_value`` are ``None``; a group with no value for a metric
    (one that reads items and skipped all of the group's) is not compared for it, and ``groups_compared`` counts, per
    metric, the groups that were.
    """
    if isinstance(min_group_size, bool) or not isinstance(min_group_size, int) or min_group_size < 1:
        raise InvalidInput(f"min_group_size must be a positive integer, got {min_group_size!r}")
    if not overall:
        raise InvalidInput("overall metrics are empty: there is nothing to compare the groups with")
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for slice_name, groups in per_slice.items():
        eligible = [(g, values) for g, values in sorted(groups.items()) if int(values.get("n", 0)) >= min_group_size]
        gaps: dict[str, dict[str, Any]] = {}
        for metric_name, overall_value in overall.items():
            metric = (metrics or {}).get(metric_name)
            higher_is_better = True if metric is None else metric.higher_is_better
            worst_group, worst_value = None, None
            compared = [(group, values) for group, values in eligible if metric_name in values]
            for group, values in compared:
                value = float(values[metric_name])
                if worst_value is None or (value < worst_value if higher_is_better else value > worst_value):
                    worst_group, worst_value = group, value
            gap = None
            if worst_value is not None:
                gap = overall_value - worst_value if higher_is_better else worst_value - overall_value
            gaps[metric_name] = {
                "gap": gap,
                "worst_group": worst_group,
                "worst_value": worst_value,
                "overall": float(overall_value),
                "groups_compared": len(compared),
            }
        result[slice_name] = gaps
    return result


# ----------------------------------------------------------------------------------------------------------- fooling


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default); ``(0, 1)`` when ``n`` is 0."""
    if n <= 0:
        return (0.0, 1.0)
    phat = successes / n
    denominator = 1 + z * z / n
    centre = (phat + z * z / (2 * n)) / denominator
    half = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def fooled_flags(
    task: Task, golds: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any] | None]
) -> list[bool]:
    """Per item, whether the model is fooled there by the task's own rule (``Task.is_fooled``): an unusable output
    (None), or one the rule cannot judge, counts as fooled. What :func:`fooling_rate` counts, item by item."""
    flags = []
    for gold, prediction in zip(golds, predictions, strict=True):
        if prediction is None:
            flags.append(True)
            continue
        context, example = task.split_fields(dict(gold))
        try:
            flags.append(bool(task.is_fooled(example, dict(prediction), context)))
        except Exception:  # noqa: BLE001 - a plugin rule that cannot judge an output counts it as fooling
            flags.append(True)
    return flags


def fooling_rate(
    task: Task, golds: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any] | None]
) -> dict[str, Any]:
    """The share of items on which the model is fooled by the task's own rule (``Task.is_fooled``, what decides
    ``fooled`` when an annotator writes an example), with a Wilson interval: on a round's accepted examples, the
    validated model error rate (vMER) that round would have had with this model in the loop. An unusable output,
    or one the rule cannot judge, counts as fooled."""
    fooled = sum(fooled_flags(task, golds, predictions))
    n = len(golds)
    low, high = wilson_interval(fooled, n)
    return {"rate": fooled / n if n else None, "fooled": fooled, "n": n, "interval": [low, high]}


# ------------------------------------------------------------------------------------------------------ paired tests
@dataclass(frozen=True)
class McNemar:
    """McNemar's exact test of two models on the same items: whether their error rates differ.

    ``both``, ``only_first``, ``only_second`` and ``neither`` count the items each model gets right; the test reads
    only the discordant pairs (``only_first``, ``only_second``). ``statistic`` is the smaller of the two (what
    ``statsmodels.stats.contingency_tables.mcnemar(exact=True)`` reports) and ``p_value`` the two-sided exact
    binomial p-value of that split under "either is as likely to be the one right" (1.0 without a discordant pair).
    """

    both: int
    only_first: int
    only_second: int
    neither: int
    statistic: int
    p_value: float

    @property
    def n(self) -> int:
        return self.both + self.only_first + self.only_second + self.neither


def mcnemar(first_right: Sequence[bool], second_right: Sequence[bool]) -> McNemar:
    """McNemar's exact test on two models' per-item rightness (same items, same order)."""
    if len(first_right) != len(second_right):
        raise InvalidInput(f"paired test: {len(first_right)} items against {len(second_right)}; pair the same items")
    counts = Counter((bool(a), bool(b)) for a, b in zip(first_right, second_right, strict=True))
    b, c = counts[(True, False)], counts[(False, True)]
    discordant, low = b + c, min(b, c)
    # two-sided exact binomial test at p = 1/2: twice the lower tail, in exact integers (no float underflow)
    tail = sum(math.comb(discordant, k) for k in range(low + 1))
    p_value = 1.0 if discordant == 0 else min(1.0, 2 * tail / 2**discordant)
    return McNemar(counts[(True, True)], b, c, counts[(False, False)], low, p_value)


@dataclass(frozen=True)
class PairedDifference:
    """One metric of two models on the same items: each value, the difference (first minus second), its paired
    bootstrap interval, and the bootstrap's two-sided p-value for "no difference" (twice the share of resamples on
    the far side of 0, at most 1; resolution ``1 / resamples``)."""

    metric: str
    first: float
    second: float
    difference: float
    interval: Interval
    p_value: float
    resamples: int


def paired_bootstrap(
    task: Task,
    metric_name: str | None,
    golds: Sequence[Mapping[str, Any]],
    first: Sequence[Mapping[str, Any] | None],
    second: Sequence[Mapping[str, Any] | None],
    *,
    metrics: Mapping[str, Metric],
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> PairedDifference:
    """A paired bootstrap of one metric (``None``: the principal one) between two models' predictions of the same
    items: each resample draws items with replacement and scores both models on the same draw, so what the items
    share cancels out (Koehn 2004; Berg-Kirkpatrick et al. 2012). Right for any metric, corpus-level ones included.
    The same seed gives the same figures. InvalidInput when the metric skips items for either model (the two would
    not be scored on the same items)."""
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise InvalidInput(f"resamples must be a positive integer, got {resamples!r}")
    name = task.principal_metric if metric_name is None else metric_name
    (metric,) = _resolve_metrics(task, [name], metrics)
    scored = [_DataSet(task, golds, predictions).scored(metric) for predictions in (first, second)]
    n = len(golds)
    if n == 0 or any(s.size != n for s in scored):
        raise InvalidInput(
            f"metric {metric.name} does not score every item for both models; a paired test needs the same items"
        )
    a, b = scored
    observed = (a.value(), b.value())
    rng = random.Random(seed)
    population = range(n)
    differences = []
    for _ in range(resamples):
        draw = rng.choices(population, k=n)
        differences.append(a.value(draw) - b.value(draw))
    differences.sort()
    alpha = (1 - confidence) / 2
    interval = Interval(_quantile(differences, alpha), _quantile(differences, 1 - alpha))
    below = sum(d <= 0 for d in differences) / resamples
    above = sum(d >= 0 for d in differences) / resamples
    return PairedDifference(
        metric=metric.name,
        first=observed[0],
        second=observed[1],
        difference=observed[0] - observed[1],
        interval=interval,
        p_value=min(1.0, 2 * min(below, above)),
        resamples=resamples,
    )
