"""Model evaluation resolvers: data sets, submissions and their evaluations."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Annotated, Any

import strawberry
from strawberry.file_uploads import Upload
from strawberry.scalars import JSON

from dynaforge.api.context import RequestContext
from dynaforge.api.contexts import binary_upload
from dynaforge.api.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    RateLimited,
    errors_as_graphql,
    errors_as_null,
    errors_as_union,
)
from dynaforge.api.node import Node, global_id, parse_id
from dynaforge.api.types.example import PageInfo
from dynaforge.api.types.task import Task
from dynaforge.api.types.user import User
from dynaforge.db.models import Dataset as DatasetRow
from dynaforge.db.models import Evaluation as EvaluationRow
from dynaforge.db.models import ModelRow, as_utc
from dynaforge.services import auth as auth_service
from dynaforge.services import datasets as dataset_service
from dynaforge.services import leaderboard as board_service
from dynaforge.services import submissions as submission_service
from dynaforge.services import tasks as task_service

Info = strawberry.Info[RequestContext]


@strawberry.type(description="A frozen set of a task's examples that models are evaluated on.")
class Dataset(Node):
    row: strawberry.Private[DatasetRow]
    id: strawberry.ID
    name: str
    description: str
    access: str = strawberry.field(description="SCORING (on the leaderboard), STANDARD (downloadable) or HIDDEN.")
    source: str = strawberry.field(description="round, upload (an owner's file) or perturbed (made by the platform).")
    split: str | None
    perturbation: str | None
    perturbation_kind: str | None = strawberry.field(description="robustness or fairness, for a perturbed copy.")
    size: int
    created_at: datetime

    @strawberry.field(description="A perturbed copy: the data set it was made from; null for any other set.")
    async def parent(self, info: Info) -> Dataset | None:
        if self.row.parent_id is None:
            return None
        row, _ = await dataset_service.get_dataset(*info.context.caller, self.row.parent_id)
        return Dataset.from_row(row)

    @classmethod
    def from_row(cls, row: DatasetRow) -> Dataset:
        return cls(
            row=row,
            id=global_id("Dataset", row.id),
            name=row.name,
            description=row.description,
            access=row.access,
            source=row.source,
            split=row.split,
            perturbation=row.perturbation,
            perturbation_kind=row.perturbation_kind,
            size=row.size,
            created_at=as_utc(row.created_at),
        )


@strawberry.type(description="One item of a data set; gold targets only where you may see them.")
class DatasetItem(Node):
    id: strawberry.ID
    position: int
    original_position: int | None = strawberry.field(
        description="A perturbed copy's item: the position of the item of the original set it was made from."
    )
    fields: JSON


@strawberry.type
class DatasetItemPage:
    items: list[DatasetItem]
    gold_visible: bool = strawberry.field(
        description="False: the target fields were left out (a scoring or hidden set)."
    )
    next_after: int | None = strawberry.field(description="Pass as `after` for the next page; null at the end.")


@strawberry.type(description="One model on one data set.")
class Evaluation(Node):
    row: strawberry.Private[EvaluationRow]
    privileged: strawberry.Private[bool]
    id: strawberry.ID
    dataset: Dataset
    status: str = strawberry.field(description="QUEUED, RUNNING, DONE or FAILED.")
    progress: float
    metrics: JSON
    throughput: float | None = strawberry.field(description="Examples per second, model loading excluded.")
    memory_mb: float | None = strawberry.field(description="Peak memory above the baseline taken before loading.")

    @strawberry.field(description="Why it failed (the submitter, owners and admins).")
    def error(self) -> str | None:
        return self.row.error if self.privileged else None

    @strawberry.field(description="The end of the job's log (the submitter, owners and admins).")
    def log_tail(self) -> str | None:
        return self.row.log_tail if self.privileged else None

    @classmethod
    def of(cls, row: EvaluationRow, dataset: DatasetRow, privileged: bool) -> Evaluation:
        return cls(
            row=row,
            id=global_id("Evaluation", row.id),
            privileged=privileged,
            dataset=Dataset.from_row(dataset),
            status=row.status,
            progress=row.progress,
            metrics=JSON(row.metrics),
            throughput=row.throughput,
            memory_mb=row.memory_mb,
        )


@strawberry.type(description="A model submitted to a task's leaderboard.")
class Model(Node):
    row: strawberry.Private[ModelRow]
    privileged: strawberry.Private[bool]
    id: strawberry.ID
    name: str
    backend: str | None
    card: JSON = strawberry.field(description="parameters, license, paper, description, training_data.")
    published: bool
    anonymous: bool
    status: str
    created_at: datetime

    @strawberry.field(
        description="The backend configuration (the submitter, owners and admins; it may hold credentials)."
    )
    def config(self) -> JSON | None:
        return JSON(self.row.config) if self.privileged else None

    #: The submitter's row when the caller already read it (a leaderboard reads every row's at once).
    known_submitter: strawberry.Private[Any] = None
    submitter_known: strawberry.Private[bool] = False

    @strawberry.field(description="Who submitted it; null for an anonymous model unless you may see everything.")
    def submitter(self, info: Info) -> User | None:
        if self.row.anonymous and not self.privileged:
            return None
        if self.submitter_known:
            return None if self.known_submitter is None else User.from_row(self.known_submitter)
        # An awaitable that GraphQL waits for: a sync resolver returning one spares the rows whose submitter is
        # known a coroutine each.
        return _submitter(info, self.row.user_id)  # type: ignore[return-value]

    @strawberry.field(description="The task it was submitted to.")
    async def task(self, info: Info) -> Task:
        code = await info.context.loaders["task_code"].load(self.row.task_id)
        return Task.from_view(await task_service.get_task(*info.context.caller, code))

    @strawberry.field
    async def evaluations(self, info: Info) -> list[Evaluation]:
        pairs = await submission_service.evaluations_of(info.context.platform, self.row.id)
        return [Evaluation.of(e, d, self.privileged) for e, d in pairs]

    @classmethod
    def from_row(cls, row: ModelRow, privileged: bool, **known: Any) -> Model:
        """``submitter=`` passes the submitter's User row when it was read already (None: anonymous or gone)."""
        return cls(
            row=row,
            privileged=privileged,
            id=global_id("Model", row.id),
            name=row.name,
            backend=row.backend,
            card=JSON(row.card),
            published=row.published,
            anonymous=row.anonymous,
            status=row.status,
            created_at=as_utc(row.created_at),
            known_submitter=known.get("submitter"),
            submitter_known="submitter" in known,
        )


