"""Task type: a registered task as a frontend needs it to render its form."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Annotated, Any

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.arguments import (
    AdversaryFilter,
    AuthorFilter,
    ContextRound,
    ContextTag,
    DatasetWeights,
    ExampleRound,
    ExampleStatusFilter,
    ExampleTag,
    FooledFilter,
    ForkId,
    JobStatusFilter,
    MetricWeights,
    MineOnly,
    MyModels,
    PublishedFilter,
    RunStatusFilter,
    Sort,
    SortMetric,
    SourceFilter,
)
from dynaforge.api.context import Info
from dynaforge.api.enums import CreationOrder, LeaderboardSort, OrderBy, ValidationMode, VerdictSource, raw, work_page
from dynaforge.api.errors import errors_as_graphql
from dynaforge.api.node import Node, global_id
from dynaforge.api.task_lists import implementation
from dynaforge.api.types.connection import After, Before, Connection, First, Last
from dynaforge.api.types.context_type import ContextType
from dynaforge.api.types.registered import RegisteredModel
from dynaforge.api.types.round import Round
from dynaforge.api.types.stats import SourceStats, Stats, TaskSettings, UserTaskStats
from dynaforge.api.types.user import User
from dynaforge.db.models import utcnow
from dynaforge.services import examples as example_service
from dynaforge.services import stats as stats_service
from dynaforge.services import submissions as submission_service
from dynaforge.services import subscriptions as subscription_service
from dynaforge.services import tasks as task_service
from dynaforge.services import validation as validation_service
from dynaforge.tasks.declarative import DeclaredTask
from dynaforge.tasks.fields import (
    BooleanField,
    ChoiceField,
    Field,
    ImageField,
    NumberField,
    ReferencesField,
    Role,
    SpanField,
    TextField,
)


@strawberry.enum(description="What a field is for.")
class FieldRole(Enum):
    CONTEXT = strawberry.enum_value(
        "context",
        description="Shown to the annotator to write against (a passage, a prompt); by default part of what the "
        "model is sent.",
    )
    INPUT = strawberry.enum_value(
        "input",
        description="Written by the annotator and, by default, sent to the model (a question, a statement).",
    )
    TARGET = strawberry.enum_value(
        "target",
        description="The annotator's gold answer (a label, a span), compared with the model's prediction; left out "
        "of data set items you may not see the gold of.",
    )
    METADATA = strawberry.enum_value(
        "metadata",
        description="Anything else the annotator records, e.g. why they think the model was fooled; by default "
        "not sent to the model.",
    )


@strawberry.enum(description="The kind of value a field holds; a form picks its control from it.")
class FieldType(Enum):
    TEXT = strawberry.enum_value(
        "text",
        description="A string of minLength to maxLength characters (counted without surrounding whitespace).",
    )
    REFERENCES = strawberry.enum_value(
        "references",
        description="Text a model writes, with one or several references: a string or a list of 1 to "
        "maxReferences strings, each like a TEXT value. A model's answer is one string; it matches when it equals a "
        "reference after the `normalize` rules, and text metrics score it against every reference.",
    )
    CHOICE = strawberry.enum_value("choice", description="A string, one of `choices`.")
    SPAN = strawberry.enum_value(
        "span",
        description='A part of the context field `contextField`: {"text": ..., "start": ...}, the text as it '
        "stands at that character offset; at most maxLength characters.",
    )
    NUMBER = strawberry.enum_value(
        "number", description="A finite number between minimum and maximum (where set); whole when `integer`."
    )
    BOOLEAN = strawberry.enum_value("boolean", description="true or false.")
    IMAGE = strawberry.enum_value(
        "image",
        description='An uploaded image, named by its key: {"media": key}, the key uploadMedia gave it; of one of '
        "`formats` and at most `maxPixels` pixels.",
    )
    OTHER = strawberry.enum_value("other", description="A kind a plugin defines: see the field's jsonSchema.")


@strawberry.type(
    description="Your submissions to a task in the last 24 hours, against the task's allowance. Every scored "
    "attempt counts (a deleted or failed one too)."
)
class SubmissionAllowance:
    limit: int = strawberry.field(description="How many the task takes per user in 24 hours.")
    used: int = strawberry.field(description="How many you made in the last 24 hours.")
    left: int = strawberry.field(description="How many more you may submit now.")
    next_at: datetime | None = strawberry.field(
        description="When the oldest of those leaves the 24 hours (one more is allowed then); null when you made none."
    )


@strawberry.type(
    description="One field of a task, with everything a form needs to render and check it before sending: its "
    "kind, limits and choices. Null limits do not apply to the field's kind."
)
class TaskField:
    name: str = strawberry.field(description="The field's key in an example's (or a context's) `fields` object.")
    role: FieldRole = strawberry.field(description="What the field is for: who fills it and where it goes.")
    type: FieldType = strawberry.field(description="The kind of value it holds; a form picks its control from it.")
    description: str = strawberry.field(
        description="What the task says about the field, to show beside it; may be empty."
    )
    required: bool = strawberry.field(description="Whether an example must give it a value.")
    choices: list[str] | None = strawberry.field(description="CHOICE: the values it takes, in order.")
    formats: list[str] | None = strawberry.field(
        description="IMAGE: the formats the image may have been uploaded as (PNG, JPEG, WEBP, GIF)."
    )
    max_pixels: int | None = strawberry.field(description="IMAGE: the most pixels (width × height) it may have.")
    choice_titles: list[str] | None = strawberry.field(
        description="CHOICE: how people read each of `choices`, in the same order (the task's label titles; the "
        "value itself where it has none). Show these; send and compare the values."
    )
    min_length: int | None = strawberry.field(description="TEXT: the fewest characters (surrounding spaces aside).")
    max_length: int | None = strawberry.field(description="TEXT and SPAN: the most characters.")
    minimum: float | None = strawberry.field(description="NUMBER: the least value, if bounded.")
    maximum: float | None = strawberry.field(description="NUMBER: the greatest value, if bounded.")
    integer: bool | None = strawberry.field(description="NUMBER: whether only whole numbers are accepted.")
    context_field: str | None = strawberry.field(
        description="SPAN: the context field the span is selected from (its text must appear there)."
    )
    normalize: list[str] | None = strawberry.field(
        description="TEXT and REFERENCES: how a model's text is compared with the gold before it counts as a match "
        "(among unicode, case, punctuation, whitespace; empty: exactly)."
    )
    max_references: int | None = strawberry.field(description="REFERENCES: the most references one example gives.")
    tolerance: float | None = strawberry.field(
        description="NUMBER: how far a model's number may be from the gold and still match."
    )
    json_schema: JSON = strawberry.field(
        description="The field's JSON Schema (draft 2020-12) as the task defines it, the shape OTHER fields use."
    )


def _field_type(field: Field) -> FieldType:
    for kind, field_type in (
        (ReferencesField, FieldType.REFERENCES),
        (TextField, FieldType.TEXT),
        (ChoiceField, FieldType.CHOICE),
        (SpanField, FieldType.SPAN),
        (NumberField, FieldType.NUMBER),
        (BooleanField, FieldType.BOOLEAN),
        (ImageField, FieldType.IMAGE),
    ):
        if isinstance(field, kind):
            return field_type
    return FieldType.OTHER


def task_field(field: Field, task: Any) -> TaskField:
    """The descriptor of one of ``task``'s fields."""
    return TaskField(
        name=field.name,
        role=FieldRole(field.role.value),
        type=_field_type(field),
        description=field.description,
        required=field.required,
        choices=list(field.options(task)) if isinstance(field, ChoiceField) else None,
        choice_titles=[task.title_of(c) for c in field.options(task)] if isinstance(field, ChoiceField) else None,
        formats=list(field.formats) if isinstance(field, ImageField) else None,
        max_pixels=field.max_pixels if isinstance(field, ImageField) else None,
        min_length=field.min_length if isinstance(field, TextField) else None,
        max_length=field.max_length if isinstance(field, (TextField, SpanField)) else None,
        minimum=field.minimum if isinstance(field, NumberField) else None,
        maximum=field.maximum if isinstance(field, NumberField) else None,
        integer=field.integer if isinstance(field, NumberField) else None,
        context_field=field.context_field if isinstance(field, SpanField) else None,
        normalize=list(field.normalize) if isinstance(field, TextField) else None,
        max_references=field.max_references if isinstance(field, ReferencesField) else None,
        tolerance=field.tolerance if isinstance(field, NumberField) else None,
        json_schema=JSON(field.json_schema(task)),
    )


