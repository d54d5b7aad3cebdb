"""The Dynaboard: published models of a task ranked by a Dynascore whose weights each user chooses.

A board's metrics are the task's metrics (oriented by each metric's ``higher_is_better``) plus ``throughput``
(examples/s), ``memory`` (GB above the pre-model baseline), ``robustness`` and ``fairness`` (consistency under the
task's perturbations). Its data sets are the task's scoring sets (their perturbed copies feed robustness and
fairness, not the board's columns). Only finished (``DONE``) evaluations count; a model lacking one is shown with
the gap marked (``dynaforge.evaluation.dynascore``).

Evaluations store their task metrics, ``robustness`` and ``fairness`` in ``col(Evaluation.metrics)``, the principal
metric's bootstrap interval in ``col(Evaluation.details)["intervals"][metric] = [low, high]``, throughput and memory in
their own columns. A row shows the principal metric's interval when the board has one scoring data set (an interval
of a weighted mean over several sets would need their resamples). Forks save a user's weights under a name;
snapshots freeze a computed board.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, func, select
from sqlmodel import col

from dynaforge.db.models import (
    Dataset,
    DatasetAccess,
    Evaluation,
    EvaluationStatus,
    LeaderboardFork,
    LeaderboardSnapshot,
    ModelRow,
    ModelStatus,
    TaskRow,
    User,
    table,
)
from dynaforge.errors import AlreadyExists, FieldError, Forbidden, InvalidInput, NotFound
from dynaforge.evaluation import dynascore
from dynaforge.ids import global_id
from dynaforge.services import cursors, visibility
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human
from dynaforge.services.platform import Platform
from dynaforge.tasks.base import Task

EXTRA_METRICS = (
    dynascore.MetricSpec("throughput", "higher"),
    dynascore.MetricSpec("memory", "memory"),
    dynascore.MetricSpec("robustness", "higher"),
    dynascore.MetricSpec("fairness", "higher"),
)


@dataclass(frozen=True)
class BoardMetric:
    name: str
    value: float | None
    weight: float
    interval: tuple[float, float] | None = None


class GapReason:
    """Why a model has no figure (or not every figure) on a scoring set: what a board says beside the gap."""

    NOT_EVALUATED = "NOT_EVALUATED"  # no evaluation on the set (it came after the model, say): never queued
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    FAILED = "FAILED"
    UNUSABLE = "UNUSABLE"  # done, but most answers unusable: no figure that depends on the gold
    NOT_MEASURED = "NOT_MEASURED"  # done, without some axis (speed for uploaded predictions, fairness without copies)

    ALL = (NOT_EVALUATED, QUEUED, RUNNING, FAILED, UNUSABLE, NOT_MEASURED)


@dataclass(frozen=True)
class BoardGap:
    """One scoring set a model lacks figures on: the set, the board's axes it lacks there, why, and in words."""

    dataset: str
    metrics: list[str]
    reason: str  # GapReason
    detail: str


@dataclass(frozen=True)
class BoardRow:
    model: Any  # the model's columns (a Row with ModelRow's attribute names; read-only)
    model_id: int
    model_name: str
    submitter: str | None
    rank: int | None
    dynascore: float | None
    metrics: list[BoardMetric]
    missing: list[str]
    submitter_row: Any = None  # the submitter's User row, when not anonymous
    gaps: list[BoardGap] = field(default_factory=list)
    #: the model's figures (set name -> axis -> value), the board's set names and axes: what :attr:`by_dataset` reads
    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)
    dataset_names: tuple[str, ...] = ()
    axes: tuple[str, ...] = ()

    @property
    def by_dataset(self) -> dict[str, dict[str, float | None]]:
        """Each scoring set's values on the board's axes (set name -> axis -> value or None), whatever its weight;
        made when read (a board of 200 models on 10 sets holds 2,000 of them, which most callers never read)."""
        return {name: {axis: self.scores.get(name, {}).get(axis) for axis in self.axes} for name in self.dataset_names}


def _json_value(value: Any) -> Any:
    """A JSON sub-value as the driver returns it (PostgreSQL's JSONB path: decoded; SQLite's json_extract of an
    object: text)."""
    return json.loads(value) if isinstance(value, str) else value


