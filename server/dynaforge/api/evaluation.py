"""Model evaluation resolvers: data sets, submissions and their evaluations."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import strawberry
from strawberry.file_uploads import Upload
from strawberry.scalars import JSON

from dynaforge.api.context import RequestContext
from dynaforge.api.contexts import binary_upload
from dynaforge.api.enums import (
    DatasetAccess,
    DatasetSource,
    EvaluationStatus,
    GapReason,
    LeaderboardSort,
    MetricDirection,
    ModelStatus,
    PerturbationKind,
    ScoredPart,
    raw,
)
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
from dynaforge.api.node import Node, global_id, parse_id, parse_item_key
from dynaforge.api.types import results
from dynaforge.api.types.connection import After, Before, Connection, First, Last
from dynaforge.api.types.results import EvaluationMetric, Hardware, Interval, PerturbationResult, SliceResult
from dynaforge.api.types.task import Task
from dynaforge.api.types.user import User
from dynaforge.db.models import Dataset as DatasetRow
from dynaforge.db.models import DatasetAccess as DatasetAccessRow
from dynaforge.db.models import DatasetItem as DatasetItemRow
from dynaforge.db.models import Evaluation as EvaluationRow
from dynaforge.db.models import EvaluationStatus as EvaluationStatusRow
from dynaforge.db.models import ModelRow, as_utc
from dynaforge.errors import FieldError as DomainFieldError
from dynaforge.errors import InvalidInput as DomainInvalidInput
from dynaforge.services import auth as auth_service
from dynaforge.services import datasets as dataset_service
from dynaforge.services import leaderboard as board_service
from dynaforge.services import submissions as submission_service
from dynaforge.services import tasks as task_service
from dynaforge.services import visibility

Info = strawberry.Info[RequestContext]


@strawberry.type(
    description="A frozen set of a task's examples that models are evaluated on. Anyone who can see the task sees "
    "its SCORING and STANDARD sets; HIDDEN ones only its owners and admins."
)
class Dataset(Node):
    row: strawberry.Private[DatasetRow]
    name: str = strawberry.field(
        description="Unique within the task: r{N}-train, r{N}-dev and r{N}-test for a round's sets, {set}~{name} for "
        "a perturbed copy, the owner's choice for an uploaded set."
    )
    description: str = strawberry.field(description="What the set holds, as its maker wrote it; may be empty.")
    access: DatasetAccess = strawberry.field(
        description="Who sees it and what it is for; a perturbed copy has its original's."
    )
    source: DatasetSource = strawberry.field(description="Where it came from.")
    split: str | None = strawberry.field(
        description="A round's set: its split (train, dev or test), which its perturbed copies share; null for an "
        "uploaded set."
    )
    perturbation: str | None = strawberry.field(
        description="A perturbed copy: the perturbation's name; null for any other set."
    )
    perturbation_kind: PerturbationKind | None = strawberry.field(description="A perturbed copy: what it measures.")
    size: int = strawberry.field(description="How many items it holds.")
    created_at: datetime = strawberry.field(description="When it was made (UTC).")

    @strawberry.field(
        description="A SCORING set (and its perturbed copies): the share of its items whose figures every model "
        "shows before the set's round ends (Evaluation.scoredPart PUBLIC; 1: every item, no private part); null "
        "for other sets."
    )
    def public_share(self, info: Info) -> float | None:
        if self.row.access != DatasetAccessRow.SCORING:
            return None
        return visibility.public_share(self.row, info.context.platform.settings.scoring_public_share)

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
            access=DatasetAccess(row.access),
            source=DatasetSource(row.source),
            split=row.split,
            perturbation=row.perturbation,
            perturbation_kind=None if row.perturbation_kind is None else PerturbationKind(row.perturbation_kind),
            size=row.size,
            created_at=as_utc(row.created_at),
        )


@strawberry.type(description="Why some of a model's answers could not be read, and how many had that reason.")
class UnusableReason:
    reason: str = strawberry.field(description="What the task said of the answer, e.g. that a label is unknown.")
    count: int = strawberry.field(description="How many answers had this reason.")


@strawberry.type(
    description="What a model that writes did over a data set, measured where it ran (its backend streams replies)."
)
class GenerationFigures:
    output_tokens: int = strawberry.field(description="Tokens the model wrote over the set, unusable replies too.")
    tokens_per_second: float | None = strawberry.field(
        description="Tokens written per second of prediction time (model loading excluded)."
    )
    time_to_first_token_ms: float | None = strawberry.field(
        description="The median time from a request to its first token, in milliseconds."
    )
    time_to_first_token_p90_ms: float | None = strawberry.field(
        description="The 90th percentile of the time to first token, in milliseconds."
    )


@strawberry.type(description="One item of a data set; gold targets only where you may see them.")
class DatasetItem(Node):
    position: int = strawberry.field(
        description="Its place in the set, from 0: the order datasetItems lists items in and predictions follow."
    )
    original_position: int | None = strawberry.field(
        description="A perturbed copy's item: the position of the item of the original set it was made from."
    )
    fields: JSON = strawberry.field(
        description="The item's values keyed by field name; its gold fields (the targets and the fields that reveal "
        "them) are left out unless the set is STANDARD or you own the task (or are an admin)."
    )

    @classmethod
    def of(cls, item: DatasetItemRow) -> DatasetItem:
        return cls(
            id=global_id("DatasetItem", f"{item.dataset_id}:{item.position}"),
            position=item.position,
            original_position=item.original_position,
            fields=JSON(item.fields),
        )


@strawberry.type(description="A page of a data set's items in position order, and whether they carry their gold.")
class DatasetItemConnection(Connection[DatasetItem]):
    gold_visible: bool = strawberry.field(
        default=False, description="False: the gold fields were left out (a scoring or hidden set)."
    )


@strawberry.type(
    description="One model on one data set: where the run is and, once DONE, what it measured. Anyone who can see "
    "the model can see its evaluations."
)
class Evaluation(Node):
    row: strawberry.Private[EvaluationRow]
    privileged: strawberry.Private[bool]
    dataset_row: strawberry.Private[DatasetRow]
    dataset: Dataset = strawberry.field(description="The data set the model is evaluated on.")
    status: EvaluationStatus = strawberry.field(description="Where the run is.")
    progress: float = strawberry.field(
        description="The share of the data set's chunks predicted so far, from 0 to 1 (1 once DONE)."
    )

    @strawberry.field(
        description="A QUEUED evaluation: where it waits, 1 being next (1 + the evaluations queued before it that "
        "are queued or running, on every task: the workers are shared); null once it runs."
    )
    async def queue_position(self, info: Info) -> int | None:
        if self.row.status != EvaluationStatusRow.QUEUED:
            return None
        return await info.context.loaders["queue_position"].load(self.row.id)

    throughput: float | None = strawberry.field(
        description="Examples per second, model loading excluded; null until DONE and for uploaded predictions."
    )
    memory_mb: float | None = strawberry.field(
        description="Peak memory above the baseline taken before loading, in megabytes; null until DONE and for "
        "uploaded predictions."
    )

    @strawberry.field(
        description="The task's metrics on the whole set, with robustness and fairness once the set's perturbed "
        "copies are scored; empty until DONE."
    )
    def metrics(self, info: Info) -> list[EvaluationMetric]:
        return results.metrics_of(self.row, info.context.platform.plugins.registry.metrics)

    @strawberry.field(
        description="Which items `metrics` were computed on: the whole set, or (any evaluation on a scoring set or "
        "on a perturbed copy of one) its public part, the same items for every model."
    )
    def scored_part(self) -> ScoredPart:
        return ScoredPart.PUBLIC if (self.row.details or {}).get("part") == "public" else ScoredPart.WHOLE

    @strawberry.field(
        description="An evaluation on a scoring set: the task's metrics on the set's private part, null until the "
        "set's round has ended (or the set stops being a scoring set; the task's owners and admins read them at "
        "any time), and for evaluations without a private part. From then on the leaderboard ranks by them."
    )
    async def private_metrics(self, info: Info) -> list[EvaluationMetric] | None:
        p = info.context.platform
        held = await submission_service.released_private_part(p, info.context.actor, self.row, self.dataset_row)
        if held is None:
            return None
        intervals = (held.get("details") or {}).get("intervals") or {}
        return results.metric_list(held.get("metrics") or {}, intervals, p.plugins.registry.metrics)

    @strawberry.field(description="How many items the private part holds (null when there is none).")
    def private_item_count(self) -> int | None:
        held = (self.row.details or {}).get("held")
        n = (held.get("details") or {}).get("n") if isinstance(held, dict) else None
        return n if isinstance(n, int) else None

    @strawberry.field(
        description="Per fairness slice: each group's metrics and the worst group's gap; empty until DONE."
    )
    def slices(self) -> list[SliceResult]:
        return results.slices_of(self.row)

    @strawberry.field(description="Per perturbed copy: consistency with the original set and the copy's own metrics.")
    def perturbations(self) -> list[PerturbationResult]:
        return results.perturbations_of(self.row)

    @strawberry.field(description="How many items were scored (null until DONE).")
    def item_count(self) -> int | None:
        n = (self.row.details or {}).get("n")
        return n if isinstance(n, int) else None

    @strawberry.field(
        description="How many of the model's answers on the scored items could not be read (they count as wrong, and "
        "as inconsistent for robustness and fairness)."
    )
    def unusable_outputs(self) -> int | None:
        n = (self.row.details or {}).get("unusable_outputs")
        return n if isinstance(n, int) else None

    @strawberry.field(
        description="Why the model's unusable answers could not be read, over the whole set: the most frequent "
        "reasons (up to five), each with how many answers had it; empty when every answer was usable."
    )
    def unusable_reasons(self) -> list[UnusableReason]:
        found = (self.row.details or {}).get("unusable_reasons") or []
        return [UnusableReason(reason=str(r["reason"]), count=int(r["count"])) for r in found if isinstance(r, dict)]

    @strawberry.field(
        description="Whether most of the model's answers could not be read (more than EVAL_MAX_UNUSABLE_SHARE of "
        "the set's items): it then has no figure that depends on the gold here (metrics hold robustness and "
        "fairness only), and ranks after every model that has them."
    )
    def mostly_unusable(self) -> bool:
        return bool((self.row.details or {}).get("mostly_unusable"))

    @strawberry.field(
        description="A model that writes (its outputs say how many tokens and when the first came): tokens per "
        "second and time to first token beside `throughput`; null for other models, until DONE, and for uploaded "
        "predictions."
    )
    def generation(self) -> GenerationFigures | None:
        g = (self.row.details or {}).get("generation")
        if not isinstance(g, dict):
            return None
        return GenerationFigures(
            output_tokens=int(g.get("tokens") or 0),
            tokens_per_second=g.get("tokens_per_second"),
            time_to_first_token_ms=g.get("ttft_ms_median"),
            time_to_first_token_p90_ms=g.get("ttft_ms_p90"),
        )

    @strawberry.field(
        description="The machine the model ran on (with `throughput` and `memoryMb`, what they were measured on); "
        "null for uploaded predictions and evaluations recorded before it was kept."
    )
    def hardware(self) -> Hardware | None:
        return results.hardware_of(self.row)

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
            dataset_row=dataset,
            dataset=Dataset.from_row(dataset),
            status=EvaluationStatus(row.status),
            progress=row.progress,
            throughput=row.throughput,
            memory_mb=row.memory_mb,
        )


@strawberry.type(description="What a model's submitter says about it; every field may be missing.")
class ModelCard:
    parameters: int | None = strawberry.field(description="How many parameters the model has.")
    license: str | None = strawberry.field(description="The licence it is released under, as the submitter put it.")
    paper: str | None = strawberry.field(description="An http(s) link to the paper that describes it.")
    description: str | None = strawberry.field(description="What the submitter says about the model.")
    training_data: str | None = strawberry.field(description="What it was trained on.")

    @classmethod
    def of(cls, card: dict[str, Any]) -> ModelCard:
        parameters = card.get("parameters")
        return cls(
            parameters=parameters if isinstance(parameters, int) and not isinstance(parameters, bool) else None,
            license=card.get("license"),
            paper=card.get("paper"),
            description=card.get("description"),
            training_data=card.get("training_data"),
        )


@strawberry.type(
    description="A model submitted to a task's leaderboard. A published one is visible to everyone who can see the "
    "task; an unpublished one only to its submitter, the task's owners and admins."
)
class Model(Node):
    row: strawberry.Private[ModelRow]
    privileged: strawberry.Private[bool]
    name: str = strawberry.field(description="Its display name, 1 to 100 characters.")
    backend: str | None = strawberry.field(
        description="The registered backend that runs it (e.g. http); null for a model made of uploaded predictions."
    )
    card: ModelCard = strawberry.field(description="What its submitter says about it.")
    published: bool = strawberry.field(
        description="Whether it is on the leaderboard, visible to everyone who can see the task."
    )
    anonymous: bool = strawberry.field(
        description="Whether its submitter's name is hidden: from the leaderboard, and from everyone but the "
        "submitter, the task's owners and admins elsewhere."
    )
    status: ModelStatus = strawberry.field(description="Where its evaluations are, taken together.")
    created_at: datetime = strawberry.field(description="When it was submitted (UTC).")

    @strawberry.field(
        description="The backend configuration (the submitter, owners and admins; it may hold credentials)."
    )
    def config(self) -> JSON | None:
        return JSON(self.row.config) if self.privileged else None

    #: The submitter's row when the caller already read it (a leaderboard reads every row's at once).
    known_submitter: strawberry.Private[Any] = None
    submitter_known: strawberry.Private[bool] = False

    @strawberry.field(
        description="Who submitted it; for an anonymous model, null except for its submitter, the task's owners and "
        "admins, and null for everyone on a leaderboard row."
    )
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

    @strawberry.field(
        description="One evaluation per data set it was queued on, in the order they were queued (pages of up to "
        "100, 100 by default); those on HIDDEN sets only for the task's owners and admins; their `error` and "
        "`logTail` only for the submitter, the task's owners and admins."
    )
    @errors_as_graphql
    async def evaluations(
        self, info: Info, first: First = None, after: After = None, last: Last = None, before: Before = None
    ) -> Connection[Evaluation]:
        p, actor = info.context.caller
        with_hidden = self.privileged and await submission_service.sees_hidden_sets(p, actor, self.row.task_id)
        listing = await submission_service.evaluations_page(
            p, self.row.id, first=first, after=after, last=last, before=before, with_hidden=with_hidden
        )
        privileged = self.privileged
        return Connection.from_listing(listing, lambda pair: Evaluation.of(pair[0], pair[1], privileged))

    @classmethod
    def from_row(cls, row: ModelRow, privileged: bool, **known: Any) -> Model:
        """``submitter=`` passes the submitter's User row when it was read already (None: anonymous or gone)."""
        return cls(
            row=row,
            privileged=privileged,
            id=global_id("Model", row.id),
            name=row.name,
            backend=row.backend,
            card=ModelCard.of(row.card or {}),
            published=row.published,
            anonymous=row.anonymous,
            status=ModelStatus(row.status),
            created_at=as_utc(row.created_at),
            known_submitter=known.get("submitter"),
            submitter_known="submitter" in known,
        )


