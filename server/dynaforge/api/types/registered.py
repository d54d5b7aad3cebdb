"""The model registry's entries in GraphQL (a module of its own: rounds name them, and it imports no round)."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Annotated, Any

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import Info
from dynaforge.api.node import Node, global_id, related
from dynaforge.api.types.parameters import ParameterValue, parameter_values
from dynaforge.db.models import RegisteredModel as RegisteredModelRow
from dynaforge.db.models import as_utc
from dynaforge.services import tasks as task_service
from dynaforge.services import training as training_service


@strawberry.enum(description="Where a registered model came from.")
class ModelOrigin(Enum):
    SHIPPED = strawberry.enum_value("SHIPPED", description="The weights the task's plugin package ships.")
    STORE = strawberry.enum_value(
        "STORE", description="What an operator trained with `dynaforge train` into the model store."
    )
    CONFIGURED = strawberry.enum_value(
        "CONFIGURED", description="A configuration an owner or admin set: an endpoint, an uploaded artifact, ..."
    )
    TRAINED = strawberry.enum_value("TRAINED", description="A candidate a training job trained on the platform.")


@strawberry.type(description="One figure a training recipe measured.")
class RecipeMetric:
    name: str = strawberry.field(description="Its name, as the recipe reports it (for example training_accuracy).")
    value: float | None = strawberry.field(description="Its value; null when the recipe reported something else.")
    text: str | None = strawberry.field(description="What the recipe reported, when it was not a number.")

    @classmethod
    def listing(cls, stored: Any) -> list[RecipeMetric]:
        if not isinstance(stored, dict):
            return []
        out = []
        for name, value in stored.items():
            if name == "tuning":  # RegisteredModel.tuning, typed
                continue
            number = isinstance(value, int | float) and not isinstance(value, bool)
            out.append(cls(name=str(name), value=float(value) if number else None, text=None if number else str(value)))
        return out


@strawberry.type(description="A data set a model was trained on, as it was read.")
class TrainingSet:
    dataset_id: strawberry.ID = strawberry.field(description="The data set's id (Dataset.id); it may be deleted since.")
    name: str = strawberry.field(description="Its name then.")
    size: int | None = strawberry.field(description="How many examples were read from it.")
    sha256: str | None = strawberry.field(description="The SHA-256 of the examples read, to check a copy against.")

    @classmethod
    def of(cls, stored: Any) -> TrainingSet | None:
        """A job's record of a set it read (``{"id", "name", "size", "sha256"}``), or None when it is not one."""
        if not isinstance(stored, dict) or not isinstance(stored.get("id"), int):
            return None
        size = stored.get("size")
        return cls(
            dataset_id=global_id("Dataset", stored["id"]),
            name=str(stored.get("name", "")),
            size=size if isinstance(size, int) else None,
            sha256=stored.get("sha256") if isinstance(stored.get("sha256"), str) else None,
        )


@strawberry.type(description="What a registered model was trained on.")
class TrainingData:
    datasets: list[TrainingSet] = strawberry.field(description="The data sets, in the job's order.")
    examples: int | None = strawberry.field(description="How many examples, in all.")
    examples_sha256: str | None = strawberry.field(description="The SHA-256 of every example read, in order.")
    base_data: bool = strawberry.field(description="Whether the task's base data was included.")

    @classmethod
    def of(cls, stored: Any) -> TrainingData | None:
        if not isinstance(stored, dict) or not stored:
            return None
        sets = [s for s in (TrainingSet.of(d) for d in stored.get("datasets") or []) if s is not None]
        examples = stored.get("examples")
        digest = stored.get("examples_sha256")
        return cls(
            datasets=sets,
            examples=examples if isinstance(examples, int) else None,
            examples_sha256=digest if isinstance(digest, str) else None,
            base_data=stored.get("base_data") is True,
        )


@strawberry.type(description="One combination of hyper-parameters a tuning job trained and scored.")
class TuningTrial:
    hyperparameters: JSON = strawberry.field(
        description="The values it tried (the others were the job's).", deprecation_reason="Use parameters."
    )
    parameters: list[ParameterValue] = strawberry.field(
        description="The values it tried (the others were the job's), typed."
    )
    dev_accuracy: float = strawberry.field(description="Its accuracy on the development set, 0 to 1.")
    dev_items: int = strawberry.field(description="How many items the development set had.")
    chosen: bool = strawberry.field(description="Whether it is the one kept (the most accurate; ties: the earlier).")