async def _submitter(info: Info, user_id: int) -> User | None:
    user = await auth_service.get_user(info.context.platform, user_id)
    return None if user is None else User.from_row(user)


@strawberry.input(description="What a model card says; every field is optional.")
class ModelCardInput:
    parameters: int | None = None
    license: str | None = None
    paper: str | None = None
    description: str | None = None
    training_data: str | None = None


@strawberry.input
class SubmitModelInput:
    task_code: str
    name: str
    backend: str = strawberry.field(description="A registered backend: python, transformers, http, ...")
    config: JSON = strawberry.field(description="The backend's configuration (see docs/model-server.md).")
    card: ModelCardInput | None = None
    published: bool = False
    anonymous: bool = False


@strawberry.input(description="What to change on a model; fields left out stay as they are.")
class UpdateModelInput:
    id: strawberry.ID
    name: str | None = None
    published: bool | None = strawberry.field(
        default=None, description="true puts it on the leaderboard; false takes it off (it stays yours)."
    )
    anonymous: bool | None = strawberry.field(
        default=None, description="true hides your name from everyone but the task's owners and admins."
    )
    card: ModelCardInput | None = strawberry.field(default=None, description="Replaces the whole card.")


@strawberry.input
class DeleteModelInput:
    id: strawberry.ID


@strawberry.input
class SubmitPredictionsInput:
    task_code: str
    name: str
    dataset_name: str = strawberry.field(description="A data set you can see (the datasets query lists them).")
    predictions: list[JSON] = strawberry.field(
        description="One output per item, in the order of datasetItems, shaped like a model server's output."
    )
    card: ModelCardInput | None = None
    published: bool = False
    anonymous: bool = False


@strawberry.input
class CreateRoundDatasetsInput:
    task_code: str
    round_number: int
    seed: int = 0


@strawberry.input(
    description="An owner's own perturbed copy of a scoring data set, as a JSONL file: one object per "
    "line with original_position (the item it was made from) and the task's fields; target fields "
    "left out are copied from the original."
)
class UploadPerturbedCopyInput:
    dataset_id: strawberry.ID
    perturbation: str = strawberry.field(description="Its name, e.g. dialect-rewrite; the copy is named {set}~{name}.")
    kind: str = strawberry.field(description="robustness or fairness: which figure the copy's consistency counts to.")
    file: Upload = strawberry.field(description="The JSONL file, sent as a GraphQL multipart request.")
    replace: bool = strawberry.field(default=False, description="Put it in place of a copy of the same name.")
    description: str = ""


