"""Retraining on the platform: the model registry, training jobs, the round × model matrix, training progress."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.arguments import JobStatusFilter
from dynaforge.api.context import Info, TaskCode
from dynaforge.api.datasets import Dataset
from dynaforge.api.enums import CreationOrder, OrderBy, TrainingStatus, work_page
from dynaforge.api.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    QuotaExceeded,
    errors_as_graphql,
    errors_as_union,
)
from dynaforge.api.models import Evaluation, Model
from dynaforge.api.node import Node, global_id, parse_id
from dynaforge.api.task_lists import task_list
from dynaforge.api.types.connection import After, Before, Connection, First, Last
from dynaforge.api.types.parameters import ParameterType, ParameterValue, parameter_type, parameter_values
from dynaforge.api.types.registered import RegisteredModel
from dynaforge.db.models import TrainingJob as TrainingJobRow
from dynaforge.db.models import as_utc
from dynaforge.errors import FieldError
from dynaforge.errors import InvalidInput as DomainInvalidInput
from dynaforge.services import datasets as dataset_service
from dynaforge.services import per_item as per_item_service
from dynaforge.services import tasks as task_service
from dynaforge.services import training as training_service
from dynaforge.services.cursors import WorkPage
from dynaforge.tasks.base import TrainingRecipe as RecipeSpec


@strawberry.type(description="One hyper-parameter of a training recipe.")
class RecipeParameter:
    name: str = strawberry.field(description="Its name (a key of trainCandidateModel's `hyperparameters`).")
    type: ParameterType = strawberry.field(description="The type a value must have.")
    default: JSON = strawberry.field(description="Its default.")


@strawberry.type(description="A hyper-parameter a tuning job chooses, and the values it tries.")
class TunableParameter:
    name: str = strawberry.field(description="Its name (one of TrainingRecipe.parameters).")
    values: list[JSON] = strawberry.field(description="The values tried, each with the default's type.")


@strawberry.type(description="How a task trains new versions of its model from the platform's examples.")
class TrainingRecipe:
    name: str = strawberry.field(description="Its name (trainCandidateModel's `recipe`).")
    model: str = strawberry.field(description="The model it trains (the name of the task's default target).")
    description: str = strawberry.field(description="What it does, in the task author's words.")
    hyperparameters: JSON = strawberry.field(
        description="Its hyper-parameters with their defaults; a value given must have the default's type.",
        deprecation_reason="Use parameters: each with its type and default.",
    )
    parameters: list[RecipeParameter] = strawberry.field(
        description="Its hyper-parameters, typed, in the recipe's order, each with its default."
    )
    base_data: str = strawberry.field(
        description="What its base data is (empty: it uses none); includeBaseData adds it to the data sets."
    )
    base_data_available: bool = strawberry.field(
        description="Whether this server holds the base data (DYNAFORGE_TRAINING_DATA_DIR/<task>)."
    )
    tuning: list[TunableParameter] = strawberry.field(
        description="The hyper-parameters a job may choose on a development set (trainCandidateModel's tuneOn), "
        "with the values it tries; empty when the recipe tunes nothing."
    )

    @classmethod
    def of(cls, recipe: RecipeSpec, available: bool) -> TrainingRecipe:
        return cls(
            name=recipe.name,
            model=recipe.model,
            description=recipe.description,
            hyperparameters=JSON(dict(recipe.hyperparameters)),
            parameters=[
                RecipeParameter(name=name, type=parameter_type(value), default=JSON(value))
                for name, value in recipe.hyperparameters.items()
            ],
            base_data=recipe.base_data,
            base_data_available=available and bool(recipe.base_data),
            tuning=[
                TunableParameter(name=name, values=[JSON(v) for v in values]) for name, values in recipe.tuning.items()
            ],
        )


@strawberry.type(description="A training job (the task's owners and admins): a recipe trained into a candidate.")
class TrainingJob(Node):
    row: strawberry.Private[TrainingJobRow]
    recipe: str = strawberry.field(description="The recipe it runs.")
    hyperparameters: JSON = strawberry.field(
        description="The hyper-parameters, defaults filled in.", deprecation_reason="Use parameters: typed values."
    )
    parameters: list[ParameterValue] = strawberry.field(
        description="The hyper-parameters, defaults filled in, each a typed value, in the recipe's order."
    )
    seed: int = strawberry.field(description="The seed: the same data, recipe and seed give the same weights.")
    include_base_data: bool = strawberry.field(description="Whether the task's base data is added to the data sets.")
    status: TrainingStatus = strawberry.field(description="Where it is.")
    progress: float = strawberry.field(description="How far the recipe is, 0 to 1.")
    stage: str = strawberry.field(description="What the recipe is doing (its own words: embedding, fitting, ...).")
    error: str | None = strawberry.field(description="Why it FAILED.")
    log_tail: str | None = strawberry.field(description="The end of the recipe's log when it FAILED.")
    attempts: int = strawberry.field(description="How many times it started (a killed worker's job starts again).")
    created_at: datetime = strawberry.field(description="When it was asked for (UTC).")
    started_at: datetime | None = strawberry.field(description="When its last attempt started.")
    finished_at: datetime | None = strawberry.field(description="When it ended.")

    @strawberry.field(description="The data sets it trains on, in the order given.")
    async def datasets(self, info: Info) -> list[Dataset]:
        out = []
        for dataset_id in self.row.dataset_ids:
            try:
                row, _ = await dataset_service.get_dataset(*info.context.caller, int(dataset_id))
            except Exception:  # noqa: BLE001 - a data set deleted since is left out
                continue
            out.append(Dataset.from_row(row))
        return out

    @strawberry.field(
        description="The development set it chooses hyper-parameters on (tuneOn); null when it does not tune, or "
        "when that set was deleted since. The outcome is the candidate's RegisteredModel.tuning."
    )
    async def tune_on(self, info: Info) -> Dataset | None:
        if self.row.tuning_dataset_id is None:
            return None
        try:
            row, _ = await dataset_service.get_dataset(*info.context.caller, int(self.row.tuning_dataset_id))
        except Exception:  # noqa: BLE001 - a data set deleted since is null
            return None
        return Dataset.from_row(row)

    @strawberry.field(
        description="The combinations of hyper-parameters it trains and compares on tuneOn (one training each); "
        "empty when it does not tune."
    )
    def tuning_grid(self) -> list[JSON]:
        return [JSON(dict(combo)) for combo in self.row.tuning_grid or []] if self.row.tuning_dataset_id else []

    @strawberry.field(description="The model it trains from (the round's target when it was asked for).")
    async def parent(self, info: Info) -> RegisteredModel | None:
        if self.row.parent_id is None:
            return None
        row = (await training_service.registered_many(*info.context.caller, [self.row.parent_id])).get(
            self.row.parent_id
        )
        return None if row is None else RegisteredModel.from_row(row)

    @strawberry.field(description="The registered candidate, once SUCCEEDED.")
    async def candidate(self, info: Info) -> RegisteredModel | None:
        if self.row.candidate_id is None:
            return None
        row = (await training_service.registered_many(*info.context.caller, [self.row.candidate_id])).get(
            self.row.candidate_id
        )
        return None if row is None else RegisteredModel.from_row(row)

    @classmethod
    def from_row(cls, row: TrainingJobRow) -> TrainingJob:
        return cls(
            row=row,
            id=global_id("TrainingJob", row.id),
            recipe=row.recipe,
            hyperparameters=JSON(dict(row.hyperparameters or {})),
            parameters=parameter_values(row.hyperparameters),
            seed=row.seed,
            include_base_data=row.include_base_data,
            status=TrainingStatus(row.status),
            progress=row.progress,
            stage=row.stage,
            error=row.error,
            log_tail=row.log_tail,
            attempts=row.attempts,
            created_at=as_utc(row.created_at),
            started_at=as_utc(row.started_at),
            finished_at=as_utc(row.finished_at),
        )


@strawberry.type(description="A proportion with its 95% interval.")
class Estimate:
    value: float = strawberry.field(description="The point estimate.")
    low: float | None = strawberry.field(description="The interval's lower end (null: no interval).")
    high: float | None = strawberry.field(description="The interval's upper end.")


@strawberry.type(description="One registered model on one round's test set.")
class MatrixCell:
    round_number: int = strawberry.field(description="The round whose test set this is.")
    dataset: Dataset = strawberry.field(description="That test set.")
    evaluation: Evaluation | None = strawberry.field(
        description="The evaluation behind the figures (null: the model was never queued on this set)."
    )
    metric: Estimate | None = strawberry.field(
        description="The task's principal metric with its bootstrap interval; null until the evaluation is DONE."
    )
    fooling_rate: Estimate | None = strawberry.field(
        description="The share of the set's (validated) examples that fool the model by the task's own rule, with "
        "a Wilson interval: the vMER that round would have had with this model in the loop (its error rate on the "
        "whole set)."
    )
    still_fooled: Estimate | None = strawberry.field(
        description="Among the set's examples that fooled the round's target when they were written, the share "
        "that still fool this model (by the same rule), with a Wilson interval: what retraining on the round should "
        "bring down. Null when none of the scored examples fooled the target (or the evaluation predates it)."
    )
    still_fooled_items: int = strawberry.field(
        description="How many scored examples had fooled the round's target: what `stillFooled` is measured on."
    )
    items: int = strawberry.field(description="How many examples were scored.")


@strawberry.type(description="One registered model across every round's test set.")
class MatrixRow:
    model: RegisteredModel = strawberry.field(description="The registered model.")
    cells: list[MatrixCell] = strawberry.field(description="One per round with a test set, in round order.")
    targeted_rounds: list[int] = strawberry.field(description="The rounds it was the target of.")


@strawberry.type(
    description="Every evaluated registered model of a task against each round's test set: which model a round "
    "should target next, and whether the candidates trained on the rounds beat their parents."
)
class RoundModelMatrix:
    metric: str = strawberry.field(description="The principal metric shown.")
    rounds: list[int] = strawberry.field(description="The rounds with a test set (the columns), in order.")
    rows: list[MatrixRow] = strawberry.field(description="One per evaluated registered model, oldest first.")


def _estimate(value: float | None, interval: tuple[float, float] | None) -> Estimate | None:
    if value is None:
        return None
    low, high = interval if interval else (None, None)
    return Estimate(value=float(value), low=low, high=high)


def _matrix(matrix: training_service.Matrix, privileged: bool) -> RoundModelMatrix:
    rows = []
    for row in matrix.rows:
        cells = [
            MatrixCell(
                round_number=c.round_number,
                dataset=Dataset.from_row(c.dataset),
                evaluation=None if c.evaluation is None else Evaluation.of(c.evaluation, c.dataset, privileged),
                metric=_estimate(c.value, c.interval),
                fooling_rate=_estimate(c.fooling_rate, c.fooling_interval),
                still_fooled=_estimate(c.still_fooled, c.still_fooled_interval),
                still_fooled_items=c.still_fooled_items,
                items=c.items,
            )
            for c in row.cells
        ]
        rows.append(
            MatrixRow(model=RegisteredModel.from_row(row.entry), cells=cells, targeted_rounds=row.targeted_rounds)
        )
    return RoundModelMatrix(metric=matrix.metric, rounds=sorted(matrix.test_sets), rows=rows)


@strawberry.type(
    description="Two models on the same items of one data set: McNemar's exact test on which items each got right "
    "(by the task's own rule, as `fooled` is decided), and a paired bootstrap of the principal metric. The "
    "p-values say how surprising the gap would be if the two were equally good on what the set samples."
)
class PairedTest:
    dataset: Dataset = strawberry.field(description="The data set both were evaluated on.")
    model: Model = strawberry.field(description="The first model (`model`): differences are it minus `against`.")
    against: Model = strawberry.field(description="The second model (`against`).")
    items: int = strawberry.field(description="How many items were paired.")
    both_right: int = strawberry.field(description="Items both got right.")
    only_model_right: int = strawberry.field(description="Items only `model` got right (a discordant pair).")
    only_against_right: int = strawberry.field(description="Items only `against` got right (a discordant pair).")
    both_wrong: int = strawberry.field(description="Items both got wrong (fooled, or an unusable output).")
    mcnemar_statistic: int = strawberry.field(
        description="The exact test's statistic: the smaller count of discordant pairs (as statsmodels' "
        "mcnemar(exact=True) reports it)."
    )
    mcnemar_p_value: float = strawberry.field(
        description="McNemar's two-sided exact p-value (a binomial test on the discordant pairs at 1/2); 1 without "
        "any discordant pair."
    )
    metric: str = strawberry.field(description="The metric bootstrapped: the task's principal metric.")
    model_value: float = strawberry.field(description="`model`'s value of the metric on the set.")
    against_value: float = strawberry.field(description="`against`'s value of the metric on the set.")
    difference: Estimate = strawberry.field(
        description="`model` minus `against`, with its paired bootstrap 95% interval (both scored on each "
        "resample's same items; seeded by the set's id)."
    )
    bootstrap_p_value: float = strawberry.field(
        description="The paired bootstrap's two-sided p-value for no difference (twice the share of resamples on the "
        "far side of 0; its resolution is 1 / resamples)."
    )
    resamples: int = strawberry.field(description="How many bootstrap resamples were drawn.")

    @classmethod
    def of(cls, test: per_item_service.PairedTest) -> PairedTest:
        m, d = test.mcnemar, test.difference
        return cls(
            dataset=Dataset.from_row(test.dataset),
            model=Model.from_row(test.first, True),
            against=Model.from_row(test.second, True),
            items=m.n,
            both_right=m.both,
            only_model_right=m.only_first,
            only_against_right=m.only_second,
            both_wrong=m.neither,
            mcnemar_statistic=m.statistic,
            mcnemar_p_value=m.p_value,
            metric=d.metric,
            model_value=d.first,
            against_value=d.second,
            difference=Estimate(value=d.difference, low=d.interval.low, high=d.interval.high),
            bootstrap_p_value=d.p_value,
            resamples=d.resamples,
        )


@task_list("pairedTest")
async def paired_test_of(
    info: Info, task_code: str, model: strawberry.ID, against: strawberry.ID, dataset: strawberry.ID
) -> PairedTest:
    """Task.pairedTest."""
    test = await per_item_service.paired_test(
        *info.context.caller,
        task_code,
        parse_id(model, "model", "Model"),
        parse_id(against, "against", "Model"),
        parse_id(dataset, "dataset", "Dataset"),
    )
    return PairedTest.of(test)


# --------------------------------------------------------------------------- queries


@task_list("trainingRecipes")
async def recipes_of(info: Info, task_code: str) -> list[TrainingRecipe]:
    """Task.trainingRecipes (and the deprecated root field)."""
    p, actor = info.context.caller
    view = await task_service.get_task(p, actor, task_code)
    available = training_service.base_data_dir(p.settings, view.task) is not None
    return [TrainingRecipe.of(r, available) for r in view.task.training_recipes]


@task_list("registeredModels")
async def registered_of(info: Info, task_code: str, page: WorkPage) -> Connection[RegisteredModel]:
    """Task.registeredModels."""
    listing = await training_service.registered_listing(*info.context.caller, task_code, page)
    return Connection.from_listing(listing, RegisteredModel.from_row)


@task_list("trainingJobs")
async def jobs_of(info: Info, task_code: str, page: WorkPage) -> Connection[TrainingJob]:
    """Task.trainingJobs (and the deprecated root field)."""
    listing = await training_service.list_jobs(*info.context.caller, task_code, page)
    return Connection.from_listing(listing, TrainingJob.from_row)


@task_list("roundModelMatrix")
async def matrix_of(info: Info, task_code: str) -> RoundModelMatrix:
    """Task.roundModelMatrix (and the deprecated root field)."""
    return _matrix(await training_service.round_model_matrix(*info.context.caller, task_code), True)


@strawberry.type
class TrainingQuery:
    @strawberry.field(
        description="The task's training recipes (anyone who can see the task).",
        deprecation_reason="Use Task.trainingRecipes (task(code:) { ... }).",
    )
    @errors_as_graphql
    async def training_recipes(self, info: Info, task_code: TaskCode) -> list[TrainingRecipe] | None:
        return await recipes_of(info, task_code)

    @strawberry.field(
        description="The task's model registry, newest first: every entry for its owners and admins, the entries "
        "some round targeted for others.",
        deprecation_reason="Use Task.registeredModels (task(code:) { ... }).",
    )
    @errors_as_graphql
    async def registered_models(self, info: Info, task_code: TaskCode) -> list[RegisteredModel] | None:
        rows = await training_service.registered_models(*info.context.caller, task_code)
        return [RegisteredModel.from_row(r) for r in rows]

    @strawberry.field(
        description="The task's training jobs, a page at a time (owners and admins), newest first unless `orderBy` "
        "says otherwise.",
        deprecation_reason="Use Task.trainingJobs (task(code:) { ... }).",
    )
    @errors_as_graphql
    async def training_jobs(
        self,
        info: Info,
        task_code: TaskCode,
        status: JobStatusFilter = None,
        order_by: OrderBy = CreationOrder.NEWEST_FIRST,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[TrainingJob] | None:
        return await jobs_of(info, task_code, work_page(status, order_by, first, after, last, before))

    @strawberry.field(
        description="Every evaluated registered model against each round's test set (owners and admins): the "
        "principal metric and the fooling rate, with intervals.",
        deprecation_reason="Use Task.roundModelMatrix (task(code:) { ... }).",
    )
    @errors_as_graphql
    async def round_model_matrix(self, info: Info, task_code: TaskCode) -> RoundModelMatrix | None:
        return await matrix_of(info, task_code)


# --------------------------------------------------------------------------- mutations


@strawberry.input(description="A candidate model to train on the platform's data.")
class TrainCandidateModelInput:
    task_code: str = strawberry.field(description="The code of the task (Task.code).")
    datasets: list[strawberry.ID] = strawberry.field(
        description="The data sets to train on (Dataset.id), e.g. the train splits of the rounds so far; their "
        "items as validated (an owner's correction replaces the annotator's target)."
    )
    recipe: str | None = strawberry.field(default=None, description="The recipe (default: the task's first).")
    hyperparameters: JSON | None = strawberry.field(
        default=None, description="Values for the recipe's hyper-parameters (TrainingRecipe.hyperparameters)."
    )
    seed: int = strawberry.field(default=0, description="The seed; the same inputs and seed give the same weights.")
    include_base_data: bool = strawberry.field(
        default=False,
        description="Add the task's base data (TrainingRecipe.baseData, where the server holds it) to the data sets.",
    )
    tune_on: strawberry.ID | None = strawberry.field(
        default=None,
        description="A development set of the task (Dataset.id: the round's dev split) on which the job chooses "
        "the recipe's tunable hyper-parameters (TrainingRecipe.tuning) left out of `hyperparameters`: one training "
        "per combination, the most accurate there kept. Not a scoring or test set, nor one trained on.",
    )


@strawberry.type(description="The training job is queued; follow it with trainingProgress or trainingJobs.")
class TrainingStarted:
    job: TrainingJob = strawberry.field(description="The queued job.")


@strawberry.input(description="The training job to stop.")
class CancelTrainingInput:
    id: strawberry.ID = strawberry.field(description="The job's id (TrainingJob.id).")


@strawberry.type(description="The job is cancelled (a running one stops within seconds; nothing is registered).")
class TrainingCancelled:
    job: TrainingJob = strawberry.field(description="The job.")


@strawberry.input(description="The task whose current round's targets to evaluate.")
class EvaluateRoundTargetsInput:
    task_code: str = strawberry.field(description="The code of the task (Task.code).")
    published: bool = strawberry.field(
        default=False, description="Publish the models on the leaderboard (default: only owners and admins see them)."
    )


@strawberry.type(description="The round's targets are queued for evaluation on every scoring set.")
class RoundTargetsQueued:
    models: list[Model] = strawberry.field(
        description="The models made, yours (none when every target had one already: RegisteredModel.modelId)."
    )


EvaluateRoundTargetsResult = Annotated[
    RoundTargetsQueued | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "EvaluateRoundTargetsResult",
        description="RoundTargetsQueued on success. The other members are the expected failures: InvalidInput, "
        "NotAuthenticated, Forbidden (not an owner of the task or an admin), NotFound (no such task you can see).",
    ),
]

TrainCandidateModelResult = Annotated[
    TrainingStarted | InvalidInput | NotAuthenticated | Forbidden | NotFound | QuotaExceeded,
    strawberry.union(
        "TrainCandidateModelResult",
        description="TrainingStarted: the job is queued. The other members are the expected failures, and store "
        "nothing: InvalidInput (no such recipe, data set or hyper-parameter, a value of the wrong type, base data "
        "this server lacks), NotAuthenticated, Forbidden (not an owner of the task or an admin), NotFound (no such "
        "task you can see), QuotaExceeded (TRAINING_JOBS_PER_DAY reached).",
    ),
]
CancelTrainingResult = Annotated[
    TrainingCancelled | InvalidInput | NotAuthenticated | NotFound | Conflict,
    strawberry.union(
        "CancelTrainingResult",
        description="TrainingCancelled on success. The other members are the expected failures: InvalidInput (not "
        "a TrainingJob's id), NotAuthenticated, NotFound (no such job you can see), Conflict (it already ended).",
    ),
]


def _hyperparameters(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DomainInvalidInput.from_errors([FieldError("hyperparameters", "type", "must be a JSON object")])
    return dict(value)


@strawberry.type
class TrainingMutation:
    @strawberry.mutation(
        description="Owners and admins train a candidate target model with the task's recipe on data sets of the "
        "platform (a job with progress in trainingProgress). The candidate is registered with its lineage and "
        "evaluated on every scoring set as an unpublished model of yours; openNextRound(candidate:) promotes it."
    )
    @errors_as_union
    async def train_candidate_model(
        self,
        info: Info,
        input: Annotated[TrainCandidateModelInput, strawberry.argument(description="What to train on, and how.")],
    ) -> TrainCandidateModelResult:
        job = await training_service.train_candidate(
            *info.context.caller,
            task_code=input.task_code,
            dataset_ids=[parse_id(d, "datasets", "Dataset") for d in input.datasets],
            recipe=input.recipe,
            hyperparameters=_hyperparameters(input.hyperparameters),
            seed=input.seed,
            include_base_data=input.include_base_data,
            tune_on=None if input.tune_on is None else parse_id(input.tune_on, "tuneOn", "Dataset"),
        )
        return TrainingStarted(job=TrainingJob.from_row(job))

    @strawberry.mutation(
        description="Owners and admins evaluate the current round's target models on every scoring set (each "
        "becomes a model of yours, linked from RegisteredModel.modelId), so that roundModelMatrix compares them with "
        "the candidates trained from them."
    )
    @errors_as_union
    async def evaluate_round_targets(
        self,
        info: Info,
        input: Annotated[EvaluateRoundTargetsInput, strawberry.argument(description="The task.")],
    ) -> EvaluateRoundTargetsResult:
        made = await training_service.evaluate_round_targets(
            *info.context.caller, input.task_code, published=input.published
        )
        return RoundTargetsQueued(models=[Model.from_row(row, True) for row in made])

    @strawberry.mutation(description="Owners and admins stop a queued or running training job.")
    @errors_as_union
    async def cancel_training(
        self,
        info: Info,
        input: Annotated[CancelTrainingInput, strawberry.argument(description="The job.")],
    ) -> CancelTrainingResult:
        job = await training_service.cancel_training(*info.context.caller, parse_id(input.id, "id", "TrainingJob"))
        return TrainingCancelled(job=TrainingJob.from_row(job))
