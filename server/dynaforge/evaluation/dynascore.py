"""The Dynascore: one figure that ranks the models of a leaderboard over several metrics (Dynaboard, Ma et al. 2021).

For the models on the board, with data-set weights ``w_d`` (normalised to sum 1) and metric weights ``w_m``:

1. ``x_im = sum_d w_d * s_idm``: model i's metric m, averaged over the scoring data sets with their weights;
2. ``x'_im = u_m * x_im + o_m``, oriented so that larger is better: ``direction="higher"`` has u = 1, o = 0;
   ``"lower"`` (error-like: error rate, calibration error, latency) u = -1, o = 0; ``"memory"`` (in GB) u = -1 and
   o = the task's memory budget in GB (``memory_budget_gb``, the memory of the machine models are evaluated on),
   so that x' is the memory a model leaves free;
3. the models are sorted by x' on the principal metric p; over the consecutive pairs k whose step
   ``Δ_k x'_p`` exceeds ``1e-4 * max_i |x'_ip|``, ``AMRS_m = mean_k |Δ_k x'_m| / Δ_k x'_p`` (the average marginal
   rate of substitution: how much of metric m one unit of p is worth on this board; ``AMRS_p = 1``);
4. ``Dynascore_i = sum_m (w_m / sum w) * x'_im / AMRS_m``.

Metric weights default to the Dynaboard defaults, 4 on the principal metric and 1 on every other one
(:data:`DEFAULT_PRINCIPAL_WEIGHT`, :data:`DEFAULT_WEIGHT`); a :class:`MetricSpec` may carry a task's own default,
and ``metric_weights`` (a user's choice on the board) overrides both. The memory offset o shifts every model's
Dynascore by the same amount; it changes neither AMRS nor the ranking.

Decisions on the edge cases (each has a test in ``tests/test_dynascore.py``):

* **Scoring data sets.** ``dataset_weights`` names them; without it, every data set any model has a score on counts,
  with equal weights. Scores on other data sets, or on data sets weighted 0, are not read. A data set no model has
  been evaluated on yet may be named: every model then lacks every metric there, which is what the board is.
* **Gaps.** A value is missing when the data set or the metric is absent from a model's scores, or is None. A metric
  missing on *any* scoring data set is missing for the model: averaging over the data sets it happens to have would
  compare models on different test sets (and reward skipping the hard one). Its x and x' are None and the metric is
  listed in the row's ``missing``; its other metrics still show.
* **Who gets a Dynascore.** The *scored* metrics are those with a weight above 0, plus the principal metric (the
  yardstick of AMRS, needed even at weight 0). A model with every scored metric is *complete*: it takes part in AMRS
  and gets a Dynascore and a rank. A model lacking a scored metric gets ``dynascore=None`` and ``rank=None`` and is
  listed after the complete ones, with its gaps marked; it never moves the AMRS of the others. A gap in a metric
  weighted 0 is listed in ``missing`` but costs nothing.
* **Weights.** Weights must be finite numbers ``>= 0`` (bools are refused). 0 is allowed (the metric or data set is
  shown but does not count); all zero is refused, as is a weight naming a metric the board does not have. Each
  problem is an :class:`~dynaforge.errors.InvalidInput` naming the weight (``metric_weights.memory``,
  ``dataset_weights.round-2``), all problems at once.
* **Scores** must be finite numbers or None; NaN or infinity is refused (``models[3].scores.test.accuracy``), since it
  would silently poison every other model's AMRS. Model ids must be unique and non-empty.
* **The Δp threshold** uses ``max |x'_p|``, not ``max x'_p``: when the principal metric is error-like its oriented
  values are negative, and a negative threshold would let a zero step in, dividing by zero. With the threshold ``>= 0``
  and the comparison strict, every pair used has ``Δp > 0``.
* **Ties on the principal metric** are ordered by model id, so the consecutive pairs (hence AMRS) do not depend on the
  order the models come in; exact ties have ``Δp = 0`` and never form a pair anyway.
* **No pair to measure** (fewer than two complete models, or all of them within the threshold of each other on p):
  ``AMRS_m = 1`` for every metric and ``amrs_fallback`` is True. Without a pair there is no exchange rate to
  measure; 1 keeps every figure in its own unit, so the Dynascore is the weighted sum of the oriented figures, which
  still equals the principal metric's ranking for a lone model and needs no made-up scale. The board reports the
  fallback so that a UI can say the figures are not yet comparable across units.
* **AMRS_m = 0** (metric m never changes across the pairs used, e.g. every model reports the same memory): the metric
  cannot tell the models apart at any rate of exchange, so its term is 0 for every model instead of a division by
  zero (any constant term would shift every Dynascore alike and change no ranking). A change of at most
  ``1e-9 * max_i |x'_im|`` between two models counts as no change: it is rounding noise of the weighted mean (the
  mean of 0.05 and 0.25 is 0.15, that of 0.1 and 0.2 is 0.15000000000000002), far below any measured difference,
  and counting it would give an AMRS near 1e-16 and a term near 1e15 that decides the ranking on noise alone.
* **Order.** Rows come sorted by Dynascore, highest first (ties: by model id, sharing the rank, 1, 2, 2, 4); then
  the rows with gaps, by the principal metric's x' (highest first, missing last), then model id.

Cost: one pass over the scores (O(M·D·K) for M models, D scoring data sets, K metrics), one sort of the complete
models (O(M log M)), one pass over the consecutive pairs (O(M·K)), one sort of the rows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeGuard

from dynaforge.errors import FieldError, InvalidInput

Direction = Literal["higher", "lower", "memory"]
DIRECTIONS: tuple[str, ...] = ("higher", "lower", "memory")
DEFAULT_PRINCIPAL_WEIGHT = 4.0
DEFAULT_WEIGHT = 1.0
DEFAULT_MEMORY_BUDGET_GB = 16.0
DELTA_CUTOFF = 1e-4  # a pair counts when its step on the principal metric exceeds this share of max |x'_p|
NOISE_CUTOFF = 1e-9  # a change in metric m up to this share of max |x'_m| is rounding noise, counted as 0


@dataclass(frozen=True)
class MetricSpec:
    """A metric of the board: its name, which way is better, and its default weight.

    ``direction``: ``"higher"`` (accuracy, throughput, robustness, fairness), ``"lower"`` (error-like: oriented as
    ``-x``) or ``"memory"`` (GB; oriented as ``budget - x``). ``default_weight`` None means the Dynaboard default:
    :data:`DEFAULT_PRINCIPAL_WEIGHT` when the metric is the board's principal metric, :data:`DEFAULT_WEIGHT` otherwise.
    """

    name: str
    direction: Direction = "higher"
    default_weight: float | None = None


@dataclass(frozen=True)
class ModelScores:
    """One model's scores: ``scores[dataset][metric]`` is a number, or None (or absent) when not measured."""

    model_id: str
    scores: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)