@dataclass(frozen=True)
class Board:
    task_code: str
    principal: str
    metric_weights: dict[str, float]
    dataset_weights: dict[str, float]
    datasets: list[str]
    rows: list[BoardRow]
    amrs_fallback: bool
    extra: dict[str, Any] = field(default_factory=dict)
    metrics: list[MetricInfo] = field(default_factory=list)
    memory_budget_gb: float = 0.0  # what MEMORY axes were oriented against


#: The memory budget boards are computed with (a MEMORY axis scores the budget left).
MEMORY_BUDGET_GB = dynascore.DEFAULT_MEMORY_BUDGET_GB


#: What the built-in axes measure in, for a board's legends.
UNITS = {"throughput": "examples/s", "memory": "GiB"}  # memory: Evaluation.memoryGib, peak MiB / 1024


@dataclass(frozen=True)
class MetricInfo:
    """One axis of a board as a client needs it to draw sliders and legends and to recompute scores itself."""

    name: str
    description: str
    direction: str  # higher, lower or memory (see dynascore.MetricSpec)
    unit: str | None
    weight: float  # the weight in use, normalised with the others to sum 1
    exchange_rate: float | None  # AMRS against the principal metric (unscored axes too); None: no value to rate
    default_weight: float = 0.0  # the weight when none is asked for, normalised with the others to sum 1


def board_metrics(p: Platform, task: Task) -> list[dynascore.MetricSpec]:
    registered = p.plugins.registry.metrics
    specs = [
        dynascore.MetricSpec(name, "higher" if getattr(registered.get(name), "higher_is_better", True) else "lower")
        for name in task.metrics
    ]
    return specs + [m for m in EXTRA_METRICS if m.name not in task.metrics]


def _unmeasured_axes_unweighted(
    specs: list[dynascore.MetricSpec],
    principal: str,
    given: dict[str, float] | None,
    scores: list[dict[str, dict[str, float | None]]],
) -> list[dynascore.MetricSpec]:
    """Axes that no model has a figure for on any data set (fairness on a task without fairness copies, say) weigh
    0 unless the caller weighs them: shown, but no model lacks them, so every model can still be ranked."""
    measured = {name for model in scores for values in model.values() for name, v in values.items() if v is not None}
    return [
        dataclasses.replace(spec, default_weight=0.0)
        if spec.name not in measured and spec.name != principal and spec.name not in (given or {})
        else spec
        for spec in specs
    ]


def _weights(entries: list[tuple[str, float]] | dict[str, float] | None, what: str) -> dict[str, float] | None:
    if entries is None:
        return None
    pairs = list(entries.items()) if isinstance(entries, dict) else list(entries)
    seen, out = set(), {}
    for name, weight in pairs:
        if name in seen:
            raise InvalidInput.from_errors([FieldError(f"{what}.{name}", "unique", "is given twice")])
        seen.add(name)
        out[name] = weight
    return out


@dataclass(frozen=True)
class BoardData:
    """What a task's board is computed from, read once and shared by every request for ``Caches.ttl_s`` (and
    dropped at once by this process when a model, a data set or an evaluation of the task changes): the published
    models, their submitters, the scoring sets' names, and each model's figures per set, decoded."""

    stamp: tuple[Any, ...]  # _stamp when it was read: a newer one means an evaluation or a model changed since
    models: list[Any]
    users: dict[int, User]
    dataset_names: dict[int, str]
    scores: dict[int, dict[str, dict[str, float | None]]]
    intervals: dict[tuple[int, str, str], tuple[float, float]]
    #: (model id, data set name) -> (GapReason, words) where a model has no usable figures on a scoring set
    states: dict[tuple[int, str], tuple[str, str]] = field(default_factory=dict)


async def _stamp(p: Platform, task_id: int) -> tuple[Any, ...]:
    """What moves when a task's board inputs change in any process: its DONE evaluations (how many, the latest
    finish) and its published models (how many, the newest, how many are DONE). Two small aggregate queries."""
    done = (
        select(func.count(), func.max(col(Evaluation.finished_at)))
        .join(ModelRow, col(ModelRow.id) == col(Evaluation.model_id))
        .where(col(ModelRow.task_id) == task_id, col(Evaluation.status) == EvaluationStatus.DONE)
    )
    published = select(
        func.count(), func.max(col(ModelRow.id)), func.count().filter(col(ModelRow.status) == ModelStatus.DONE)
    ).where(col(ModelRow.task_id) == task_id, col(ModelRow.published).is_(True))
    async with p.db.session() as s:
        evaluations = (await s.execute(done)).one()
        models = (await s.execute(published)).one()
    return (*evaluations, *models)


