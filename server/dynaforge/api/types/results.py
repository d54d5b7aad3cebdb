"""An evaluation's results as typed objects: metrics with their direction and interval, fairness slices with their
gaps, perturbed copies with their consistency. Read from what the evaluation runner stores (``Evaluation.metrics``
and ``Evaluation.details``; see :mod:`dynaforge.services.evaluation_runner`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import strawberry

from dynaforge.api.enums import MetricDirection, PerturbationGold, PerturbationKind
from dynaforge.db.models import Evaluation as EvaluationRow

#: The figures the runner adds beside the task's metrics; both are consistencies, higher is better.
PERTURBATION_FIGURES = ("robustness", "fairness")


@strawberry.type(description="A 95% bootstrap confidence interval.")
class Interval:
    low: float = strawberry.field(description="The lower bound, in the metric's own unit.")
    high: float = strawberry.field(description="The upper bound, in the metric's own unit.")


@strawberry.type(description="One metric's value.")
class MetricValue:
    name: str = strawberry.field(description="The metric's name, as in Task.metrics.")
    value: float = strawberry.field(description="Its value on the items in question.")


@strawberry.type(
    description="One metric of an evaluation: its value, which way is better and, where computed, its interval."
)
class EvaluationMetric:
    name: str = strawberry.field(description="The metric's name: one of the task's metrics, or robustness or fairness.")
    value: float = strawberry.field(
        description="Its value on the whole data set; robustness and fairness are shares from 0 to 1."
    )
    direction: MetricDirection = strawberry.field(
        description="Which way is better: LOWER for an error-like metric, HIGHER for the others (robustness and "
        "fairness included)."
    )
    interval: Interval | None = strawberry.field(
        description="A 95% bootstrap interval over the data set's items (every task metric; null for robustness "
        "and fairness, which are not resampled, and for evaluations recorded before intervals were kept)."
    )


@strawberry.type(description="One group of a fairness slice (e.g. one dialect) and the metrics on its items alone.")
class SliceGroup:
    group: str = strawberry.field(description="The group's name, as the slice assigns it (e.g. a dialect).")
    size: int = strawberry.field(description="How many items fell in the group.")
    metrics: list[MetricValue] = strawberry.field(description="The task's metrics on the group's items alone.")


@strawberry.type(
    description="How far the slice's worst group falls below the whole set on one metric; positive means the "
    "worst group is served worse. Null figures: no group was large enough to compare."
)
class SliceGap:
    metric: str = strawberry.field(description="The task's metric compared.")
    gap: float | None = strawberry.field(
        description="The whole set's value minus the worst group's (the other way round for a lower-is-better "
        "metric); null when no group was compared."
    )
    worst_group: str | None = strawberry.field(
        description="The group with the worst value, among those compared; null when none was."
    )
    worst_value: float | None = strawberry.field(
        description="The worst group's value of the metric; null when no group was compared."
    )
    overall: float | None = strawberry.field(description="The metric's value on the whole data set.")
    groups_compared: int = strawberry.field(
        description="How many groups were large enough to compare (at least 10 items each)."
    )


@strawberry.type(description="One fairness slice of the data set: its groups and the gaps between them.")
class SliceResult:
    slice: str = strawberry.field(description="The slice's name, one of Task.fairnessSlices.")
    groups: list[SliceGroup] = strawberry.field(
        description="Each group the slice put at least one item in, by name; small groups included."
    )
    gaps: list[SliceGap] = strawberry.field(description="One gap per metric of the task.")


@strawberry.type(description="One perturbed copy of the set: how consistently the model answered, and how well.")
class PerturbationResult:
    perturbation: str = strawberry.field(
        description="The perturbation's name; the copy is the data set named {set}~{perturbation}."
    )
    kind: PerturbationKind = strawberry.field(
        description="Whether its consistency counts towards robustness or towards fairness."
    )
    consistency: float = strawberry.field(
        description="The share of the copy's items answered as their originals were (robustness or fairness)."
    )
    metrics: list[MetricValue] = strawberry.field(
        description="The task's metrics on the copy itself; empty when its perturbation does not keep the gold "
        "(`gold`): such a copy counts for consistency only."
    )
    gold: PerturbationGold = strawberry.field(
        description="What the copy's perturbation does to the gold: only a copy that keeps it is scored against it."
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _values(metrics: Mapping[str, Any], skip: tuple[str, ...] = ()) -> list[MetricValue]:
    return [
        MetricValue(name=name, value=number)
        for name, value in metrics.items()
        if name not in skip and (number := _number(value)) is not None
    ]


def metrics_of(row: EvaluationRow, registry: Mapping[str, Any]) -> list[EvaluationMetric]:
    """The evaluation's metrics in stored order; a metric is ``higher`` unless its registered one says otherwise."""
    return metric_list(row.metrics or {}, (row.details or {}).get("intervals") or {}, registry)