@strawberry.type(description="The model was stored and its evaluations queued.")
class SubmittedModel:
    model: Model


@strawberry.type(description="The model as it is now.")
class UpdatedModel:
    model: Model


@strawberry.type(description="The model and its evaluations are gone.")
class DeletedModel:
    id: strawberry.ID


@strawberry.type
class ModelEdge:
    node: Model
    cursor: str


@strawberry.type(
    description="A page of a task's models, newest first; pass pageInfo.endCursor as `after` for the next."
)
class ModelConnection:
    edges: list[ModelEdge]
    page_info: PageInfo


@strawberry.type(description="The round's accepted examples became train, dev and test data sets.")
class DatasetsCreated:
    datasets: list[Dataset]


SubmitModelResult = Annotated[
    SubmittedModel | InvalidInput | NotAuthenticated | NotFound | RateLimited, strawberry.union("SubmitModelResult")
]
UpdateModelResult = Annotated[
    UpdatedModel | InvalidInput | NotAuthenticated | Forbidden | NotFound, strawberry.union("UpdateModelResult")
]
DeleteModelResult = Annotated[
    DeletedModel | InvalidInput | NotAuthenticated | Forbidden | NotFound | Conflict,
    strawberry.union("DeleteModelResult"),
]
UploadPerturbedCopyResult = Annotated[
    DatasetsCreated | InvalidInput | NotAuthenticated | Forbidden | NotFound | AlreadyExists,
    strawberry.union("UploadPerturbedCopyResult"),
]
CreateRoundDatasetsResult = Annotated[
    DatasetsCreated | InvalidInput | NotAuthenticated | Forbidden | NotFound | AlreadyExists,
    strawberry.union("CreateRoundDatasetsResult"),
]


@strawberry.input(description="A weight for a metric or a data set of the leaderboard.")
class WeightInput:
    name: str
    weight: float


@strawberry.type
class Weight:
    name: str
    weight: float = strawberry.field(description="Normalised: the weights of a board add up to 1.")


@strawberry.type
class LeaderboardMetric:
    name: str
    value: float | None = strawberry.field(description="Averaged over the scoring data sets; null: missing.")
    weight: float
    interval: list[float] | None = strawberry.field(
        description="Bootstrap 95% interval (principal metric, one data set)."
    )


@strawberry.type
class LeaderboardRow:
    model: Model
    rank: int | None = strawberry.field(description="Null for a model with a gap in a weighted metric.")
    dynascore: float | None
    metrics: list[LeaderboardMetric]
    missing: list[str] = strawberry.field(description="The metrics this model lacks (shown, not silently dropped).")


@strawberry.type(description="Published models ranked by a Dynascore computed with the weights asked for.")
class Leaderboard:
    task_code: str
    principal_metric: str
    metrics: list[LeaderboardAxis] = strawberry.field(
        description="Every axis of the board, with what a client needs to draw a slider and a legend per axis and to "
        "recompute Dynascores itself as weights move: direction, unit, weight in use and exchange rate."
    )
    memory_budget_gb: float = strawberry.field(
        description="The memory budget a MEMORY axis is oriented against (the budget left scores)."
    )
    datasets: list[str]
    metric_weights: list[Weight]
    dataset_weights: list[Weight]
    amrs_fallback: bool = strawberry.field(
        description="True when fewer than two models differ on the principal metric: every exchange rate is 1."
    )
    rows: list[LeaderboardRow]
    board: strawberry.Private[board_service.Board]

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
                    model=Model.from_row(r.model, privileged=False, submitter=r.submitter_row),
                    rank=r.rank,
                    dynascore=r.dynascore,
                    metrics=[
                        LeaderboardMetric(
                            name=m.name,
                            value=m.value,
                            weight=m.weight,
                            interval=list(m.interval) if m.interval else None,
                        )
                        for m in r.metrics
                    ],
                    missing=r.missing,
                )
                for r in board.rows
            ],
            board=board,
        )