@dataclass(frozen=True)
class DynascoreRow:
    """One model on the board.

    ``x``: each metric averaged over the scoring data sets (None: missing); ``oriented``: x' = u·x + o, larger is
    better (None: missing); ``dynascore`` and ``rank`` (1 = best) are None when the model lacks a scored metric;
    ``missing`` lists the metrics it lacks, in the board's metric order.
    """

    model_id: str
    x: dict[str, float | None]
    oriented: dict[str, float | None]
    dynascore: float | None
    missing: list[str]
    rank: int | None


@dataclass(frozen=True)
class DynascoreBoard:
    """The rows and every figure they were computed with.

    ``amrs`` has the scored metrics only (weight above 0, and the principal one); ``metric_weights`` and
    ``dataset_weights`` are the weights used, normalised to sum 1 (data sets weighted 0 are left out);
    ``pairs`` is how many consecutive pairs passed the Δp threshold; ``amrs_fallback`` is True when there was none
    and every AMRS was set to 1.
    """

    rows: list[DynascoreRow]
    amrs: dict[str, float]
    metric_weights: dict[str, float]
    dataset_weights: dict[str, float]
    pairs: int
    amrs_fallback: bool
    #: every metric's exchange rate, the unscored ones too: what its AMRS is over the same pairs of complete models
    #: (those pairs where both models have a value on it); None for a metric no complete model has a value on.
    #: A client that raises an unscored metric's weight reads its rate here (the server's answer may still differ
    #: when that weight takes models without the metric off the board).
    rates: dict[str, float | None] = field(default_factory=dict)