async def _submitter(info: Info, user_id: int) -> User | None:
    user = await auth_service.get_user(info.context.platform, user_id)
    return None if user is None else User.from_row(user)


@strawberry.input(description="What a model card says; every field is optional, and a null one is left out.")
class ModelCardInput:
    parameters: int | None = strawberry.field(
        default=None, description="How many parameters the model has: a whole number, 0 or more."
    )
    license: str | None = strawberry.field(
        default=None, description="The licence it is released under, at most 100 characters."
    )
    paper: str | None = strawberry.field(
        default=None, description="An http(s) link to the paper that describes it, at most 500 characters."
    )
    description: str | None = strawberry.field(
        default=None, description="What you say about the model, at most 5000 characters."
    )
    training_data: str | None = strawberry.field(
        default=None, description="What it was trained on, at most 2000 characters."
    )


@strawberry.input(
    description="A model to submit to a task: it is evaluated on every scoring data set and its perturbed copies. "
    "Signed-in users; each may submit (models and predictions together) as often as the task allows in 24 hours, "
    "3 times by default."
)
class SubmitModelInput:
    task_code: str = strawberry.field(description="The code of the task to submit to.")
    name: str = strawberry.field(description="The model's display name, 1 to 100 characters.")
    backend: str = strawberry.field(
        description="A registered backend. Any signed-in user may use those the server opens to model builders (by "
        "default http and transformers); the others (python runs code on the server) only admins."
    )
    config: JSON = strawberry.field(description="The backend's configuration (see docs/model-server.md).")
    card: ModelCardInput | None = strawberry.field(default=None, description="Its model card; null: an empty one.")
    published: bool = strawberry.field(
        default=False,
        description="true puts it on the leaderboard for everyone who can see the task; false (the default) keeps "
        "it to you, the task's owners and admins until you publish it with updateModel.",
    )
    anonymous: bool = strawberry.field(
        default=False, description="true hides your name from everyone but the task's owners and admins."
    )