async def _board_data(p: Platform, task_id: int) -> BoardData:
    """The task's board inputs: cached per process for ``Caches.ttl_s``, read again at once when the stamp moved
    (an evaluation finished in a worker) or this process changed a model or a data set of the task (it drops the
    entry). A change the stamp does not see (another server process renaming or unpublishing a model) shows within
    ``ttl_s``, like every cached row."""
    stamp = await _stamp(p, task_id)
    data: BoardData | None = p.caches.boards.get(task_id)
    if data is None or data.stamp != stamp:
        data = await _load_board(p, task_id, stamp)
        p.caches.boards.put(task_id, data)
    return data


async def _load_board(p: Platform, task_id: int, stamp: tuple[Any, ...]) -> BoardData:
    async with p.db.session() as s:
        scoring = list(
            await s.scalars(
                select(Dataset)
                .where(
                    col(Dataset.task_id) == task_id,
                    col(Dataset.access) == DatasetAccess.SCORING,
                    col(Dataset.parent_id).is_(None),
                )
                .order_by(col(Dataset.name))
            )
        )
        # Rows of columns, not ORM objects: building a few hundred SQLModel instances costs more than the query.
        models = (
            await s.execute(
                select(*table(ModelRow).columns).where(
                    col(ModelRow.task_id) == task_id, col(ModelRow.published).is_(True)
                )
            )
        ).all()
        # Only the columns the board uses: the full rows carry details (per-slice and per-copy figures) and log
        # tails, several times the data, and building 2,000 ORM objects would dominate the query.
        evaluations = (
            (
                await s.execute(
                    select(
                        col(Evaluation.model_id),
                        col(Evaluation.dataset_id),
                        col(Evaluation.metrics),
                        col(Evaluation.throughput),
                        col(Evaluation.memory_mb),
                        col(Evaluation.details)["intervals"].label("intervals"),
                        col(Evaluation.details)["held"].label("held"),
                    ).where(
                        col(Evaluation.model_id).in_([m.id for m in models]),
                        col(Evaluation.dataset_id).in_([d.id for d in scoring]),
                        col(Evaluation.status) == EvaluationStatus.DONE,
                    )
                )
            ).all()
            if models and scoring
            else []
        )
        # Where a model has no figures, why: evaluations not done, and done ones whose answers were mostly unusable.
        unfinished = (
            (
                await s.execute(
                    select(
                        col(Evaluation.model_id),
                        col(Evaluation.dataset_id),
                        col(Evaluation.status),
                        col(Evaluation.details)["unusable_outputs"].label("unusable"),
                        col(Evaluation.details)["n"].label("n"),
                        col(Evaluation.details)["mostly_unusable"].label("mostly_unusable"),
                    ).where(
                        col(Evaluation.model_id).in_([m.id for m in models]),
                        col(Evaluation.dataset_id).in_([d.id for d in scoring]),
                        (col(Evaluation.status) != EvaluationStatus.DONE)
                        | col(Evaluation.details)["mostly_unusable"].is_not(None),
                    )
                )
            ).all()
            if models and scoring
            else []
        )
        users = {u.id: u for u in await s.scalars(select(User).where(col(User.id).in_({m.user_id for m in models})))}
        ended = await visibility.ended_rounds(s, scoring)
    dataset_names = {d.id: d.name for d in scoring}
    # Uploaded predictions rank by their private part once it is released (the round ended): the final standing.
    released = {d.id for d in scoring if visibility.held_released(d, d.round_id in ended)}
    scores: dict[int, dict[str, dict[str, float | None]]] = {m.id: {} for m in models}
    intervals: dict[tuple[int, str, str], tuple[float, float]] = {}
    for e in evaluations:
        metrics, bounds_of = e.metrics, e.intervals
        held = _json_value(e.held)
        if isinstance(held, dict) and e.dataset_id in released:
            metrics, bounds_of = held.get("metrics"), (held.get("details") or {}).get("intervals")
        values: dict[str, float | None] = {
            k: v for k, v in (metrics or {}).items() if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        values["throughput"] = e.throughput
        values["memory"] = None if e.memory_mb is None else e.memory_mb / 1024.0
        scores[e.model_id][dataset_names[e.dataset_id]] = values
        for metric, bounds in (_json_value(bounds_of) or {}).items():
            low, high = bounds
            intervals[(e.model_id, dataset_names[e.dataset_id], metric)] = (low, high)
    states: dict[tuple[int, str], tuple[str, str]] = {}
    for u in unfinished:
        name = dataset_names[u.dataset_id]
        if u.status != EvaluationStatus.DONE:
            words = {
                EvaluationStatus.QUEUED: "waiting to be evaluated",
                EvaluationStatus.RUNNING: "being evaluated",
                EvaluationStatus.FAILED: "its evaluation failed (its submitter reads why)",
            }.get(u.status, u.status.lower())
            states[(u.model_id, name)] = (u.status, words)
        elif _json_value(u.mostly_unusable):
            unusable, n = _json_value(u.unusable), _json_value(u.n)
            states[(u.model_id, name)] = (
                GapReason.UNUSABLE,
                f"{unusable} of {n} answers could not be read: no figure that depends on the gold"
                if isinstance(unusable, int) and isinstance(n, int)
                else "most answers could not be read: no figure that depends on the gold",
            )
    return BoardData(stamp, list(models), users, dataset_names, scores, intervals, states)


async def compute(
    p: Platform,
    actor: Actor,
    task_code: str,
    *,
    metric_weights: list[tuple[str, float]] | dict[str, float] | None = None,
    dataset_weights: list[tuple[str, float]] | dict[str, float] | None = None,
    sort: str | None = None,
    fork_id: int | None = None,
) -> Board:
    """The board for these weights (or a fork's); ``sort`` is None (the Dynascore) or a metric's name."""
    view = await task_service.get_task(p, actor, task_code)
    task = view.task
    specs = board_metrics(p, task)
    metric_w, dataset_w = _weights(metric_weights, "metricWeights"), _weights(dataset_weights, "datasetWeights")
    if fork_id is not None:
        async with p.db.session() as s:
            fork = await s.get(LeaderboardFork, fork_id)
        if fork is None or fork.task_id != view.row.id:
            raise NotFound(f"No leaderboard fork {fork_id} of {task_code}")
        metric_w = metric_w if metric_w is not None else dict(fork.metric_weights) or None
        dataset_w = dataset_w if dataset_w is not None else dict(fork.dataset_weights) or None
    data = await _board_data(p, view.row.id)
    models, users, dataset_names = data.models, data.users, data.dataset_names
    scores, intervals = data.scores, data.intervals
    if dataset_w is not None:
        unknown = sorted(set(dataset_w) - set(dataset_names.values()))
        if unknown:
            raise InvalidInput.from_errors(
                [
                    FieldError(f"datasetWeights.{n}", "unknown", f"is not a scoring data set of {task_code}")
                    for n in unknown
                ]
            )
    if dataset_w is None and dataset_names:
        # By default the sets that have figures count: a set no model has a figure on yet (its evaluations queued,
        # say) is shown with its gaps named, but does not take every model off the board.
        measured = {name for model_scores in scores.values() for name in model_scores}
        counted = measured & set(dataset_names.values()) or set(dataset_names.values())
        dataset_w = {name: 1.0 if name in counted else 0.0 for name in dataset_names.values()}
    specs = _unmeasured_axes_unweighted(specs, task.principal_metric, metric_w, [scores[m.id] for m in models])
    computed = (
        dynascore.compute_board(
            [dynascore.ModelScores(str(m.id), scores[m.id]) for m in models] if dataset_w else [],
            specs,
            principal=task.principal_metric,
            metric_weights=metric_w,
            dataset_weights=dataset_w,
            memory_budget_gb=MEMORY_BUDGET_GB,
        )
        if dataset_w
        else None
    )
    by_id = {m.id: m for m in models}
    weights = computed.metric_weights if computed else {}
    rows = []
    set_names, axis_names = tuple(sorted(dataset_names.values())), tuple(spec.name for spec in specs)
    for r in computed.rows if computed else []:
        model = by_id[int(r.model_id)]
        metrics = []
        for spec in specs:
            interval = None
            if len(dataset_names) == 1 and spec.name == task.principal_metric:
                interval = intervals.get((model.id, next(iter(dataset_names.values())), spec.name))
            metrics.append(BoardMetric(spec.name, r.x.get(spec.name), weights.get(spec.name, 0.0), interval))
        rows.append(
            BoardRow(
                model=model,
                model_id=model.id,
                model_name=model.name,
                submitter=None if model.anonymous or model.user_id not in users else users[model.user_id].username,
                submitter_row=None if model.anonymous else users.get(model.user_id),
                rank=r.rank,
                dynascore=r.dynascore,
                metrics=metrics,
                missing=list(r.missing),
                gaps=_gaps(model.id, list(set_names), scores[model.id], specs, data.states),
                scores=scores[model.id],
                dataset_names=set_names,
                axes=axis_names,
            )
        )
    if sort not in (None, "dynascore"):
        if sort not in {m.name for m in specs}:
            raise InvalidInput.from_errors(
                [FieldError("sortMetric", "choice", f"must be one of {', '.join(m.name for m in specs)}")]
            )
        direction = {m.name: m.direction for m in specs}[sort]
        sign = 1 if direction == "higher" else -1

        def key(row: BoardRow):
            value = next(m.value for m in row.metrics if m.name == sort)
            return (value is None, -sign * value if value is not None else 0, row.model_id)

        rows.sort(key=key)
    registered = p.plugins.registry.metrics
    defaults = {
        spec.name: float(spec.default_weight)
        if spec.default_weight is not None
        else dynascore.DEFAULT_PRINCIPAL_WEIGHT
        if spec.name == task.principal_metric
        else dynascore.DEFAULT_WEIGHT
        for spec in specs
    }
    default_total = sum(defaults.values()) or 1.0
    infos = [
        MetricInfo(
            name=spec.name,
            description=getattr(registered.get(spec.name), "description", "") or "",
            direction=spec.direction,
            unit=UNITS.get(spec.name),
            weight=weights.get(spec.name, 0.0),
            exchange_rate=computed.rates.get(spec.name) if computed else None,
            default_weight=defaults[spec.name] / default_total,
        )
        for spec in specs
    ]
    return Board(
        task_code=task_code,
        principal=task.principal_metric,
        metric_weights=weights,
        dataset_weights=computed.dataset_weights if computed else {},
        datasets=sorted(dataset_names.values()),
        rows=rows,
        amrs_fallback=bool(computed and computed.amrs_fallback),
        metrics=infos,
        memory_budget_gb=MEMORY_BUDGET_GB,
    )


def _gaps(
    model_id: int,
    datasets: list[str],
    model_scores: dict[str, dict[str, float | None]],
    specs: list[dynascore.MetricSpec],
    states: dict[tuple[int, str], tuple[str, str]],
) -> list[BoardGap]:
    """The scoring sets a model lacks figures on, each with the axes it lacks there and why."""
    gaps = []
    axes = [spec.name for spec in specs]
    for name in datasets:
        values = model_scores.get(name)
        lacking = axes if values is None else [a for a in axes if values.get(a) is None]
        if not lacking:
            continue
        reason, words = states.get((model_id, name), (None, ""))
        if reason is None:
            reason, words = (
                (GapReason.NOT_EVALUATED, "never evaluated on this set")
                if values is None
                else (GapReason.NOT_MEASURED, f"not measured here: {', '.join(lacking)}")
            )
        gaps.append(BoardGap(name, lacking, reason, words))
    return gaps


# A cell starting with one of these is a formula to a spreadsheet (CSV injection, OWASP): quoted with a leading '.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> object:
    """A text cell as spreadsheets show it without running it; numbers are left as they are."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def to_csv(board: Board) -> str:
    """The board as CSV: rank, the model's API id (``Model.id``), model, submitter, Dynascore, then every metric (empty
    where missing). Text that a spreadsheet would run as a formula (a model named ``=HYPERLINK(...)``) starts with
    ``'``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    names = [m.name for m in board.rows[0].metrics] if board.rows else []
    writer.writerow(["rank", "model_id", "model", "submitter", "dynascore", *names, "missing", "gaps"])
    for row in board.rows:
        values = {m.name: m.value for m in row.metrics}
        writer.writerow(
            [
                "" if row.rank is None else row.rank,
                global_id("Model", row.model_id),
                _cell(row.model_name),
                _cell(row.submitter or ""),
                "" if row.dynascore is None else repr(row.dynascore),
                *("" if values[n] is None else repr(values[n]) for n in names),
                _cell(" ".join(row.missing)),
                _cell("; ".join(f"{g.dataset}: {g.reason}" for g in row.gaps)),
            ]
        )
    return out.getvalue()


