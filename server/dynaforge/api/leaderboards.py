"""Leaderboards over GraphQL: the Dynascore board of a task with weights chosen by the caller, saved forks and
frozen snapshots."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import strawberry

from dynaforge.api.arguments import DatasetWeights, ForkId, MetricWeights, Sort, SortMetric, WeightInput
from dynaforge.api.context import Info, TaskCode
from dynaforge.api.enums import (
    GapReason,
    LeaderboardSort,
    MetricDirection,
    ModelStatus,
)
from dynaforge.api.errors import (
    AlreadyExists,
    Forbidden,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    errors_as_graphql,
    errors_as_null,
    errors_as_union,
)
from dynaforge.api.models import Model, ModelCard
from dynaforge.api.node import Node, global_id, parse_id
from dynaforge.api.task_lists import task_list
from dynaforge.api.types.connection import After, Before, Connection, First, Last
from dynaforge.api.types.results import Interval
from dynaforge.api.types.user import User
from dynaforge.db.models import ModelRow, as_utc
from dynaforge.errors import FieldError as DomainFieldError
from dynaforge.errors import InvalidInput as DomainInvalidInput
from dynaforge.services import leaderboard as board_service
from dynaforge.services import per_item as per_item_service
from dynaforge.services import submissions as submission_service


@strawberry.type(description="A metric's or a data set's weight.")
class Weight:
    name: str = strawberry.field(description="The metric's or the data set's name.")
    weight: float = strawberry.field(
        description="On a leaderboard or a snapshot: the weight used, normalised so that the board's weights add up "
        "to 1. On a fork: the weight as it was saved."
    )


@strawberry.type(description="One metric of a leaderboard row.")
class LeaderboardMetric:
    name: str = strawberry.field(description="The axis's name, as in Leaderboard.metrics.")
    value: float | None = strawberry.field(description="Averaged over the scoring data sets; null: missing.")
    weight: float = strawberry.field(
        description="The metric's weight on the board, normalised (the same on every row)."
    )
    interval: Interval | None = strawberry.field(
        description="Bootstrap 95% interval of a task metric on a board of one data set; null on a board that "
        "averages several sets, and for robustness, fairness, throughput and memory."
    )


@strawberry.type(description="A model's values on one scoring set, on every axis of the board.")
class LeaderboardDatasetValues:
    dataset: str = strawberry.field(description="The scoring set, by name (Leaderboard.datasets).")
    values: list[LeaderboardValue] = strawberry.field(
        description="One per axis, in the order of Leaderboard.metrics; a value is null where the model lacks it."
    )


@strawberry.type(description="One axis's value.")
class LeaderboardValue:
    name: str = strawberry.field(description="The axis's name, as in Leaderboard.metrics.")
    value: float | None = strawberry.field(description="The value as measured (not oriented); null: missing.")


@strawberry.type(
    description="A model as a leaderboard row shows it to anyone: its public fields, an anonymous model without "
    "its submitter. It has no `id`, so a normalised cache never mistakes it for the model as model(id:) shows it to "
    "you (with its configuration, when you may see it): follow `modelId` there for the rest."
)
class LeaderboardModel:
    row: strawberry.Private[ModelRow]
    submitter_row: strawberry.Private[Any]
    model_id: strawberry.ID = strawberry.field(description="The model's id (Model.id): model(id:) reads it whole.")
    name: str = strawberry.field(description="Its display name.")
    backend: str | None = strawberry.field(
        description="The registered backend that runs it; null for a model made of uploaded predictions."
    )
    card: ModelCard = strawberry.field(description="What its submitter says about it.")
    anonymous: bool = strawberry.field(description="Whether its submitter's name is hidden.")
    status: ModelStatus = strawberry.field(description="Where its evaluations are, taken together.")
    created_at: datetime = strawberry.field(description="When it was submitted (UTC).")

    @strawberry.field(description="Who submitted it; null for an anonymous model.")
    def submitter(self) -> User | None:
        if self.row.anonymous or self.submitter_row is None:
            return None
        return User.from_row(self.submitter_row)

    @classmethod
    def of(cls, row: ModelRow, submitter: Any) -> LeaderboardModel:
        return cls(
            row=row,
            submitter_row=submitter,
            model_id=global_id("Model", row.id),
            name=row.name,
            backend=row.backend,
            card=ModelCard.of(row.card or {}),
            anonymous=row.anonymous,
            status=ModelStatus(row.status),
            created_at=as_utc(row.created_at),
        )


@strawberry.type(description="One published model on a leaderboard.")
class LeaderboardRow:
    model: LeaderboardModel = strawberry.field(
        description="The model as anyone sees it (its own type, with no `id`): model(id: model.modelId) has what you "
        "may see of it besides."
    )
    key: str = strawberry.field(
        description="What the board breaks equal Dynascores by (compared as text): a client that re-ranks orders "
        "ties the same way. Stable for the model's life; not an id to pass back."
    )
    rank: int | None = strawberry.field(description="Null for a model with a gap in a weighted metric.")
    dynascore: float | None = strawberry.field(
        description="Its Dynascore with the board's weights, higher is better; null with a gap in a weighted metric."
    )
    metrics: list[LeaderboardMetric] = strawberry.field(
        description="Its value on every axis of the board, in the order of Leaderboard.metrics."
    )
    missing: list[str] = strawberry.field(description="The metrics this model lacks (shown, not silently dropped).")
    gaps: list[LeaderboardGap] = strawberry.field(
        description="Each scoring set the model lacks figures on, with the axes it lacks there and why (queued, "
        "failed, mostly unusable answers...); empty when it has every figure."
    )
    board_row: strawberry.Private[board_service.BoardRow]

    @strawberry.field(
        description="Its values on each scoring set, weighted or not, in the order of Leaderboard.datasets: with "
        "the axes' exchange rates, what a client needs to re-rank the board for other data-set weights itself."
    )
    def datasets(self, info: Info) -> list[LeaderboardDatasetValues]:
        # built when asked: a board of 200 models on 10 sets has 2,000 of them, which most queries do not read
        return [
            LeaderboardDatasetValues(
                dataset=name, values=[LeaderboardValue(name=axis, value=value) for axis, value in values.items()]
            )
            for name, values in self.board_row.by_dataset.items()
        ]


@strawberry.type(description="A scoring set a model lacks figures on, and why.")
class LeaderboardGap:
    dataset: str = strawberry.field(description="The scoring set, by name (Leaderboard.datasets).")
    metrics: list[str] = strawberry.field(description="The board's axes the model lacks on it.")
    reason: GapReason = strawberry.field(description="Why the figures are missing there, as a code.")
    detail: str = strawberry.field(description="Why, in words (how many answers were unusable, say).")


@strawberry.type(
    description="Published models ranked by a Dynascore computed with the weights asked for. Anyone who can see the "
    "task can compute one."
)
class Leaderboard:
    task_code: str = strawberry.field(description="The task's code.")
    principal_metric: str = strawberry.field(
        description="The task's principal metric: the yardstick of every axis's exchange rate."
    )
    metrics: list[LeaderboardAxis] = strawberry.field(
        description="Every axis of the board, with what a client needs to draw a slider and a legend per axis and to "
        "recompute Dynascores itself as weights move: direction, unit, weight in use and exchange rate."
    )
    memory_budget_gb: float = strawberry.field(
        description="The memory budget a MEMORY axis is oriented against (the budget left scores), in GiB like the "
        "memory axis."
    )
    datasets: list[str] = strawberry.field(
        description="The task's scoring data sets by name (their perturbed copies feed robustness and fairness "
        "instead of being averaged)."
    )
    metric_weights: list[Weight] = strawberry.field(
        description="Every axis's weight as used, normalised to sum 1 (those weighted 0 included); empty while the "
        "task has no scoring data set."
    )
    dataset_weights: list[Weight] = strawberry.field(
        description="The data sets' weights as used, normalised to sum 1; sets weighted 0 or left out of "
        "datasetWeights are not listed."
    )
    amrs_fallback: bool = strawberry.field(
        description="True when fewer than two models differ on the principal metric: every exchange rate is 1."
    )
    rows: list[LeaderboardRow] = strawberry.field(
        description="Every published model: those with a Dynascore, best first (equal scores share a rank), then "
        "those with gaps. With sort: METRIC, by that metric instead, best first and missing values last."
    )
    board: strawberry.Private[board_service.Board]

    @strawberry.field(
        description="Whether each two neighbours among the ranked rows differ by more than chance: McNemar's exact "
        "test on who was right where (by the task's own rule) over the items of the weighted scoring sets that the "
        "board's figures come from (a scoring set's public part until its round ends, its private part after). One "
        "per pair of consecutive ranked rows, best first. Reads every ranked model's outputs item by item: ask for "
        "it when you show it."
    )
    async def adjacent_tests(self, info: Info) -> list[AdjacentTest]:
        ranked = [r.model_id for r in self.board.rows if r.rank is not None]
        weighted = [name for name in self.board.datasets if self.board.dataset_weights.get(name, 0) > 0]
        tests = await per_item_service.adjacent_tests(*info.context.caller, self.task_code, ranked, weighted)
        return [AdjacentTest.of(t) for t in tests]

    @strawberry.field(description="The board as CSV.")
    def csv(self) -> str:
        return board_service.to_csv(self.board)

    @classmethod
    def of(cls, board: board_service.Board) -> Leaderboard:
        return cls(
            task_code=board.task_code,
            principal_metric=board.principal,
            metrics=[
                LeaderboardAxis(
                    name=m.name,
                    description=m.description,
                    direction=MetricDirection(m.direction),
                    unit=m.unit,
                    weight=m.weight,
                    exchange_rate=m.exchange_rate,
                    default_weight=m.default_weight,
                )
                for m in board.metrics
            ],
            memory_budget_gb=board.memory_budget_gb,
            datasets=board.datasets,
            metric_weights=[Weight(name=k, weight=v) for k, v in board.metric_weights.items()],
            dataset_weights=[Weight(name=k, weight=v) for k, v in board.dataset_weights.items()],
            amrs_fallback=board.amrs_fallback,
            rows=[
                LeaderboardRow(
                    model=LeaderboardModel.of(r.model, r.submitter_row),
                    key=str(r.model_id),
                    rank=r.rank,
                    dynascore=r.dynascore,
                    metrics=[
                        LeaderboardMetric(
                            name=m.name,
                            value=m.value,
                            weight=m.weight,
                            interval=Interval(low=m.interval[0], high=m.interval[1]) if m.interval else None,
                        )
                        for m in r.metrics
                    ],
                    missing=r.missing,
                    gaps=[
                        LeaderboardGap(
                            dataset=g.dataset, metrics=g.metrics, reason=GapReason(g.reason), detail=g.detail
                        )
                        for g in r.gaps
                    ],
                    board_row=r,
                )
                for r in board.rows
            ],
            board=board,
        )


@strawberry.type(description="McNemar's exact test between two neighbours on a leaderboard.")
class AdjacentTest:
    upper_key: str = strawberry.field(description="The row ranked above (LeaderboardRow.key).")
    lower_key: str = strawberry.field(description="The row ranked just below it (LeaderboardRow.key).")
    datasets: list[str] = strawberry.field(
        description="The scoring sets both were evaluated on, whose items the test pairs (by name)."
    )
    items: int = strawberry.field(description="How many items were paired (0: none in common, no test).")
    only_upper_right: int = strawberry.field(description="Items only the upper model got right.")
    only_lower_right: int = strawberry.field(description="Items only the lower model got right.")
    p_value: float | None = strawberry.field(
        description="The two-sided exact p-value (1 without a discordant item); null when no item was paired."
    )
    significant: bool = strawberry.field(
        description="Whether p < 0.05: the upper model is right more often than chance alone explains. False also "
        "when the lower one is, or when nothing was paired."
    )

    @classmethod
    def of(cls, test: per_item_service.AdjacentTest) -> AdjacentTest:
        tested = test.test
        items = 0 if tested is None else tested.both + tested.only_first + tested.only_second + tested.neither
        return cls(
            upper_key=str(test.upper),
            lower_key=str(test.lower),
            datasets=test.datasets,
            items=items,
            only_upper_right=0 if tested is None else tested.only_first,
            only_lower_right=0 if tested is None else tested.only_second,
            p_value=None if tested is None else tested.p_value,
            significant=tested is not None and tested.p_value < 0.05 and tested.only_first > tested.only_second,
        )


@strawberry.type(description="One axis of a leaderboard.")
class LeaderboardAxis:
    name: str = strawberry.field(
        description="The metric's name: one of the task's metrics, or throughput, memory, robustness or fairness."
    )
    description: str = strawberry.field(description="What it measures, as its plugin says; may be empty.")
    direction: MetricDirection = strawberry.field(description="Which way is better, and how the Dynascore orients it.")
    unit: str | None = strawberry.field(description="What its values are in (e.g. examples/s, GB); null: a ratio.")
    weight: float = strawberry.field(description="The weight in use, normalised with the others to sum 1.")
    exchange_rate: float | None = strawberry.field(
        description="Its average marginal rate of substitution against the principal metric: a row's Dynascore is "
        "the sum over scored axes of weight x oriented value / exchange rate (oriented: the value; minus it for "
        "LOWER; memoryBudgetGb minus it for MEMORY). Given at weight 0 too: the rate over the same pairs of "
        "models where both have a value on the axis. Null when no model on the board has a value on it."
    )
    default_weight: float = strawberry.field(
        description="The weight the board uses when none is asked for, normalised with the others to sum 1."
    )


@strawberry.type(
    description="Saved leaderboard weights; pass its id as `forkId` to see the board with them. Its author lists it "
    "in myLeaderboardForks; anyone who can see the task can open it by id."
)
class LeaderboardFork(Node):
    name: str = strawberry.field(description="Its name, unique among its author's forks of the task.")
    description: str = strawberry.field(description="What the weights stress, in its author's words; may be empty.")
    metric_weights: list[Weight] = strawberry.field(description="The weights saved, as `leaderboard` takes them.")
    dataset_weights: list[Weight] = strawberry.field(description="The data sets' weights saved (empty: equal).")


@strawberry.type(description="One model's row of a leaderboard snapshot, as it was when the snapshot was taken.")
class SnapshotRow:
    model: Model | None = strawberry.field(description="The model, if it still exists and you may see it.")
    model_name: str = strawberry.field(description="The model's name when the snapshot was taken.")
    submitter: str | None = strawberry.field(description="Its submitter's username then (null: anonymous).")
    rank: int | None = strawberry.field(description="Its rank then; null when it had a gap in a weighted metric.")
    dynascore: float | None = strawberry.field(description="Its Dynascore then; null with a gap in a weighted metric.")
    missing: list[str] = strawberry.field(description="Metrics the model had no value for.")
    metrics: list[LeaderboardMetric] = strawberry.field(
        description="Its value on every axis then, in the board's order."
    )


@strawberry.type(
    description="A leaderboard frozen as it was computed. Its author lists it in myLeaderboardSnapshots; anyone who "
    "can see the task can read it by id."
)
class LeaderboardSnapshot(Node):
    name: str = strawberry.field(description="Its name, as its author gave it.")
    metric_weights: list[Weight] = strawberry.field(description="The metric weights the board was computed with.")
    dataset_weights: list[Weight] = strawberry.field(description="The data set weights it was computed with.")
    created_at: datetime = strawberry.field(description="When it was taken (UTC).")
    task_id: strawberry.Private[int]
    stored_rows: strawberry.Private[list[Any]]

    @strawberry.field(description="The board's rows, best first, as they were.")
    async def rows(self, info: Info) -> list[SnapshotRow]:
        visible = await submission_service.visible_models(
            *info.context.caller, self.task_id, [int(r["model_id"]) for r in self.stored_rows]
        )
        out = []
        for r in self.stored_rows:
            found = visible.get(int(r["model_id"]))
            model = None if found is None else Model.from_row(*found)
            out.append(
                SnapshotRow(
                    model=model,
                    model_name=str(r.get("model", "")),
                    submitter=r.get("submitter"),
                    rank=r.get("rank"),
                    dynascore=r.get("dynascore"),
                    missing=list(r.get("missing") or []),
                    metrics=[
                        LeaderboardMetric(
                            name=m["name"],
                            value=m.get("value"),
                            weight=float(m.get("weight") or 0.0),
                            interval=Interval(low=m["interval"][0], high=m["interval"][1])
                            if m.get("interval")
                            else None,
                        )
                        for m in r.get("metrics") or []
                    ],
                )
            )
        return out


def _fork(row) -> LeaderboardFork:
    return LeaderboardFork(
        id=global_id("LeaderboardFork", row.id),
        name=row.name,
        description=row.description,
        metric_weights=_weight_list(row.metric_weights),
        dataset_weights=_weight_list(row.dataset_weights),
    )


def _weight_list(stored: Any) -> list[Weight]:
    return [Weight(name=str(k), weight=float(v)) for k, v in (stored or {}).items()]


@strawberry.input(description="The leaderboard fork to delete.")
class DeleteLeaderboardForkInput:
    id: strawberry.ID = strawberry.field(description="The fork's id (LeaderboardFork.id).")


@strawberry.input(description="The leaderboard snapshot to delete.")
class DeleteLeaderboardSnapshotInput:
    id: strawberry.ID = strawberry.field(description="The snapshot's id (LeaderboardSnapshot.id).")


@strawberry.type(description="The fork or snapshot is gone.")
class LeaderboardItemDeleted:
    id: strawberry.ID = strawberry.field(description="The id the deleted fork or snapshot had.")


DeleteLeaderboardForkResult = Annotated[
    LeaderboardItemDeleted | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "DeleteLeaderboardForkResult",
        description="The deleted fork's id, or why not: a bad id, not signed in, neither its author nor an admin "
        "(Forbidden), or no fork you can see by that id.",
    ),
]
DeleteLeaderboardSnapshotResult = Annotated[
    LeaderboardItemDeleted | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "DeleteLeaderboardSnapshotResult",
        description="The deleted snapshot's id, or why not: a bad id, not signed in, neither its author nor an "
        "admin (Forbidden), or no snapshot you can see by that id.",
    ),
]


def _snapshot(row) -> LeaderboardSnapshot:
    return LeaderboardSnapshot(
        id=global_id("LeaderboardSnapshot", row.id),
        name=row.name,
        metric_weights=_weight_list(row.metric_weights),
        dataset_weights=_weight_list(row.dataset_weights),
        stored_rows=list(row.rows or []),
        task_id=row.task_id,
        created_at=as_utc(row.created_at),
    )


def _sort(sort: LeaderboardSort, metric: str | None) -> str | None:
    """The service's ``sort``: None for the Dynascore, else the metric's name (which must be given)."""
    if sort is LeaderboardSort.METRIC:
        if not metric:
            raise DomainInvalidInput.from_errors(
                [DomainFieldError("sortMetric", "required", "name the metric to sort by (sort: METRIC)")]
            )
        return metric
    if metric is not None:
        raise DomainInvalidInput.from_errors(
            [DomainFieldError("sortMetric", "unused", "sortMetric applies only with sort: METRIC")]
        )
    return None


def _pairs(weights: list[WeightInput] | None) -> list[tuple[str, float]] | None:
    return None if weights is None else [(w.name, w.weight) for w in weights]


@strawberry.input(description="Leaderboard weights to save as a fork.")
class SaveLeaderboardForkInput:
    task_code: str = strawberry.field(description="The code of the task whose board it is.")
    name: str = strawberry.field(
        description="1 to 100 characters; a fork's must differ from your other forks' on the task."
    )
    description: str = strawberry.field(
        default="",
        description="What the weights stress, at most 2000 characters; saved with a fork, unused by a snapshot.",
    )
    metric_weights: list[WeightInput] | None = strawberry.field(
        default=None,
        description="Weights of the board's axes by name; axes left out keep their default (4 on the principal "
        "metric, 1 on the others). Null: every default.",
    )
    dataset_weights: list[WeightInput] | None = strawberry.field(
        default=None,
        description="Weights of the scoring data sets by name; sets left out do not count. Null: every set, equally.",
    )


@strawberry.input(description="Leaderboard weights to freeze a snapshot with.")
class SnapshotLeaderboardInput(SaveLeaderboardForkInput):
    pass


@strawberry.type(description="The fork was saved; its id opens the board with its weights.")
class LeaderboardForkSaved:
    fork: LeaderboardFork = strawberry.field(description="The saved fork.")


@strawberry.type(description="The board was computed and frozen as it is now.")
class LeaderboardSnapshotted:
    snapshot: LeaderboardSnapshot = strawberry.field(description="The snapshot taken.")


SaveLeaderboardForkResult = Annotated[
    LeaderboardForkSaved | InvalidInput | NotAuthenticated | NotFound | AlreadyExists,
    strawberry.union(
        "SaveLeaderboardForkResult",
        description="The saved fork, or why not: a bad name or weight, not signed in, no such task, or you have a "
        "fork of that name on the task already.",
    ),
]


SnapshotLeaderboardResult = Annotated[
    LeaderboardSnapshotted | InvalidInput | NotAuthenticated | NotFound,
    strawberry.union(
        "SnapshotLeaderboardResult",
        description="The snapshot taken, or why not: a bad name or weight, not signed in, or no such task.",
    ),
]


@task_list("leaderboard")
async def leaderboard_of(
    info: Info,
    task_code: str,
    metric_weights: list[WeightInput] | None,
    dataset_weights: list[WeightInput] | None,
    sort: LeaderboardSort,
    sort_metric: str | None,
    fork_id: strawberry.ID | None,
) -> Leaderboard:
    """Task.leaderboard (and the deprecated root field)."""
    board = await board_service.compute(
        *info.context.caller,
        task_code,
        metric_weights=_pairs(metric_weights),
        dataset_weights=_pairs(dataset_weights),
        sort=_sort(sort, sort_metric),
        fork_id=None if fork_id is None else parse_id(fork_id, "forkId", "LeaderboardFork"),
    )
    return Leaderboard.of(board)


@task_list("viewerLeaderboardForks")
async def forks_of(
    info: Info, task_code: str, first: int | None, after: str | None, last: int | None, before: str | None
) -> Connection[LeaderboardFork]:
    """Task.viewerLeaderboardForks (and the deprecated root field)."""
    listing = await board_service.my_forks(
        *info.context.caller, task_code, first=first, after=after, last=last, before=before
    )
    return Connection.from_listing(listing, _fork)


@task_list("viewerLeaderboardSnapshots")
async def snapshots_of(
    info: Info, task_code: str, first: int | None, after: str | None, last: int | None, before: str | None
) -> Connection[LeaderboardSnapshot]:
    """Task.viewerLeaderboardSnapshots (and the deprecated root field)."""
    listing = await board_service.my_snapshots(
        *info.context.caller, task_code, first=first, after=after, last=last, before=before
    )
    return Connection.from_listing(listing, _snapshot)


@strawberry.type
class LeaderboardQuery:
    @strawberry.field(
        description="A task's published models ranked by a Dynascore with your weights (default: 4 on "
        "the principal metric, 1 on throughput, memory, robustness and fairness, 0 on an axis no model has a figure "
        "for yet, such as fairness on a task without fairness copies; data sets equal).",
        deprecation_reason="Use Task.leaderboard (task(code:) { ... }).",
    )
    @errors_as_graphql
    async def leaderboard(
        self,
        info: Info,
        task_code: TaskCode,
        metric_weights: MetricWeights = None,
        dataset_weights: DatasetWeights = None,
        sort: Sort = LeaderboardSort.DYNASCORE,
        sort_metric: SortMetric = None,
        fork_id: ForkId = None,
    ) -> Leaderboard | None:
        return await leaderboard_of(info, task_code, metric_weights, dataset_weights, sort, sort_metric, fork_id)

    @strawberry.field(
        description="The leaderboard forks you saved on a task, newest first. Signed-in users.",
        deprecation_reason="Use Task.viewerLeaderboardForks (task(code:) { ... }).",
    )
    @errors_as_graphql
    async def my_leaderboard_forks(
        self,
        info: Info,
        task_code: TaskCode,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[LeaderboardFork] | None:
        return await forks_of(info, task_code, first, after, last, before)

    @strawberry.field(
        description="The leaderboard snapshots you took of a task, newest first. Signed-in users.",
        deprecation_reason="Use Task.viewerLeaderboardSnapshots (task(code:) { ... }).",
    )
    @errors_as_graphql
    async def my_leaderboard_snapshots(
        self,
        info: Info,
        task_code: TaskCode,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[LeaderboardSnapshot] | None:
        return await snapshots_of(info, task_code, first, after, last, before)

    @strawberry.field(
        description="A frozen leaderboard, for anyone who can see its task; null when there is none you can see."
    )
    @errors_as_null
    async def leaderboard_snapshot(
        self, info: Info, id: Annotated[strawberry.ID, strawberry.argument(description="The snapshot's id.")]
    ) -> LeaderboardSnapshot | None:
        return _snapshot(
            await board_service.get_snapshot(*info.context.caller, parse_id(id, "id", "LeaderboardSnapshot"))
        )


@strawberry.type
class LeaderboardMutation:
    @strawberry.mutation(description="Delete one of your leaderboard forks (admins: anyone's).")
    @errors_as_union
    async def delete_leaderboard_fork(
        self,
        info: Info,
        input: Annotated[DeleteLeaderboardForkInput, strawberry.argument(description="Which fork to delete.")],
    ) -> DeleteLeaderboardForkResult:
        row = await board_service.delete_fork(*info.context.caller, parse_id(input.id, "id", "LeaderboardFork"))
        return LeaderboardItemDeleted(id=global_id("LeaderboardFork", row.id))

    @strawberry.mutation(description="Delete one of your leaderboard snapshots (admins: anyone's).")
    @errors_as_union
    async def delete_leaderboard_snapshot(
        self,
        info: Info,
        input: Annotated[DeleteLeaderboardSnapshotInput, strawberry.argument(description="Which snapshot to delete.")],
    ) -> DeleteLeaderboardSnapshotResult:
        row = await board_service.delete_snapshot(*info.context.caller, parse_id(input.id, "id", "LeaderboardSnapshot"))
        return LeaderboardItemDeleted(id=global_id("LeaderboardSnapshot", row.id))

    @strawberry.mutation(description="Save leaderboard weights under a name (a fork others can open by its id).")
    @errors_as_union
    async def save_leaderboard_fork(
        self,
        info: Info,
        input: Annotated[SaveLeaderboardForkInput, strawberry.argument(description="The fork's name and weights.")],
    ) -> SaveLeaderboardForkResult:
        row = await board_service.save_fork(
            *info.context.caller,
            input.task_code,
            input.name,
            metric_weights=dict(_pairs(input.metric_weights) or []) or None,
            dataset_weights=dict(_pairs(input.dataset_weights) or []) or None,
            description=input.description,
        )
        return LeaderboardForkSaved(fork=_fork(row))

    @strawberry.mutation(description="Freeze the leaderboard as it is now with these weights.")
    @errors_as_union
    async def snapshot_leaderboard(
        self,
        info: Info,
        input: Annotated[
            SnapshotLeaderboardInput, strawberry.argument(description="The snapshot's name and the weights to use.")
        ],
    ) -> SnapshotLeaderboardResult:
        row = await board_service.snapshot(
            *info.context.caller,
            input.task_code,
            input.name,
            metric_weights=dict(_pairs(input.metric_weights) or []) or None,
            dataset_weights=dict(_pairs(input.dataset_weights) or []) or None,
        )
        return LeaderboardSnapshotted(snapshot=_snapshot(row))