@strawberry.type(
    description="How a training job chose hyper-parameters on a development set (trainCandidateModel's tuneOn)."
)
class Tuning:
    dataset: TrainingSet | None = strawberry.field(description="The development set, as it was read.")
    metric: str = strawberry.field(description="What the trials were compared by (accuracy).")
    trials: list[TuningTrial] = strawberry.field(description="Every combination tried, in the order tried.")
    chosen: JSON = strawberry.field(
        description="The values kept (also in RegisteredModel.parameters).", deprecation_reason="Use chosenParameters."
    )
    chosen_parameters: list[ParameterValue] = strawberry.field(
        description="The values kept (also in RegisteredModel.parameters), typed."
    )

    @classmethod
    def of(cls, stored: Any) -> Tuning | None:
        if not isinstance(stored, dict) or not isinstance(stored.get("tuning"), dict):
            return None
        tuning = stored["tuning"]
        chosen = tuning.get("chosen") if isinstance(tuning.get("chosen"), dict) else {}
        dataset = TrainingSet.of(tuning.get("dataset"))
        trials = []
        marked = False
        for trial in tuning.get("trials") or []:
            if not isinstance(trial, dict):
                continue
            given = trial.get("hyperparameters")
            values: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
            is_chosen = not marked and values == chosen
            marked = marked or is_chosen
            trials.append(
                TuningTrial(
                    hyperparameters=JSON(values),
                    parameters=parameter_values(values),
                    dev_accuracy=float(trial.get("dev_accuracy") or 0.0),
                    dev_items=int(trial.get("dev_n") or 0),
                    chosen=is_chosen,
                )
            )
        return cls(
            dataset=dataset,
            metric=str(tuning.get("metric") or "accuracy"),
            trials=trials,
            chosen=JSON(chosen),
            chosen_parameters=parameter_values(chosen),
        )


@strawberry.type(
    description="A model version in the task's registry: what a round targeted or a training job trained, never "
    "changed once written. The task's owners and admins see every one; others, those some round targeted."
)
class RegisteredModel(Node):
    row: strawberry.Private[RegisteredModelRow]
    name: str = strawberry.field(description="The model's name.")
    backend: str = strawberry.field(description="The inference backend that runs it.")
    weights: str | None = strawberry.field(
        description="The SHA-256 digest of its weights in the model store; null for a model without stored weights "
        "(an endpoint)."
    )
    origin: ModelOrigin = strawberry.field(description="Where it came from.")
    recipe: str | None = strawberry.field(description="The training recipe that made it (TRAINED, SHIPPED, STORE).")
    hyperparameters: JSON = strawberry.field(
        description="The recipe's hyper-parameters it was trained with.", deprecation_reason="Use parameters."
    )
    parameters: list[ParameterValue] = strawberry.field(
        description="The recipe's hyper-parameters it was trained with, typed, in the recipe's order."
    )
    seed: int | None = strawberry.field(description="The training seed.")
    training_data: TrainingData | None = strawberry.field(
        description="What it was trained on; null for a model not trained on the platform (SHIPPED, STORE...)."
    )
    metrics: list[RecipeMetric] = strawberry.field(
        description="What its recipe measured while training it (on held-out data, or on the training data when the "
        "name says so), in the recipe's order."
    )
    tuning: Tuning | None = strawberry.field(
        description="How its training job chose hyper-parameters on a development set; null when it did not tune."
    )
    created_at: datetime = strawberry.field(description="When it was registered (UTC).")

    @strawberry.field(description="The model it was trained from: the round's target when the job was asked for.")
    async def parent(self, info: Info) -> RegisteredModel | None:
        if self.row.parent_id is None:
            return None
        found = await training_service.registered_many(*info.context.caller, [self.row.parent_id])
        row = found.get(self.row.parent_id)
        return None if row is None else RegisteredModel.from_row(row)

    @strawberry.field(
        description="The model whose evaluations score it on every scoring set; null until it has one (or when you "
        "may not see it)."
    )
    async def model(self, info: Info) -> Annotated[Model, strawberry.lazy("dynaforge.api.models")] | None:  # type: ignore[name-defined]  # noqa: F821
        # api.models links to registered models: the type is named lazily, the object fetched through the registry.
        return await related(info, "Model", self.row.model_id)

    @strawberry.field(
        description="The id of the model (Model.id) whose evaluations score it on every scoring set; null until it "
        "has one.",
        deprecation_reason="Use model { id }.",
    )
    def model_id(self) -> strawberry.ID | None:
        return None if self.row.model_id is None else global_id("Model", self.row.model_id)

    @strawberry.field(description="The numbers of the rounds that targeted it.")
    async def rounds(self, info: Info) -> list[int]:
        rounds = await task_service.rounds_of(info.context.platform, self.row.task_id)
        return [r.number for r in rounds if self.row.id in (r.target_registry_ids or [])]

    @classmethod
    def from_row(cls, row: RegisteredModelRow) -> RegisteredModel:
        return cls(
            row=row,
            id=global_id("RegisteredModel", row.id),
            name=row.name,
            backend=row.backend,
            weights=row.weights,
            origin=ModelOrigin(row.origin),
            recipe=row.recipe,
            hyperparameters=JSON(dict(row.hyperparameters or {})),
            parameters=parameter_values(row.hyperparameters),
            seed=row.seed,
            training_data=TrainingData.of(row.training_data),
            metrics=RecipeMetric.listing(row.metrics),
            tuning=Tuning.of(row.metrics),
            created_at=as_utc(row.created_at),
        )