#: What one user may keep on one task: forks and snapshots are rows anyone signed in can make.
MAX_FORKS_PER_USER = 100
MAX_SNAPSHOTS_PER_USER = 100


async def _check_room(s: Any, table: Any, task_id: int, user_id: int, limit: int, what: str, task_code: str) -> None:
    held = await s.scalar(
        select(func.count()).select_from(table).where(col(table.task_id) == task_id, col(table.user_id) == user_id)
    )
    if held >= limit:
        raise InvalidInput.from_errors(
            [FieldError("name", "limit", f"you keep {held} {what} on {task_code}, the most one user may; delete one")]
        )


async def save_fork(
    p: Platform,
    actor: Actor,
    task_code: str,
    name: str,
    *,
    metric_weights: dict[str, float] | None,
    dataset_weights: dict[str, float] | None,
    description: str = "",
) -> LeaderboardFork:
    """Save weights under a name (checked by computing the board with them once)."""
    actor = require_human(actor)
    if not 1 <= len(name.strip()) <= 100 or len(description) > 2000:
        raise InvalidInput.from_errors(
            [FieldError("name", "length", "give a name of 1 to 100 characters (and a description of at most 2000)")]
        )
    await compute(p, actor, task_code, metric_weights=metric_weights, dataset_weights=dataset_weights)
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.write() as s:
        taken = await s.scalar(
            select(col(LeaderboardFork.id)).where(
                col(LeaderboardFork.task_id) == view.row.id,
                col(LeaderboardFork.user_id) == actor.user_id,
                col(LeaderboardFork.name) == name.strip(),
            )
        )
        if taken is not None:
            raise AlreadyExists(f"You already have a fork named {name.strip()!r} on {task_code}")
        await _check_room(s, LeaderboardFork, view.row.id, actor.person_id, MAX_FORKS_PER_USER, "forks", task_code)
        fork = LeaderboardFork(
            task_id=view.row.id,
            user_id=actor.person_id,
            name=name.strip(),
            description=description,
            metric_weights=dict(metric_weights or {}),
            dataset_weights=dict(dataset_weights or {}),
        )
        s.add(fork)
        await s.flush()
    return fork