@strawberry.input(description="What to change on a model; fields left out stay as they are.")
class UpdateModelInput:
    id: strawberry.ID = strawberry.field(description="The id of the model to change.")
    name: str | None = strawberry.field(default=None, description="A new display name, 1 to 100 characters.")
    published: bool | None = strawberry.field(
        default=None, description="true puts it on the leaderboard; false takes it off (it stays yours)."
    )
    anonymous: bool | None = strawberry.field(
        default=None, description="true hides your name from everyone but the task's owners and admins."
    )
    card: ModelCardInput | None = strawberry.field(default=None, description="Replaces the whole card.")


@strawberry.input(description="Which model to delete.")
class DeleteModelInput:
    id: strawberry.ID = strawberry.field(description="The id of the model to delete.")


@strawberry.input(
    description="Predictions for one data set, submitted instead of a model; they count against the same "
    "24-hour allowance as model submissions. Signed-in users."
)
class SubmitPredictionsInput:
    task_code: str = strawberry.field(description="The code of the task to submit to.")
    name: str = strawberry.field(description="A display name for the predictions, 1 to 100 characters.")
    dataset_name: str = strawberry.field(description="A data set you can see (the datasets query lists them).")
    predictions: list[JSON] = strawberry.field(
        description="One output per item, in the order of datasetItems, shaped like a model server's output."
    )
    card: ModelCardInput | None = strawberry.field(
        default=None, description="A model card for the predictions; null: an empty one."
    )
    published: bool = strawberry.field(
        default=False,
        description="true shows them to everyone who can see the task and puts them on its leaderboard (with gaps "
        "on the scoring sets they do not cover); false (the default) keeps them to you, the task's owners and admins.",
    )
    anonymous: bool = strawberry.field(
        default=False, description="true hides your name from everyone but the task's owners and admins."
    )