@strawberry.enum(description="Which way a metric is better, and how the Dynascore orients it.")
class MetricDirection(Enum):
    HIGHER = strawberry.enum_value("higher", description="Higher is better (accuracy, throughput, ...).")
    LOWER = strawberry.enum_value("lower", description="Lower is better (an error rate): oriented as -x.")
    MEMORY = strawberry.enum_value("memory", description="Memory in GB: oriented as the budget left, budget - x.")


@strawberry.type(description="One axis of a leaderboard.")
class LeaderboardAxis:
    name: str
    description: str
    direction: MetricDirection
    unit: str | None = strawberry.field(description="What its values are in (e.g. examples/s, GB); null: a ratio.")
    weight: float = strawberry.field(description="The weight in use, normalised with the others to sum 1.")
    exchange_rate: float | None = strawberry.field(
        description="Its average marginal rate of substitution against the principal metric: a row's Dynascore is "
        "the sum over scored axes of weight x oriented value / exchange rate (oriented: the value; minus it for "
        "LOWER; memoryBudgetGb minus it for MEMORY). Null when the axis is not scored (weight 0)."
    )


@strawberry.type(description="Saved leaderboard weights; pass its id as `forkId` to see the board with them.")
class LeaderboardFork(Node):
    id: strawberry.ID
    name: str
    description: str
    metric_weights: JSON
    dataset_weights: JSON


@strawberry.type(description="A leaderboard frozen as it was computed.")
class LeaderboardSnapshot(Node):
    id: strawberry.ID
    name: str
    metric_weights: JSON
    dataset_weights: JSON
    rows: JSON
    created_at: datetime


def _fork(row) -> LeaderboardFork:
    return LeaderboardFork(
        id=global_id("LeaderboardFork", row.id),
        name=row.name,
        description=row.description,
        metric_weights=JSON(row.metric_weights),
        dataset_weights=JSON(row.dataset_weights),
    )


@strawberry.input
class DeleteLeaderboardItemInput:
    id: strawberry.ID


@strawberry.type(description="The fork or snapshot is gone.")
class LeaderboardItemDeleted:
    id: strawberry.ID


DeleteLeaderboardItemResult = Annotated[
    LeaderboardItemDeleted | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union("DeleteLeaderboardItemResult"),
]


def _snapshot(row) -> LeaderboardSnapshot:
    return LeaderboardSnapshot(
        id=global_id("LeaderboardSnapshot", row.id),
        name=row.name,
        metric_weights=row.metric_weights,
        dataset_weights=row.dataset_weights,
        rows=row.rows,
        created_at=as_utc(row.created_at),
    )


def _pairs(weights: list[WeightInput] | None) -> list[tuple[str, float]] | None:
    return None if weights is None else [(w.name, w.weight) for w in weights]


@strawberry.input
class LeaderboardWeightsInput:
    task_code: str
    name: str
    description: str = ""
    metric_weights: list[WeightInput] | None = None
    dataset_weights: list[WeightInput] | None = None


@strawberry.type
class LeaderboardForkSaved:
    fork: LeaderboardFork


@strawberry.type
class LeaderboardSnapshotted:
    snapshot: LeaderboardSnapshot


SaveForkResult = Annotated[
    LeaderboardForkSaved | InvalidInput | NotAuthenticated | NotFound | AlreadyExists,
    strawberry.union("SaveLeaderboardForkResult"),
]
SnapshotResult = Annotated[
    LeaderboardSnapshotted | InvalidInput | NotAuthenticated | NotFound, strawberry.union("SnapshotLeaderboardResult")
]