def metric_list(
    metrics: Mapping[str, Any], intervals: Mapping[str, Any], registry: Mapping[str, Any]
) -> list[EvaluationMetric]:
    """Stored metrics (name to value) with their stored intervals (name to ``[low, high]``), as the API gives them."""
    out = []
    for name, value in metrics.items():
        number = _number(value)
        if number is None:
            continue
        higher = name in PERTURBATION_FIGURES or getattr(registry.get(name), "higher_is_better", True)
        bounds = intervals.get(name)
        interval = None
        if isinstance(bounds, list | tuple) and len(bounds) == 2 and all(_number(b) is not None for b in bounds):
            interval = Interval(low=float(bounds[0]), high=float(bounds[1]))
        out.append(
            EvaluationMetric(
                name=name,
                value=number,
                direction=MetricDirection.HIGHER if higher else MetricDirection.LOWER,
                interval=interval,
            )
        )
    return out


def slices_of(row: EvaluationRow) -> list[SliceResult]:
    details = row.details or {}
    per_slice: Mapping[str, Mapping[str, Mapping[str, Any]]] = details.get("slices") or {}
    gaps: Mapping[str, Mapping[str, Mapping[str, Any]]] = details.get("slice_gaps") or {}
    out = []
    for name, groups in per_slice.items():
        out.append(
            SliceResult(
                slice=name,
                groups=[
                    SliceGroup(group=group, size=int(values.get("n", 0)), metrics=_values(values, skip=("n",)))
                    for group, values in groups.items()
                ],
                gaps=[
                    SliceGap(
                        metric=metric,
                        gap=_number(gap.get("gap")),
                        worst_group=gap.get("worst_group"),
                        worst_value=_number(gap.get("worst_value")),
                        overall=_number(gap.get("overall")),
                        groups_compared=int(gap.get("groups_compared") or 0),
                    )
                    for metric, gap in (gaps.get(name) or {}).items()
                ],
            )
        )
    return out


def perturbations_of(row: EvaluationRow) -> list[PerturbationResult]:
    copies: Mapping[str, Mapping[str, Any]] = (row.details or {}).get("perturbations") or {}
    out = []
    for name, figures in copies.items():
        kind = figures.get("kind")
        out.append(
            PerturbationResult(
                perturbation=name,
                kind=PerturbationKind.FAIRNESS if kind == "fairness" else PerturbationKind.ROBUSTNESS,
                consistency=_number(figures.get("consistency")) or 0.0,
                metrics=_values(figures, skip=("kind", "consistency", "gold")),
                gold=PerturbationGold(str(figures.get("gold") or "kept")),
            )
        )
    return out


@strawberry.type(description="The machine an evaluation's model ran on, as the evaluation job recorded it.")
class Hardware:
    cpu: str = strawberry.field(description="The processor model.")
    cores: int | None = strawberry.field(description="Logical cores the machine has.")
    memory_gb: float | None = strawberry.field(description="The machine's memory in GiB.")
    accelerator: str | None = strawberry.field(description="The GPU's name, when the model ran on one; null: CPU.")
    machine: str = strawberry.field(description="The architecture (x86_64, arm64, ...).")


def hardware_of(row: EvaluationRow) -> Hardware | None:
    facts = (row.details or {}).get("hardware")
    if not isinstance(facts, dict):
        return None
    cores, memory = facts.get("cores"), facts.get("memory_gb")
    return Hardware(
        cpu=str(facts.get("cpu") or "unknown"),
        cores=cores if isinstance(cores, int) else None,
        memory_gb=_number(memory),
        accelerator=facts.get("accelerator") if isinstance(facts.get("accelerator"), str) else None,
        machine=str(facts.get("machine") or "unknown"),
    )