def compute(
    models: Iterable[ModelScores],
    metrics: Iterable[MetricSpec],
    *,
    principal: str,
    metric_weights: Mapping[str, float] | None = None,
    dataset_weights: Mapping[str, float] | None = None,
    memory_budget_gb: float = DEFAULT_MEMORY_BUDGET_GB,
) -> list[DynascoreRow]:
    """The leaderboard's rows, best Dynascore first, then the models with gaps (see the module docstring).

    Raises :class:`~dynaforge.errors.InvalidInput` naming every bad weight, metric, model id or score.
    """
    return compute_board(
        models,
        metrics,
        principal=principal,
        metric_weights=metric_weights,
        dataset_weights=dataset_weights,
        memory_budget_gb=memory_budget_gb,
    ).rows


def compute_board(
    models: Iterable[ModelScores],
    metrics: Iterable[MetricSpec],
    *,
    principal: str,
    metric_weights: Mapping[str, float] | None = None,
    dataset_weights: Mapping[str, float] | None = None,
    memory_budget_gb: float = DEFAULT_MEMORY_BUDGET_GB,
) -> DynascoreBoard:
    """Like :func:`compute`, with the AMRS, the normalised weights and the number of pairs used."""
    models = list(models)
    metrics = list(metrics)
    errors: list[FieldError] = []
    names = _check_metrics(metrics, principal, errors)
    weights = _metric_weights(metrics, principal, metric_weights, errors)
    if not _is_number(memory_budget_gb) or not memory_budget_gb > 0:
        errors.append(
            FieldError(
                "memory_budget_gb", "not_positive", f"must be a finite number of GB above 0, not {memory_budget_gb!r}"
            )
        )
    _check_model_ids(models, errors)
    datasets = _dataset_weights(models, dataset_weights, errors)
    if errors:
        raise InvalidInput.from_errors(errors)

    # 1-2. Aggregate over the scoring data sets and orient, one pass over the scores.
    scale = [(-1.0 if m.direction != "higher" else 1.0) for m in metrics]
    offset = [(float(memory_budget_gb) if m.direction == "memory" else 0.0) for m in metrics]
    k_count = len(names)
    scored = [i for i, name in enumerate(names) if weights[name] > 0 or name == principal]
    p = names.index(principal)
    aggregated: list[list[float | None]] = []
    for index, model in enumerate(models):
        sums = [0.0] * k_count
        present = [bool(datasets)] * k_count  # no scoring data set: nothing is measured
        for dataset, w in datasets:
            values = model.scores.get(dataset)
            if values is None:
                present = [False] * k_count
                continue
            for k, name in enumerate(names):
                v = values.get(name)
                if v is None:
                    present[k] = False
                elif (type(v) is float and v - v == 0.0) or _is_number(v):  # fast path: a finite plain float
                    sums[k] += w * v
                else:
                    errors.append(
                        FieldError(
                            f"models[{index}].scores.{dataset}.{name}",
                            "not_finite",
                            f"must be a finite number or null, not {v!r}",
                        )
                    )
        aggregated.append([s if ok else None for s, ok in zip(sums, present, strict=True)])
    if errors:
        raise InvalidInput.from_errors(errors)
    oriented = [[None if v is None else scale[k] * v + offset[k] for k, v in enumerate(row)] for row in aggregated]

    # 3. AMRS over the complete models, sorted by the principal metric (ties by model id).
    full: dict[int, list[float]] = {  # a complete model's scored metrics (its unscored ones do not count)
        i: [0.0 if v is None else v for v in row]
        for i, row in enumerate(oriented)
        if all(row[k] is not None for k in scored)
    }
    complete = sorted(full, key=lambda i: (full[i][p], models[i].model_id))
    threshold = DELTA_CUTOFF * max((abs(full[i][p]) for i in complete), default=0.0)
    # Every metric is rated over the same pairs, the unscored ones too (where both models have a value on it), so
    # that a client raising a weight from 0 knows the rate; a complete model has every scored metric.
    having = [[i for i in complete if oriented[i][k] is not None] for k in range(k_count)]
    noise = [NOISE_CUTOFF * max((abs(oriented[i][k] or 0.0) for i in having[k]), default=0.0) for k in range(k_count)]
    ratio_sums = [0.0] * k_count
    pairs = 0
    for a, b in itertools.pairwise(complete):
        low, high = oriented[a], oriented[b]
        step = full[b][p] - full[a][p]
        if step > threshold:
            pairs += 1
            for k, (before, after) in enumerate(zip(low, high, strict=True)):
                if before is not None and after is not None:
                    change = abs(after - before)
                    if change > noise[k]:  # below it: rounding noise of the weighted mean, counted as no change
                        ratio_sums[k] += change / step
    amrs = {names[k]: (ratio_sums[k] / pairs if pairs else 1.0) for k in scored}
    rates: dict[str, float | None] = {
        name: (ratio_sums[k] / pairs if pairs else 1.0) if k in scored or having[k] else None
        for k, name in enumerate(names)
    }

    # 4. The Dynascore of each complete model.
    total_weight = sum(weights.values())
    terms = [(k, weights[names[k]] / total_weight, amrs[names[k]]) for k in scored if weights[names[k]] > 0]
    scores: dict[int, float] = {}
    for i in complete:
        row = full[i]
        scores[i] = sum(share * row[k] / rate for k, share, rate in terms if rate != 0.0)

    ranked = sorted(complete, key=lambda i: (-scores[i], models[i].model_id))
    gapped = [i for i, row in enumerate(oriented) if i not in scores]
    gapped.sort(key=lambda i: (oriented[i][p] is None, -(oriented[i][p] or 0.0), models[i].model_id))
    rows: list[DynascoreRow] = []
    previous: tuple[float, int] | None = None
    for position, i in enumerate(ranked, 1):
        rank = previous[1] if previous is not None and previous[0] == scores[i] else position
        previous = (scores[i], rank)
        rows.append(_row(models[i], names, aggregated[i], oriented[i], scores[i], rank))
    for i in gapped:
        rows.append(_row(models[i], names, aggregated[i], oriented[i], None, None))
    return DynascoreBoard(
        rows=rows,
        amrs=amrs,
        metric_weights={name: w / total_weight for name, w in weights.items()},
        dataset_weights=dict(datasets),
        pairs=pairs,
        amrs_fallback=pairs == 0,
        rates=rates,
    )