async def snapshot(
    p: Platform,
    actor: Actor,
    task_code: str,
    name: str,
    *,
    metric_weights: dict[str, float] | None,
    dataset_weights: dict[str, float] | None,
) -> LeaderboardSnapshot:
    """Freeze the board as computed now with these weights."""
    actor = require_human(actor)
    if not 1 <= len(name.strip()) <= 100:
        raise InvalidInput.from_errors([FieldError("name", "length", "give a name of 1 to 100 characters")])
    board = await compute(p, actor, task_code, metric_weights=metric_weights, dataset_weights=dataset_weights)
    view = await task_service.get_task(p, actor, task_code)
    rows = [
        {
            "model_id": r.model_id,
            "model": r.model_name,
            "submitter": r.submitter,
            "rank": r.rank,
            "dynascore": r.dynascore,
            "missing": r.missing,
            "gaps": [dataclasses.asdict(g) for g in r.gaps],
            "metrics": [
                {
                    "name": m.name,
                    "value": m.value,
                    "weight": m.weight,
                    "interval": list(m.interval) if m.interval else None,
                }
                for m in r.metrics
            ],
        }
        for r in board.rows
    ]
    async with p.db.write() as s:
        await _check_room(
            s, LeaderboardSnapshot, view.row.id, actor.person_id, MAX_SNAPSHOTS_PER_USER, "snapshots", task_code
        )
        row = LeaderboardSnapshot(
            task_id=view.row.id,
            user_id=actor.person_id,
            name=name.strip(),
            metric_weights=board.metric_weights,
            dataset_weights=board.dataset_weights,
            rows=rows,
        )
        s.add(row)
        await s.flush()
    return row