@strawberry.input(
    description="Training items chosen from one of the task's pools, submitted instead of a model to a task that takes "
    "data selections (Task.submissionKinds has SELECTION): the platform trains the task's fixed recipe on them and "
    "evaluates the result on every scoring set like a model. Counts against the same 24-hour allowance as model "
    "submissions. Signed-in users."
)
class SubmitSelectionInput:
    task_code: str = strawberry.field(description="The code of the task to submit to.")
    name: str = strawberry.field(description="A display name for the selection, 1 to 100 characters.")
    dataset_name: str = strawberry.field(
        description="The pool selected from: a STANDARD data set of the task (the datasets query lists them)."
    )
    item_ids: list[strawberry.ID] = strawberry.field(
        description="The selected items (DatasetItem.id, from datasetItems of the pool): at least 1, at most "
        "Task.dataSelection.budget, each once. The recipe sees them in this order."
    )
    card: ModelCardInput | None = strawberry.field(
        default=None, description="A card for the selection (how it was chosen); null: an empty one."
    )
    published: bool = strawberry.field(
        default=False,
        description="true shows it to everyone who can see the task and puts it on its leaderboard; false (the "
        "default) keeps it to you, the task's owners and admins.",
    )
    anonymous: bool = strawberry.field(
        default=False, description="true hides your name from everyone but the task's owners and admins."
    )