# --------------------------------------------------------------------------- helpers


def _row(
    model: ModelScores,
    names: list[str],
    x: list[float | None],
    oriented: list[float | None],
    score: float | None,
    rank: int | None,
) -> DynascoreRow:
    return DynascoreRow(
        model_id=model.model_id,
        x=dict(zip(names, x, strict=True)),
        oriented=dict(zip(names, oriented, strict=True)),
        dynascore=score,
        missing=[name for name, v in zip(names, x, strict=True) if v is None],
        rank=rank,
    )


def _is_number(value: object) -> TypeGuard[float]:
    """A finite int or float (bools are not numbers here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_metrics(metrics: list[MetricSpec], principal: str, errors: list[FieldError]) -> list[str]:
    names = [m.name for m in metrics]
    if not metrics:
        errors.append(FieldError("metrics", "empty", "the board needs at least one metric"))
    seen: set[str] = set()
    for index, metric in enumerate(metrics):
        if not isinstance(metric.name, str) or not metric.name:
            errors.append(FieldError(f"metrics[{index}].name", "empty", "a metric needs a non-empty name"))
        elif metric.name in seen:
            errors.append(FieldError(f"metrics[{index}].name", "duplicate", f"metric {metric.name!r} appears twice"))
        seen.add(metric.name)
        if metric.direction not in DIRECTIONS:
            errors.append(
                FieldError(
                    f"metrics[{index}].direction",
                    "unknown_direction",
                    f"must be one of {', '.join(DIRECTIONS)}, not {metric.direction!r}",
                )
            )
    if metrics and principal not in seen:
        errors.append(
            FieldError(
                "principal",
                "unknown_metric",
                f"{principal!r} is not one of the board's metrics ({', '.join(map(str, names))})",
            )
        )
    return names


def _check_weight(name: str, value: object, errors: list[FieldError]) -> bool:
    if not _is_number(value):
        errors.append(FieldError(name, "not_a_number", f"must be a finite number, not {value!r}"))
        return False
    if value < 0:
        errors.append(FieldError(name, "negative", f"must be 0 or more, not {value!r}"))
        return False
    return True


def _metric_weights(
    metrics: list[MetricSpec], principal: str, overrides: Mapping[str, float] | None, errors: list[FieldError]
) -> dict[str, float]:
    """Each metric's weight: the override, else the spec's default, else 4 for the principal metric and 1 otherwise."""
    before = len(errors)
    weights: dict[str, float] = {}
    for index, metric in enumerate(metrics):
        if metric.default_weight is None:
            weights[metric.name] = DEFAULT_PRINCIPAL_WEIGHT if metric.name == principal else DEFAULT_WEIGHT
        elif _check_weight(f"metrics[{index}].default_weight", metric.default_weight, errors):
            weights[metric.name] = float(metric.default_weight)
    for name, value in (overrides or {}).items():
        if name not in weights and not any(m.name == name for m in metrics):
            errors.append(FieldError(f"metric_weights.{name}", "unknown_metric", f"the board has no metric {name!r}"))
        elif _check_weight(f"metric_weights.{name}", value, errors):
            weights[name] = float(value)
    if len(errors) == before and metrics and not any(w > 0 for w in weights.values()):
        errors.append(FieldError("metric_weights", "all_zero", "at least one metric needs a weight above 0"))
    return weights


def _check_model_ids(models: list[ModelScores], errors: list[FieldError]) -> None:
    seen: set[str] = set()
    for index, model in enumerate(models):
        if not isinstance(model.model_id, str) or not model.model_id:
            errors.append(FieldError(f"models[{index}].model_id", "empty", "a model needs a non-empty id"))
        elif model.model_id in seen:
            errors.append(
                FieldError(f"models[{index}].model_id", "duplicate", f"model {model.model_id!r} appears twice")
            )
        seen.add(model.model_id)


def _dataset_weights(
    models: list[ModelScores], given: Mapping[str, float] | None, errors: list[FieldError]
) -> list[tuple[str, float]]:
    """The scoring data sets, sorted by name, with their weights normalised to sum 1 (those weighted 0 left out)."""
    if given is None:
        names = sorted({dataset for model in models for dataset in model.scores})
        return [(name, 1.0 / len(names)) for name in names]
    before = len(errors)
    if not given:
        errors.append(FieldError("dataset_weights", "empty", "name at least one scoring data set, or pass None"))
    raw = {name: float(w) for name, w in given.items() if _check_weight(f"dataset_weights.{name}", w, errors)}
    if len(errors) > before:
        return []
    total = sum(raw.values())
    if total <= 0:
        errors.append(FieldError("dataset_weights", "all_zero", "at least one data set needs a weight above 0"))
        return []
    return [(name, raw[name] / total) for name in sorted(raw) if raw[name] > 0]