@strawberry.type
class EvaluationQuery:
    @strawberry.field(
        description="A task's published models ranked by a Dynascore with your weights (default: 4 on "
        "the principal metric, 1 on throughput, memory, robustness and fairness; data sets equal)."
    )
    @errors_as_graphql
    async def leaderboard(
        self,
        info: Info,
        task_code: str,
        metric_weights: list[WeightInput] | None = None,
        dataset_weights: list[WeightInput] | None = None,
        sort: str | None = None,
        fork_id: strawberry.ID | None = None,
    ) -> Leaderboard:
        board = await board_service.compute(
            *info.context.caller,
            task_code,
            metric_weights=_pairs(metric_weights),
            dataset_weights=_pairs(dataset_weights),
            sort=sort,
            fork_id=None if fork_id is None else parse_id(fork_id, "forkId", "LeaderboardFork"),
        )
        return Leaderboard.of(board)

    @strawberry.field(description="The leaderboard forks you saved on a task, newest first.")
    @errors_as_graphql
    async def my_leaderboard_forks(self, info: Info, task_code: str) -> list[LeaderboardFork]:
        return [_fork(r) for r in await board_service.my_forks(*info.context.caller, task_code)]

    @strawberry.field(description="The leaderboard snapshots you took of a task, newest first.")
    @errors_as_graphql
    async def my_leaderboard_snapshots(self, info: Info, task_code: str) -> list[LeaderboardSnapshot]:
        return [_snapshot(r) for r in await board_service.my_snapshots(*info.context.caller, task_code)]

    @strawberry.field(description="A frozen leaderboard.")
    @errors_as_null
    async def leaderboard_snapshot(self, info: Info, id: strawberry.ID) -> LeaderboardSnapshot | None:
        return _snapshot(
            await board_service.get_snapshot(*info.context.caller, parse_id(id, "id", "LeaderboardSnapshot"))
        )

    @strawberry.field(
        description="A submitted model: published ones for everyone, the others for their submitter, "
        "the task's owners and admins; null otherwise."
    )
    @errors_as_null
    async def model(self, info: Info, id: strawberry.ID) -> Model | None:
        row, privileged = await submission_service.get_model(*info.context.caller, parse_id(id, "id", "Model"))
        return Model.from_row(row, privileged)

    @strawberry.field(
        description="A task's models, newest first: published ones for everyone who can see the task, and your own; "
        "every one for its owners and admins. `mine` narrows to yours, `published` to published (true) or "
        "unpublished (false) ones."
    )
    @errors_as_graphql
    async def models(
        self,
        info: Info,
        task_code: str,
        mine: bool = False,
        published: bool | None = None,
        first: int = 20,
        after: str | None = None,
    ) -> ModelConnection:
        page = await submission_service.list_models(
            *info.context.caller, task_code, mine=mine, published=published, first=first, after=after
        )
        edges = [
            ModelEdge(node=Model.from_row(row, privileged), cursor=submission_service.encode_model_cursor(row.id))
            for row, privileged in page.items
        ]
        return ModelConnection(
            edges=edges,
            page_info=PageInfo(has_next_page=page.has_next, end_cursor=edges[-1].cursor if edges else None),
        )

    @strawberry.field(description="A task's data sets (hidden ones for owners and admins).")
    @errors_as_graphql
    async def datasets(self, info: Info, task_code: str) -> list[Dataset]:
        return [Dataset.from_row(r) for r in await dataset_service.list_datasets(*info.context.caller, task_code)]

    @strawberry.field(description="A page of a data set's items, in order.")
    @errors_as_graphql
    async def dataset_items(
        self, info: Info, id: strawberry.ID, first: int = 100, after: int | None = None
    ) -> DatasetItemPage:
        dataset_id = parse_id(id, "id", "Dataset")
        page = await dataset_service.items(*info.context.caller, dataset_id, first=first, after=after)
        return DatasetItemPage(
            items=[
                DatasetItem(
                    id=global_id("DatasetItem", f"{dataset_id}:{i.position}"),
                    position=i.position,
                    original_position=i.original_position,
                    fields=JSON(i.fields),
                )
                for i in page.items
            ],
            gold_visible=page.gold_visible,
            next_after=page.next_position,
        )


def _card(card: ModelCardInput | None) -> dict[str, Any] | None:
    return None if card is None else {k: v for k, v in vars(card).items() if v is not None}