@strawberry.input(description="Which round's accepted examples to split into data sets.")
class CreateRoundDatasetsInput:
    task_code: str = strawberry.field(description="The code of the task.")
    round_number: int = strawberry.field(
        description="The round whose accepted examples are split; it needs at least one, and no sets of its own yet."
    )
    seed: int = strawberry.field(
        default=0,
        description="Seeds the shuffle: the same seed splits the same examples the same way (80% train, 10% dev, "
        "10% test).",
    )


@strawberry.input(
    description="An owner's own perturbed copy of a scoring data set, as a JSONL file: one object per "
    "line with original_position (the item it was made from) and the task's fields; target fields "
    "left out are copied from the original."
)
class UploadPerturbedCopyInput:
    dataset_id: strawberry.ID = strawberry.field(
        description="The id of the SCORING data set the copy was made from (an original, not itself a copy)."
    )
    perturbation: str = strawberry.field(description="Its name, e.g. dialect-rewrite; the copy is named {set}~{name}.")
    kind: PerturbationKind = strawberry.field(description="Which figure the copy's consistency counts to.")
    file: Upload = strawberry.field(description="The JSONL file, sent as a GraphQL multipart request.")
    replace: bool = strawberry.field(default=False, description="Put it in place of a copy of the same name.")
    description: str = strawberry.field(
        default="", description="What the copy changes; empty: a description made from its name and kind."
    )


@strawberry.type(
    description="The model was stored: a submitted model's evaluations are queued, uploaded predictions are scored "
    "already."
)
class SubmittedModel:
    model: Model = strawberry.field(description="The new model, as its submitter sees it.")


@strawberry.type(description="The model as it is now.")
class UpdatedModel:
    model: Model = strawberry.field(description="The model with the changes made.")


@strawberry.type(description="The model and its evaluations are gone.")
class DeletedModel:
    id: strawberry.ID = strawberry.field(description="The id the deleted model had.")


@strawberry.type(
    description="New data sets: a round's train, dev and test sets with the test set's perturbed copies "
    "(createRoundDatasets), or one uploaded perturbed copy (uploadPerturbedCopy)."
)
class DatasetsCreated:
    datasets: list[Dataset] = strawberry.field(
        description="The sets made; the task's models that have a backend are queued on the scoring ones."
    )