async def my_forks(p: Platform, actor: Actor, task_code: str, **page: Any) -> cursors.Listing:
    """The forks the actor saved on a task, newest first; ``page`` takes first/after/last/before."""
    return await _mine(p, actor, task_code, LeaderboardFork, "fork", page)


async def my_snapshots(p: Platform, actor: Actor, task_code: str, **page: Any) -> cursors.Listing:
    """The snapshots the actor took of a task's board, newest first; ``page`` takes first/after/last/before."""
    return await _mine(p, actor, task_code, LeaderboardSnapshot, "snapshot", page)


async def _mine(p: Platform, actor: Actor, task_code: str, kind: Any, name: str, page: dict[str, Any]) -> Any:
    actor = require_human(actor)
    request = cursors.PageRequest.of(name, max_size=p.settings.page_max_size, **page)
    view = await task_service.get_task(p, actor, task_code)
    statement = select(kind).where(col(kind.task_id) == view.row.id, col(kind.user_id) == actor.user_id)
    async with p.db.session() as s:
        found = await cursors.window(s, statement, col(kind.id), name, request)
    return cursors.Listing(found, cursors.counter(p, statement))


async def delete_fork(p: Platform, actor: Actor, fork_id: int) -> LeaderboardFork:
    """Its author (or an admin) deletes a fork; boards opened with its id no longer find it."""
    return await _delete_own(p, actor, LeaderboardFork, fork_id, "leaderboard fork")