@strawberry.type
class EvaluationMutation:
    @strawberry.mutation(description="Delete one of your leaderboard forks (admins: anyone's).")
    @errors_as_union
    async def delete_leaderboard_fork(
        self, info: Info, input: DeleteLeaderboardItemInput
    ) -> DeleteLeaderboardItemResult:
        row = await board_service.delete_fork(*info.context.caller, parse_id(input.id, "id", "LeaderboardFork"))
        return LeaderboardItemDeleted(id=global_id("LeaderboardFork", row.id))

    @strawberry.mutation(description="Delete one of your leaderboard snapshots (admins: anyone's).")
    @errors_as_union
    async def delete_leaderboard_snapshot(
        self, info: Info, input: DeleteLeaderboardItemInput
    ) -> DeleteLeaderboardItemResult:
        row = await board_service.delete_snapshot(*info.context.caller, parse_id(input.id, "id", "LeaderboardSnapshot"))
        return LeaderboardItemDeleted(id=global_id("LeaderboardSnapshot", row.id))

    @strawberry.mutation(description="Save leaderboard weights under a name (a fork others can open by its id).")
    @errors_as_union
    async def save_leaderboard_fork(self, info: Info, input: LeaderboardWeightsInput) -> SaveForkResult:
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
    async def snapshot_leaderboard(self, info: Info, input: LeaderboardWeightsInput) -> SnapshotResult:
        row = await board_service.snapshot(
            *info.context.caller,
            input.task_code,
            input.name,
            metric_weights=dict(_pairs(input.metric_weights) or []) or None,
            dataset_weights=dict(_pairs(input.dataset_weights) or []) or None,
        )
        return LeaderboardSnapshotted(snapshot=_snapshot(row))

    @strawberry.mutation(description="Submit a model to a task: it is evaluated on every scoring data set.")
    @errors_as_union
    async def submit_model(self, info: Info, input: SubmitModelInput) -> SubmitModelResult:
        model, _ = await submission_service.submit_model(
            *info.context.caller,
            task_code=input.task_code,
            name=input.name,
            backend=input.backend,
            config=input.config,
            card=_card(input.card),
            published=input.published,
            anonymous=input.anonymous,
        )
        return SubmittedModel(model=Model.from_row(model, privileged=True))

    @strawberry.mutation(
        description="Its submitter (or an admin) renames a model, publishes it or takes it off the leaderboard, "
        "shows or hides their name, or replaces its card."
    )
    @errors_as_union
    async def update_model(self, info: Info, input: UpdateModelInput) -> UpdateModelResult:
        row = await submission_service.update_model(
            *info.context.caller,
            parse_id(input.id, "id", "Model"),
            name=input.name,
            published=input.published,
            anonymous=input.anonymous,
            card=_card(input.card) if input.card is not None else None,
        )
        return UpdatedModel(model=Model.from_row(row, privileged=True))

    @strawberry.mutation(
        description="Its submitter (or an admin) deletes a model and its evaluations; refused while an evaluation "
        "is running."
    )
    @errors_as_union
    async def delete_model(self, info: Info, input: DeleteModelInput) -> DeleteModelResult:
        row = await submission_service.delete_model(*info.context.caller, parse_id(input.id, "id", "Model"))
        return DeletedModel(id=global_id("Model", row.id))

    @strawberry.mutation(
        description="Upload predictions for one data set instead of a model: scored at once, "
        "not measured for speed or memory."
    )
    @errors_as_union
    async def submit_predictions(self, info: Info, input: SubmitPredictionsInput) -> SubmitModelResult:
        model, _ = await submission_service.submit_predictions(
            *info.context.caller,
            task_code=input.task_code,
            name=input.name,
            dataset_name=input.dataset_name,
            predictions=list(input.predictions),
            card=_card(input.card),
            published=input.published,
            anonymous=input.anonymous,
        )
        return SubmittedModel(model=Model.from_row(model, privileged=True))

    @strawberry.mutation(
        description="Owners attach their own perturbed copy of a scoring set (instead of or beside "
        "the platform's); the task's models are evaluated on it and their robustness or fairness "
        "recomputed. All or nothing, problems named by line."
    )
    @errors_as_union
    async def upload_perturbed_copy(self, info: Info, input: UploadPerturbedCopyInput) -> UploadPerturbedCopyResult:
        stream, _ = binary_upload(input.file)
        stream.seek(0)
        platform = info.context.platform
        records = dataset_service.read_jsonl(stream, platform.settings.context_upload_max_bytes)
        copy = await dataset_service.attach_perturbed_copy(
            platform,
            info.context.actor,
            parse_id(input.dataset_id, "datasetId", "Dataset"),
            input.perturbation,
            input.kind,
            records,
            replace=input.replace,
            description=input.description,
        )
        return DatasetsCreated(datasets=[Dataset.from_row(copy)])

    @strawberry.mutation(
        description="Owners turn a round's accepted examples into train/dev/test data sets "
        "(a seeded split; the test set scores models)."
    )
    @errors_as_union
    async def create_round_datasets(self, info: Info, input: CreateRoundDatasetsInput) -> CreateRoundDatasetsResult:
        rows = await dataset_service.build_from_round(
            *info.context.caller, input.task_code, input.round_number, seed=input.seed
        )
        return DatasetsCreated(datasets=[Dataset.from_row(r) for r in rows])