SubmitModelResult = Annotated[
    SubmittedModel | InvalidInput | NotAuthenticated | NotFound | RateLimited,
    strawberry.union(
        "SubmitModelResult",
        description="What submitModel, submitPredictions and submitSelection return: the stored model, or why not (a "
        "bad field, a kind of submission the task does not take, not signed in, no such task or data set, or the "
        "24-hour allowance used up).",
    ),
]
UpdateModelResult = Annotated[
    UpdatedModel | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "UpdateModelResult",
        description="The changed model, or why not: a bad field, not signed in, not your model (Forbidden), or no "
        "model you can see.",
    ),
]
DeleteModelResult = Annotated[
    DeletedModel | InvalidInput | NotAuthenticated | Forbidden | NotFound | Conflict,
    strawberry.union(
        "DeleteModelResult",
        description="The deleted model's id, or why not: a bad id, not signed in, not your model (Forbidden), no "
        "model you can see, or an evaluation still running (Conflict: try again when it is done).",
    ),
]
UploadPerturbedCopyResult = Annotated[
    DatasetsCreated | InvalidInput | NotAuthenticated | Forbidden | NotFound | AlreadyExists,
    strawberry.union(
        "UploadPerturbedCopyResult",
        description="The new copy, or why not: problems named by line, not signed in, not an owner of the task, no "
        "such data set, or a copy of that name exists (pass replace: true).",
    ),
]
CreateRoundDatasetsResult = Annotated[
    DatasetsCreated | InvalidInput | NotAuthenticated | Forbidden | NotFound | AlreadyExists,
    strawberry.union(
        "CreateRoundDatasetsResult",
        description="The new data sets, or why not: no accepted examples yet, not signed in, not an owner of the "
        "task, no such task or round, or the round's sets exist already.",
    ),
]


@strawberry.input(description="A weight for a metric or a data set of the leaderboard.")
class WeightInput:
    name: str = strawberry.field(
        description="A metric's name (one of the board's axes) or a scoring data set's name; each name at most once."
    )
    weight: float = strawberry.field(
        description="A finite number, 0 or more: only the ratios between weights matter. 0 shows the metric (or "
        "leaves the data set out) without counting it; at least one weight must be above 0."
    )


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


@strawberry.type(description="One published model on a leaderboard.")
class LeaderboardRow:
    model: Model = strawberry.field(
        description="The model as anyone sees it: its config, its evaluations' errors and an anonymous model's "
        "submitter are null here even for those who may see them (model(id:) has them)."
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
        description="The memory budget a MEMORY axis is oriented against (the budget left scores)."
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
                )
                for r in board.rows
            ],
            board=board,
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
        "LOWER; memoryBudgetGb minus it for MEMORY). Null when the axis is not scored (weight 0)."
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


@strawberry.input(description="Which leaderboard fork or snapshot to delete.")
class DeleteLeaderboardItemInput:
    id: strawberry.ID = strawberry.field(
        description="A LeaderboardFork's id for deleteLeaderboardFork, a LeaderboardSnapshot's for "
        "deleteLeaderboardSnapshot."
    )


@strawberry.type(description="The fork or snapshot is gone.")
class LeaderboardItemDeleted:
    id: strawberry.ID = strawberry.field(description="The id the deleted fork or snapshot had.")