@strawberry.enum(description="A kind of submission a task takes (Task.submissionKinds).")
class SubmissionKind(Enum):
    MODEL = strawberry.enum_value(
        "model", description="A model the platform runs: submitModel (a model server, a hub model) or uploadModel."
    )
    PREDICTIONS = strawberry.enum_value("predictions", description="Outputs for one data set: submitPredictions.")
    SELECTION = strawberry.enum_value(
        "selection",
        description="Training items chosen from one of the task's pools, on which the platform trains the task's "
        "fixed recipe: submitSelection (see Task.dataSelection).",
    )


@strawberry.type(description="How a task that takes data selections scores them (DataPerf-style).")
class DataSelectionRules:
    budget: int = strawberry.field(description="The most items one selection may hold.")
    description: str = strawberry.field(
        description="The task's fixed recipe in its own words (what is trained on a selection); may be empty."
    )


@strawberry.type(
    description="A task: its fields, labels and current round. Its behaviour comes from a plugin. Anyone, signed in "
    "or not, can see a task, except a hidden one: only its owners and admins see that."
)
class Task(Node):
    view: strawberry.Private[task_service.TaskView]
    code: str = strawberry.field(description="Its stable code: the `taskCode` every query and mutation takes.")
    name: str = strawberry.field(description="Its display name.")
    description: str = strawberry.field(description="What the task is about, from its plugin; may be empty.")
    instructions: str = strawberry.field(
        description="What annotators are asked to do: the owners' own instructions where they set some, else the "
        "plugin's; may be empty."
    )
    labels: list[str] = strawberry.field(
        description="A classification task's labels, in order (empty for other tasks); a CHOICE field without "
        "choices of its own offers them."
    )
    principal_metric: str = strawberry.field(
        description="The metric that matters most: weighted 4 on the leaderboard by default, and the yardstick "
        "the other metrics' exchange rates are measured against."
    )
    metrics: list[str] = strawberry.field(description="The metrics models are evaluated on, by name.")
    perturbations: list[str] = strawberry.field(
        description="The perturbations whose copies of each scoring data set measure robustness and fairness, by name."
    )
    fairness_slices: list[str] = strawberry.field(
        description="The slices (groupings of items, e.g. by dialect) each evaluation breaks its metrics down by, "
        "by name."
    )
    hidden: bool = strawberry.field(description="Whether only its owners and admins can see the task.")
    active: bool = strawberry.field(description="Whether it takes new examples; createExample is refused while false.")

    @strawberry.field(
        description="Who decides whether an example fooled the model: the task's rule at once (RULE), a judge model "
        "with `judgeRubric` (JUDGE), or its validators voting on the model's output (PEOPLE); with JUDGE and PEOPLE "
        "createExample answers VerdictPending."
    )
    def verdict_by(self) -> VerdictSource:
        return VerdictSource(self.view.task.verdict)

    @strawberry.field(
        description="A warning to show, and have accepted, before anyone sees the task's examples, contexts and model "
        "outputs (they may be offensive or unsafe); null when there is none."
    )
    def content_warning(self) -> str | None:
        return self.view.task.content_warning or None

    @strawberry.field(
        description="What validators are told about judging the task's examples (the writers' `instructions` are "
        "for writing); null when the task gives none."
    )
    def validator_guidance(self) -> str | None:
        return self.view.task.validator_guidance or None

    @strawberry.field(
        description="The number the task's fooled rule compares with, as its owners set it (a metric such as chrF "
        "under which the model is fooled, or a probability); null when the rule has none."
    )
    def fooled_threshold(self) -> float | None:
        return self.view.task.fooled_threshold

    @strawberry.field(description="JUDGE tasks: what makes an answer wrong, as the judge model is told; else null.")
    def judge_rubric(self) -> str | None:
        judge = self.view.task.judge
        return None if judge is None else judge.rubric

    @strawberry.field(description="Whether the task was declared as data (declareTask) rather than installed.")
    def declared(self) -> bool:
        return isinstance(self.view.task, DeclaredTask)

    @strawberry.field(
        description="A declared task's declaration (see declaredTaskSchema), for its owners and admins; null for "
        "others (target model configurations may hold credentials) and for installed tasks."
    )
    async def declaration(self, info: Info) -> JSON | None:
        task = self.view.task
        if not isinstance(task, DeclaredTask):
            return None
        if not await task_service.owns_task(*info.context.caller, self.view.row.id):
            return None
        return JSON(task.declaration)

    @strawberry.field(
        description="The kinds of submission the task takes; the others' mutations answer InvalidInput on taskCode."
    )
    def submission_kinds(self) -> list[SubmissionKind]:
        return [SubmissionKind(kind) for kind in self.view.task.submission_kinds]

    @strawberry.field(description="How data selections are scored, when the task takes them (else null).")
    def data_selection(self) -> DataSelectionRules | None:
        rules = self.view.task.data_selection
        return None if rules is None else DataSelectionRules(budget=rules.budget, description=rules.description)

    @strawberry.field(description="Every field of the task, in the order the task declares them.")
    def fields(self) -> list[TaskField]:
        task = self.view.task
        return [task_field(f, task) for f in task.fields]

    @strawberry.field(description="JSON Schema (draft 2020-12) of the fields with the given roles (default: all).")
    def fields_json_schema(
        self,
        roles: Annotated[
            list[FieldRole] | None,
            strawberry.argument(description="The roles whose fields to include; null or empty: every field."),
        ] = None,
    ) -> JSON:
        return JSON(self.view.task.json_schema(*(Role(raw(r)) for r in roles or [])))

    @strawberry.field(description="The task's latest round, open or closed (see its endedAt); null before it has any.")
    async def current_round(self, info: Info) -> Round | None:
        row = await task_service.get_round(info.context.platform, self.view.row.id)
        return None if row is None else Round.from_row(row)

    @strawberry.field(description="One round of the task by its number; null when it has no such round.")
    async def round(
        self,
        info: Info,
        number: Annotated[int, strawberry.argument(description="The round's number: 1 for the first.")],
    ) -> Round | None:
        row = await task_service.get_round(info.context.platform, self.view.row.id, number)
        return None if row is None else Round.from_row(row)

    @strawberry.field(description="Every round, oldest first.")
    async def rounds(self, info: Info) -> list[Round]:
        rows = await task_service.list_rounds(info.context.platform, self.view.row.id)
        return [Round.from_row(r) for r in rows]

    @strawberry.field(description="The counters of every round added up.")
    async def stats(self, info: Info) -> Stats:
        return Stats.of(await stats_service.task_stats(info.context.platform, self.view.row.id))

    @strawberry.field(
        description="The counters of every round added up, split by where the examples came from: one entry per "
        "source (HUMAN, ASSISTED, MACHINE, in that order, zeros included); they add up to `stats`."
    )
    async def stats_by_source(self, info: Info) -> list[SourceStats]:
        p = info.context.platform
        return SourceStats.listing(
            await stats_service.by_source(p, await stats_service.task_round_ids(p, self.view.row.id))
        )

    @strawberry.field(description="What the task's owners tuned; anyone who can see the task can read it.")
    def settings(self) -> TaskSettings:
        return TaskSettings.of(self.view.settings)

    @strawberry.field(
        description="A cursor of this moment for the task's update subscriptions (evaluationUpdated, "
        "trainingJobUpdated, adversaryRunUpdated): read it in the query that loads a list, then subscribe with "
        "`after` set to it, and no change made after the list was read is missed."
    )
    def updates_cursor(self) -> str:
        return subscription_service.update_cursor(utcnow())

    @strawberry.field(
        description="Your submissions to this task in the last 24 hours against its allowance "
        "(TaskSettings.submissionsPerDay): how many more models, predictions or selections you may submit now. Null "
        "for anonymous callers (with a NOT_AUTHENTICATED error)."
    )
    @errors_as_graphql
    async def viewer_submissions(self, info: Info) -> SubmissionAllowance | None:
        counted = await submission_service.allowance(*info.context.caller, self.view.task.code)
        return SubmissionAllowance(limit=counted.limit, used=counted.used, left=counted.left, next_at=counted.next_at)

    @strawberry.field(
        description="Your own counters in this task, per round you wrote in and in total. Null for anonymous "
        "callers (with a NOT_AUTHENTICATED error). Ask it on `tasks` to read every task's counters in one request."
    )
    @errors_as_graphql
    async def viewer_stats(self, info: Info) -> UserTaskStats | None:
        return await UserTaskStats.mine(info, self.view.task.code)

    @strawberry.field(
        description="How many examples exampleToValidate could serve you now in this task and mode (those you "
        "skipped included): the size of your validation queue. Signed-in users; OWNER mode: owners and admins "
        "(others get null with a FORBIDDEN error)."
    )
    @errors_as_graphql
    async def validation_queue_size(
        self,
        info: Info,
        mode: Annotated[
            ValidationMode, strawberry.argument(description="Which queue to count; default: CROWD.")
        ] = ValidationMode.CROWD,
    ) -> int | None:
        return await validation_service.queue_size(
            *info.context.caller, self.view.task.code, owner_mode=mode == ValidationMode.OWNER
        )

    # ----------------------------------------------------------------------- the task's lists
    # Each answers what the deprecated root field of the same name (with taskCode) answers; the implementation is
    # the feature module's, registered in api/task_lists.py (those modules refer to Task: it imports none of them).
    # The element types are named lazily, by module, for the same reason.

    @strawberry.field(
        description="The task's contexts, newest first, for its owners and admins (null with a FORBIDDEN error for "
        "anyone else): those of one round, or with one tag, when asked."
    )
    @errors_as_graphql
    async def contexts(
        self,
        info: Info,
        round: ContextRound = None,
        tag: ContextTag = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[ContextType] | None:
        return await implementation("contexts")(info, self.code, round, tag, first, after, last, before)

    @strawberry.field(
        description="The task's examples, newest first, 20 a page by default. Signed-in users see their own; owners "
        "and admins see all (`mine: true` narrows to their own). Null for anonymous callers (with a "
        "NOT_AUTHENTICATED error)."
    )
    @errors_as_graphql
    async def examples(
        self,
        info: Info,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
        status: ExampleStatusFilter = None,
        mine: MineOnly = False,
        round: ExampleRound = None,
        fooled: FooledFilter = None,
        tag: ExampleTag = None,
        source: SourceFilter = None,
        adversary: AdversaryFilter = None,
        author: AuthorFilter = None,
    ) -> Connection[Annotated[Example, strawberry.lazy("dynaforge.api.types.example")]] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("examples")(
            info, self.code, first, after, last, before, status, mine, round, fooled, tag, source, adversary, author
        )

    @strawberry.field(
        description="The task's models, newest first: published ones for everyone who can see the task, and your "
        "own; every one for its owners and admins. `mine` narrows to yours, `published` to published (true) or "
        "unpublished (false) ones."
    )
    @errors_as_graphql
    async def models(
        self,
        info: Info,
        mine: MyModels = False,
        published: PublishedFilter = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Annotated[Model, strawberry.lazy("dynaforge.api.models")]] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("models")(info, self.code, mine, published, first, after, last, before)

    @strawberry.field(
        description="The task's data sets, oldest first (a round's sets beside their perturbed copies); HIDDEN ones "
        "for its owners and admins only. Pages of up to 100, 100 by default."
    )
    @errors_as_graphql
    async def datasets(
        self, info: Info, first: First = None, after: After = None, last: Last = None, before: Before = None
    ) -> Connection[Annotated[Dataset, strawberry.lazy("dynaforge.api.datasets")]] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("datasets")(info, self.code, first, after, last, before)

    @strawberry.field(
        description="The task's published models ranked by a Dynascore with your weights (default: each axis's "
        "Leaderboard.metrics[].defaultWeight, 0 on an axis no model has a figure for yet; data sets equal). Null "
        "with an error when the weights are wrong."
    )
    @errors_as_graphql
    async def leaderboard(
        self,
        info: Info,
        metric_weights: MetricWeights = None,
        dataset_weights: DatasetWeights = None,
        sort: Sort = LeaderboardSort.DYNASCORE,
        sort_metric: SortMetric = None,
        fork_id: ForkId = None,
    ) -> Annotated[Leaderboard, strawberry.lazy("dynaforge.api.leaderboards")] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("leaderboard")(
            info, self.code, metric_weights, dataset_weights, sort, sort_metric, fork_id
        )

    @strawberry.field(
        description="The leaderboard forks you saved on this task, newest first. Null for anonymous callers (with a "
        "NOT_AUTHENTICATED error)."
    )
    @errors_as_graphql
    async def viewer_leaderboard_forks(
        self, info: Info, first: First = None, after: After = None, last: Last = None, before: Before = None
    ) -> Connection[Annotated[LeaderboardFork, strawberry.lazy("dynaforge.api.leaderboards")]] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("viewerLeaderboardForks")(info, self.code, first, after, last, before)

    @strawberry.field(
        description="The leaderboard snapshots you took of this task, newest first. Null for anonymous callers "
        "(with a NOT_AUTHENTICATED error)."
    )
    @errors_as_graphql
    async def viewer_leaderboard_snapshots(
        self, info: Info, first: First = None, after: After = None, last: Last = None, before: Before = None
    ) -> Connection[Annotated[LeaderboardSnapshot, strawberry.lazy("dynaforge.api.leaderboards")]] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("viewerLeaderboardSnapshots")(info, self.code, first, after, last, before)

    @strawberry.field(
        description="Your webhooks on this task (its owners and admins: everyone's), oldest first, with their "
        "deliveries. Null for anonymous callers (with a NOT_AUTHENTICATED error)."
    )
    @errors_as_graphql
    async def webhooks(self, info: Info) -> list[Annotated[Webhook, strawberry.lazy("dynaforge.api.webhooks")]] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("webhooks")(info, self.code)

    @strawberry.field(
        description="Its owners and admins: each crowd validator's agreement with decided outcomes and with owners' "
        "overrides, their weight in the quorum, and Krippendorff's alpha per round. Null for anyone else (with a "
        "FORBIDDEN error) and for a round the task does not have (NOT_FOUND)."
    )
    @errors_as_graphql
    async def validator_quality(
        self,
        info: Info,
        round: Annotated[
            int | None, strawberry.argument(description="Only this round's votes (its number); null: every round.")
        ] = None,
    ) -> Annotated[ValidatorQuality, strawberry.lazy("dynaforge.api.validators")] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("validatorQuality")(info, self.code, round)

    @strawberry.field(
        description="The task's tutorial and where you stand in it: practice on decided examples, and the pass mark "
        "your work may wait for. Signed-in users (null with a NOT_AUTHENTICATED error for anonymous callers)."
    )
    @errors_as_graphql
    async def tutorial(self, info: Info) -> Annotated[Tutorial, strawberry.lazy("dynaforge.api.tutorial")] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("tutorial")(info, self.code)

    @strawberry.field(
        description="The task's crowd studies, newest first, with each participant's work and pay: its owners and "
        "admins (null with a FORBIDDEN error for everyone else)."
    )
    @errors_as_graphql
    async def crowd_studies(
        self, info: Info
    ) -> list[Annotated[CrowdStudy, strawberry.lazy("dynaforge.api.crowd")]] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("crowdStudies")(info, self.code)

    @strawberry.field(description="The task's training recipes.")
    @errors_as_graphql
    async def training_recipes(
        self, info: Info
    ) -> list[Annotated[TrainingRecipe, strawberry.lazy("dynaforge.api.training")]] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("trainingRecipes")(info, self.code)

    @strawberry.field(
        description="The task's model registry, a page at a time, newest first unless `orderBy` says otherwise: "
        "every entry for its owners and admins, the entries some round targeted for others."
    )
    @errors_as_graphql
    async def registered_models(
        self,
        info: Info,
        order_by: OrderBy = CreationOrder.NEWEST_FIRST,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[RegisteredModel] | None:
        return await implementation("registeredModels")(
            info, self.code, work_page(None, order_by, first, after, last, before)
        )

    @strawberry.field(
        description="The task's training jobs, a page at a time, newest first unless `orderBy` says otherwise. "
        "Owners and admins (others get null with a FORBIDDEN error)."
    )
    @errors_as_graphql
    async def training_jobs(
        self,
        info: Info,
        status: JobStatusFilter = None,
        order_by: OrderBy = CreationOrder.NEWEST_FIRST,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Annotated[TrainingJob, strawberry.lazy("dynaforge.api.training")]] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("trainingJobs")(
            info, self.code, work_page(status, order_by, first, after, last, before)
        )

    @strawberry.field(
        description="Every evaluated registered model against each round's test set: the principal metric and the "
        "fooling rate, with intervals. Owners and admins (others get null with a FORBIDDEN error)."
    )
    @errors_as_graphql
    async def round_model_matrix(
        self, info: Info
    ) -> Annotated[RoundModelMatrix, strawberry.lazy("dynaforge.api.training")] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("roundModelMatrix")(info, self.code)

    @strawberry.field(
        description="Two models compared item by item on one of the task's data sets, where both evaluations are "
        "DONE: McNemar's exact test and a paired bootstrap of the principal metric. Owners and admins (others get "
        "null with a FORBIDDEN error); a CONFLICT error until both are evaluated."
    )
    @errors_as_graphql
    async def paired_test(
        self,
        info: Info,
        model: Annotated[strawberry.ID, strawberry.argument(description="The first model (Model.id).")],
        against: Annotated[strawberry.ID, strawberry.argument(description="The model to compare it with (Model.id).")],
        dataset: Annotated[
            strawberry.ID, strawberry.argument(description="The data set both were evaluated on (Dataset.id).")
        ],
    ) -> Annotated[PairedTest, strawberry.lazy("dynaforge.api.training")] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("pairedTest")(info, self.code, model, against, dataset)

    @strawberry.field(
        description="The machine adversaries installed on the server, each with whether it can serve this task."
    )
    @errors_as_graphql
    async def adversaries(
        self, info: Info
    ) -> list[Annotated[Adversary, strawberry.lazy("dynaforge.api.adversaries")]] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("adversaries")(info, self.code)

    @strawberry.field(
        description="The task's generation runs, a page at a time, newest first unless `orderBy` says otherwise. "
        "Owners and admins (others get null with a FORBIDDEN error)."
    )
    @errors_as_graphql
    async def adversary_runs(
        self,
        info: Info,
        status: RunStatusFilter = None,
        order_by: OrderBy = CreationOrder.NEWEST_FIRST,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Annotated[AdversaryRun, strawberry.lazy("dynaforge.api.adversaries")]] | None:  # type: ignore[name-defined]  # noqa: F821
        return await implementation("adversaryRuns")(
            info, self.code, work_page(status, order_by, first, after, last, before)
        )

    @strawberry.field(description="Whether the signed-in user owns this task (or is an admin).")
    async def viewer_is_owner(self, info: Info) -> bool:
        return await task_service.owns_task(*info.context.caller, self.view.row.id)

    @strawberry.field(
        description="What this server found wrong with the task while running, e.g. a round target that answered "
        "none of the task's sample examples usably when the server started (checked once, in the background; "
        "cleared when it answers an example). For the task's owners and admins; empty for everyone else."
    )
    async def problems(self, info: Info) -> list[str]:
        return await example_service.target_problems(*info.context.caller, self.view.row.id, self.view.task.code)

    @strawberry.field(description="The task's owners.")
    async def owners(self, info: Info) -> list[User]:
        return [User.from_row(u) for u in await task_service.owners(info.context.platform, self.view.row.id)]

    @classmethod
    def from_view(cls, view: task_service.TaskView) -> Task:
        t = view.task
        return cls(
            view=view,
            id=global_id("Task", t.code),
            code=t.code,
            name=t.name,
            description=t.description,
            instructions=view.instructions,
            labels=list(t.labels),
            principal_metric=t.principal_metric,
            metrics=list(t.metrics),
            perturbations=list(t.perturbations),
            fairness_slices=list(t.fairness_slices),
            hidden=view.row.hidden,
            active=view.row.active,
        )
