"""Models over GraphQL: submissions (a model, its predictions or a selection of training data), their cards and
evaluations."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.arguments import MyModels, PublishedFilter
from dynaforge.api.context import Info, TaskCode
from dynaforge.api.datasets import Dataset
from dynaforge.api.enums import (
    EvaluationStatus,
    ModelStatus,
    ScoredPart,
)
from dynaforge.api.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    QuotaExceeded,
    errors_as_graphql,
    errors_as_null,
    errors_as_union,
)
from dynaforge.api.node import Node, global_id, parse_id, parse_item_key, related
from dynaforge.api.task_lists import task_list
from dynaforge.api.types import results
from dynaforge.api.types.connection import After, Before, Connection, First, Last
from dynaforge.api.types.results import EvaluationMetric, Hardware, PerturbationResult, SliceResult
from dynaforge.api.types.task import Task
from dynaforge.api.types.user import User
from dynaforge.db.models import Dataset as DatasetRow
from dynaforge.db.models import Evaluation as EvaluationRow
from dynaforge.db.models import EvaluationStatus as EvaluationStatusRow
from dynaforge.db.models import ModelRow, as_utc
from dynaforge.services import auth as auth_service
from dynaforge.services import submissions as submission_service
from dynaforge.services import tasks as task_service


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


@strawberry.type(
    description="One model on one data set: where the run is and, once DONE, what it measured. Anyone who can see "
    "the model can see its evaluations."
)
class Evaluation(Node):
    row: strawberry.Private[EvaluationRow]
    privileged: strawberry.Private[bool]
    dataset_row: strawberry.Private[DatasetRow]
    dataset: Dataset = strawberry.field(description="The data set the model is evaluated on.")

    @strawberry.field(description="The model evaluated; null when you may not see it.")
    async def model(self, info: Info) -> Model | None:
        found: Model | None = await related(info, "Model", self.row.model_id)
        return found

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
        description="Peak memory above the baseline taken before loading, in MiB; null until DONE and for uploaded "
        "predictions.",
        deprecation_reason="Use memoryGib: every memory figure of the API is in GiB.",
    )

    @strawberry.field(
        description="Peak memory above the baseline taken before loading, in GiB (the unit of every memory figure: "
        "the board's memory axis, Hardware.memoryGb, Leaderboard.memoryBudgetGb); null until DONE and for "
        "uploaded predictions."
    )
    def memory_gib(self) -> float | None:
        return None if self.memory_mb is None else self.memory_mb / 1024.0

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


@strawberry.type(
    description="The model was stored: a submitted model's evaluations are queued, uploaded predictions are scored "
    "already."
)
class ModelSubmitted:
    model: Model = strawberry.field(description="The new model, as its submitter sees it.")


@strawberry.type(description="The model as it is now.")
class ModelUpdated:
    model: Model = strawberry.field(description="The model with the changes made.")


@strawberry.type(description="The model and its evaluations are gone.")
class ModelDeleted:
    id: strawberry.ID = strawberry.field(description="The id the deleted model had.")


SubmitModelResult = Annotated[
    ModelSubmitted | InvalidInput | NotAuthenticated | NotFound | QuotaExceeded,
    strawberry.union(
        "SubmitModelResult",
        description="The submitted model, or why not (a bad field, a kind of submission the task does not take, not "
        "signed in, no such task or data set, or the 24-hour allowance used up: QuotaExceeded).",
    ),
]
SubmitPredictionsResult = Annotated[
    ModelSubmitted | InvalidInput | NotAuthenticated | NotFound | QuotaExceeded,
    strawberry.union(
        "SubmitPredictionsResult",
        description="The stored predictions, as a model, or why not (a bad field, a kind of submission the task "
        "does not take, not signed in, no such task or data set, or the 24-hour allowance used up: QuotaExceeded).",
    ),
]
SubmitSelectionResult = Annotated[
    ModelSubmitted | InvalidInput | NotAuthenticated | NotFound | QuotaExceeded,
    strawberry.union(
        "SubmitSelectionResult",
        description="The stored data selection, as a model, or why not (a bad field, a kind of submission the task "
        "does not take, not signed in, no such task or data set, or the 24-hour allowance used up: QuotaExceeded).",
    ),
]


UpdateModelResult = Annotated[
    ModelUpdated | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "UpdateModelResult",
        description="The changed model, or why not: a bad field, not signed in, not your model (Forbidden), or no "
        "model you can see.",
    ),
]


DeleteModelResult = Annotated[
    ModelDeleted | InvalidInput | NotAuthenticated | Forbidden | NotFound | Conflict,
    strawberry.union(
        "DeleteModelResult",
        description="The deleted model's id, or why not: a bad id, not signed in, not your model (Forbidden), no "
        "model you can see, or an evaluation still running (Conflict: try again when it is done).",
    ),
]


def _card(card: ModelCardInput | None) -> dict[str, Any] | None:
    return None if card is None else {k: v for k, v in vars(card).items() if v is not None}


@task_list("models")
async def models_connection(
    info: Info,
    task_code: str,
    mine: bool,
    published: bool | None,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
) -> Connection[Model]:
    """Task.models (and the deprecated root field)."""
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


@strawberry.type
class ModelQuery:
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
        "unpublished (false) ones.",
        deprecation_reason="Use Task.models (task(code:) { ... }).",
    )
    @errors_as_graphql
    async def models(
        self,
        info: Info,
        task_code: TaskCode,
        mine: MyModels = False,
        published: PublishedFilter = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Model] | None:
        return await models_connection(info, task_code, mine, published, first, after, last, before)


@strawberry.type
class ModelMutation:
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
        return ModelSubmitted(model=Model.from_row(model, privileged=True))

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
        return ModelUpdated(model=Model.from_row(row, privileged=True))

    @strawberry.mutation(
        description="Its submitter (or an admin) deletes a model and its evaluations; refused while an evaluation "
        "is running."
    )
    @errors_as_union
    async def delete_model(
        self, info: Info, input: Annotated[DeleteModelInput, strawberry.argument(description="The model to delete.")]
    ) -> DeleteModelResult:
        row = await submission_service.delete_model(*info.context.caller, parse_id(input.id, "id", "Model"))
        return ModelDeleted(id=global_id("Model", row.id))

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
    ) -> SubmitPredictionsResult:
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
        return ModelSubmitted(model=Model.from_row(model, privileged=True))

    @strawberry.mutation(
        description="Submit data instead of a model, to a task that takes data selections: the task's fixed recipe "
        "is trained on the selected items and evaluated on every scoring data set."
    )
    @errors_as_union
    async def submit_selection(
        self,
        info: Info,
        input: Annotated[SubmitSelectionInput, strawberry.argument(description="The pool and the items selected.")],
    ) -> SubmitSelectionResult:
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
        return ModelSubmitted(model=Model.from_row(model, privileged=True))