DeleteLeaderboardItemResult = Annotated[
    LeaderboardItemDeleted | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "DeleteLeaderboardItemResult",
        description="The deleted item's id, or why not: a bad id, not signed in, neither its author nor an admin "
        "(Forbidden), or nothing you can see by that id.",
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


@strawberry.input(description="Leaderboard weights to save as a fork, or to freeze a snapshot with.")
class LeaderboardWeightsInput:
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


@strawberry.type(description="The fork was saved; its id opens the board with its weights.")
class LeaderboardForkSaved:
    fork: LeaderboardFork = strawberry.field(description="The saved fork.")


@strawberry.type(description="The board was computed and frozen as it is now.")
class LeaderboardSnapshotted:
    snapshot: LeaderboardSnapshot = strawberry.field(description="The snapshot taken.")


SaveForkResult = Annotated[
    LeaderboardForkSaved | InvalidInput | NotAuthenticated | NotFound | AlreadyExists,
    strawberry.union(
        "SaveLeaderboardForkResult",
        description="The saved fork, or why not: a bad name or weight, not signed in, no such task, or you have a "
        "fork of that name on the task already.",
    ),
]
SnapshotResult = Annotated[
    LeaderboardSnapshotted | InvalidInput | NotAuthenticated | NotFound,
    strawberry.union(
        "SnapshotLeaderboardResult",
        description="The snapshot taken, or why not: a bad name or weight, not signed in, or no such task.",
    ),
]


@strawberry.type
class EvaluationQuery:
    @strawberry.field(
        description="A task's published models ranked by a Dynascore with your weights (default: 4 on "
        "the principal metric, 1 on throughput, memory, robustness and fairness, 0 on an axis no model has a figure "
        "for yet, such as fairness on a task without fairness copies; data sets equal)."
    )
    @errors_as_graphql
    async def leaderboard(
        self,
        info: Info,
        task_code: Annotated[str, strawberry.argument(description="The code of the task.")],
        metric_weights: Annotated[
            list[WeightInput] | None,
            strawberry.argument(
                description="Weights of the board's axes by name; axes left out keep their default. Null: the "
                "defaults, or the fork's weights with forkId."
            ),
        ] = None,
        dataset_weights: Annotated[
            list[WeightInput] | None,
            strawberry.argument(
                description="Weights of the scoring data sets by name; sets left out do not count. Null: every set "
                "equally, or the fork's weights with forkId."
            ),
        ] = None,
        sort: Annotated[
            LeaderboardSort, strawberry.argument(description="What orders the rows; the Dynascore by default.")
        ] = LeaderboardSort.DYNASCORE,
        sort_metric: Annotated[
            str | None,
            strawberry.argument(
                description="With sort: METRIC, the axis to sort by (a name in Leaderboard.metrics); leave it out "
                "otherwise."
            ),
        ] = None,
        fork_id: Annotated[
            strawberry.ID | None,
            strawberry.argument(
                description="A LeaderboardFork of this task whose saved weights to use; metricWeights or "
                "datasetWeights given here replace the fork's."
            ),
        ] = None,
    ) -> Leaderboard | None:
        board = await board_service.compute(
            *info.context.caller,
            task_code,
            metric_weights=_pairs(metric_weights),
            dataset_weights=_pairs(dataset_weights),
            sort=_sort(sort, sort_metric),
            fork_id=None if fork_id is None else parse_id(fork_id, "forkId", "LeaderboardFork"),
        )
        return Leaderboard.of(board)

    @strawberry.field(description="The leaderboard forks you saved on a task, newest first. Signed-in users.")
    @errors_as_graphql
    async def my_leaderboard_forks(
        self,
        info: Info,
        task_code: Annotated[str, strawberry.argument(description="The code of the task.")],
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[LeaderboardFork] | None:
        listing = await board_service.my_forks(
            *info.context.caller, task_code, first=first, after=after, last=last, before=before
        )
        return Connection.from_listing(listing, _fork)

    @strawberry.field(description="The leaderboard snapshots you took of a task, newest first. Signed-in users.")
    @errors_as_graphql
    async def my_leaderboard_snapshots(
        self,
        info: Info,
        task_code: Annotated[str, strawberry.argument(description="The code of the task.")],
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[LeaderboardSnapshot] | None:
        listing = await board_service.my_snapshots(
            *info.context.caller, task_code, first=first, after=after, last=last, before=before
        )
        return Connection.from_listing(listing, _snapshot)

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

    @strawberry.field(
        description="A submitted model: published ones for everyone, the others for their submitter, "
        "the task's owners and admins; null otherwise."
    )
    @errors_as_null
    async def model(
        self, info: Info, id: Annotated[strawberry.ID, strawberry.argument(description="The model's id.")]
    ) -> Model | None:
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
        task_code: Annotated[str, strawberry.argument(description="The code of the task.")],
        mine: Annotated[
            bool, strawberry.argument(description="true: only the models you submitted (sign in first).")
        ] = False,
        published: Annotated[
            bool | None,
            strawberry.argument(description="true: published models only; false: unpublished ones only; null: both."),
        ] = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Model] | None:
        page = await submission_service.list_models(
            *info.context.caller,
            task_code,
            mine=mine,
            published=published,
            first=first,
            after=after,
            last=last,
            before=before,
        )
        assert page.window is not None
        return Connection.of(
            (
                (Model.from_row(row, privileged), submission_service.encode_model_cursor(row.id))
                for row, privileged in page.items
            ),
            has_next=page.window.has_next,
            has_previous=page.window.has_previous,
            total=page.total,
        )

    @strawberry.field(
        description="A task's data sets, oldest first (a round's sets beside their perturbed copies), for anyone who "
        "can see the task; HIDDEN ones for its owners and admins only. Pages of up to 100, 100 by default."
    )
    @errors_as_graphql
    async def datasets(
        self,
        info: Info,
        task_code: Annotated[str, strawberry.argument(description="The code of the task.")],
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Dataset] | None:
        listing = await dataset_service.datasets_page(
            *info.context.caller, task_code, first=first, after=after, last=last, before=before
        )
        return Connection.from_listing(listing, Dataset.from_row)

    @strawberry.field(
        description="A page of a data set's items, in order, for anyone who can see the set; gold fields only "
        "where you may see its gold (see DatasetItem.fields)."
    )
    @errors_as_graphql
    async def dataset_items(
        self,
        info: Info,
        id: Annotated[strawberry.ID, strawberry.argument(description="The data set's id.")],
        first: Annotated[
            int | None, strawberry.argument(description="Page forward: this many items (1 to 500; default 100).")
        ] = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> DatasetItemConnection | None:
        dataset_id = parse_id(id, "id", "Dataset")
        page = await dataset_service.items(
            *info.context.caller, dataset_id, first=first, after=after, last=last, before=before
        )
        window = page.listing.window
        connection = DatasetItemConnection.of(
            ((DatasetItem.of(i), window.cursor(i)) for i in page.items),
            has_next=window.has_next,
            has_previous=window.has_previous,
            total=page.listing.total,
        )
        connection.gold_visible = page.gold_visible
        return connection


def _card(card: ModelCardInput | None) -> dict[str, Any] | None:
    return None if card is None else {k: v for k, v in vars(card).items() if v is not None}


@strawberry.type
class EvaluationMutation:
    @strawberry.mutation(description="Delete one of your leaderboard forks (admins: anyone's).")
    @errors_as_union
    async def delete_leaderboard_fork(
        self,
        info: Info,
        input: Annotated[DeleteLeaderboardItemInput, strawberry.argument(description="Which fork to delete.")],
    ) -> DeleteLeaderboardItemResult:
        row = await board_service.delete_fork(*info.context.caller, parse_id(input.id, "id", "LeaderboardFork"))
        return LeaderboardItemDeleted(id=global_id("LeaderboardFork", row.id))

    @strawberry.mutation(description="Delete one of your leaderboard snapshots (admins: anyone's).")
    @errors_as_union
    async def delete_leaderboard_snapshot(
        self,
        info: Info,
        input: Annotated[DeleteLeaderboardItemInput, strawberry.argument(description="Which snapshot to delete.")],
    ) -> DeleteLeaderboardItemResult:
        row = await board_service.delete_snapshot(*info.context.caller, parse_id(input.id, "id", "LeaderboardSnapshot"))
        return LeaderboardItemDeleted(id=global_id("LeaderboardSnapshot", row.id))

    @strawberry.mutation(description="Save leaderboard weights under a name (a fork others can open by its id).")
    @errors_as_union
    async def save_leaderboard_fork(
        self,
        info: Info,
        input: Annotated[LeaderboardWeightsInput, strawberry.argument(description="The fork's name and weights.")],
    ) -> SaveForkResult:
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
            LeaderboardWeightsInput, strawberry.argument(description="The snapshot's name and the weights to use.")
        ],
    ) -> SnapshotResult:
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
    async def submit_model(
        self, info: Info, input: Annotated[SubmitModelInput, strawberry.argument(description="The model to submit.")]
    ) -> SubmitModelResult:
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
    async def update_model(
        self,
        info: Info,
        input: Annotated[UpdateModelInput, strawberry.argument(description="The model and what to change on it.")],
    ) -> UpdateModelResult:
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
    async def delete_model(
        self, info: Info, input: Annotated[DeleteModelInput, strawberry.argument(description="The model to delete.")]
    ) -> DeleteModelResult:
        row = await submission_service.delete_model(*info.context.caller, parse_id(input.id, "id", "Model"))
        return DeletedModel(id=global_id("Model", row.id))

    @strawberry.mutation(
        description="Upload predictions for one data set instead of a model: scored at once, "
        "not measured for speed or memory."
    )
    @errors_as_union
    async def submit_predictions(
        self,
        info: Info,
        input: Annotated[
            SubmitPredictionsInput, strawberry.argument(description="The data set and one prediction per item.")
        ],
    ) -> SubmitModelResult:
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
        description="Submit data instead of a model, to a task that takes data selections: the task's fixed recipe "
        "is trained on the selected items and evaluated on every scoring data set."
    )
    @errors_as_union
    async def submit_selection(
        self,
        info: Info,
        input: Annotated[SubmitSelectionInput, strawberry.argument(description="The pool and the items selected.")],
    ) -> SubmitModelResult:
        items = [parse_item_key(value, f"itemIds[{i}]") for i, value in enumerate(input.item_ids)]
        model, _ = await submission_service.submit_selection(
            *info.context.caller,
            task_code=input.task_code,
            name=input.name,
            dataset_name=input.dataset_name,
            items=items,
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
    async def upload_perturbed_copy(
        self,
        info: Info,
        input: Annotated[
            UploadPerturbedCopyInput,
            strawberry.argument(description="The original set, the copy's name and kind, and its JSONL file."),
        ],
    ) -> UploadPerturbedCopyResult:
        stream, _ = binary_upload(input.file)
        stream.seek(0)
        platform = info.context.platform
        records = dataset_service.read_jsonl(stream, platform.settings.context_upload_max_bytes)
        copy = await dataset_service.attach_perturbed_copy(
            platform,
            info.context.actor,
            parse_id(input.dataset_id, "datasetId", "Dataset"),
            input.perturbation,
            raw(input.kind),
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
    async def create_round_datasets(
        self,
        info: Info,
        input: Annotated[
            CreateRoundDatasetsInput, strawberry.argument(description="The task, the round and the split's seed.")
        ],
    ) -> CreateRoundDatasetsResult:
        rows = await dataset_service.build_from_round(
            *info.context.caller, input.task_code, input.round_number, seed=input.seed
        )
        return DatasetsCreated(datasets=[Dataset.from_row(r) for r in rows])