async def delete_snapshot(p: Platform, actor: Actor, snapshot_id: int) -> LeaderboardSnapshot:
    """Its author (or an admin) deletes a snapshot."""
    return await _delete_own(p, actor, LeaderboardSnapshot, snapshot_id, "leaderboard snapshot")


async def _delete_own(p: Platform, actor: Actor, kind: Any, row_id: int, what: str) -> Any:
    actor = require_human(actor)
    async with p.db.session() as s:
        row = await s.get(kind, row_id)
        code = None if row is None else await s.scalar(select(col(TaskRow.code)).where(col(TaskRow.id) == row.task_id))
    if row is None or code is None:
        raise NotFound(f"No {what} {row_id}")
    if row.user_id != actor.user_id and not actor.is_admin:
        # Shared by id, others may know it exists: those who can see its task are told who may delete it.
        try:
            await task_service.get_task(p, actor, code)
        except NotFound:
            raise NotFound(f"No {what} {row_id}") from None
        raise Forbidden(f"Only the author of {what} {row_id} (or an admin) can delete it")
    async with p.db.write() as s:
        await s.execute(delete(kind).where(kind.id == row_id))
    return row


async def get_snapshot(p: Platform, actor: Actor, snapshot_id: int) -> LeaderboardSnapshot:
    async with p.db.session() as s:
        row = await s.get(LeaderboardSnapshot, snapshot_id)
        code = None
        if row is not None:
            code = await s.scalar(select(col(TaskRow.code)).where(col(TaskRow.id) == row.task_id))
    if row is None or code is None:
        raise NotFound(f"No leaderboard snapshot {snapshot_id}")
    await task_service.get_task(p, actor, code)
    return row


async def get_fork(p: Platform, actor: Actor, fork_id: int) -> LeaderboardFork:
    """A fork, for anyone who can see its task (forks are shared by id, as `leaderboard(forkId:)` reads them)."""
    async with p.db.session() as s:
        row = await s.get(LeaderboardFork, fork_id)
    if row is None:
        raise NotFound(f"No leaderboard fork {fork_id}")
    try:
        await task_service.visible_task(p, actor, row.task_id)
    except NotFound:
        raise NotFound(f"No leaderboard fork {fork_id}") from None
    return row
