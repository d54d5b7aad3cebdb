"""The model registry's entries in GraphQL (a module of its own: rounds name them, and it imports no round)."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Annotated

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import Info
from dynaforge.api.node import Node, global_id, related
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
    hyperparameters: JSON = strawberry.field(description="The recipe's hyper-parameters it was trained with.")
    seed: int | None = strawberry.field(description="The training seed.")
    training_data: JSON = strawberry.field(
        description="What it was trained on: `datasets` (`id`: the Dataset's global id, `name`, `size` and the "
        "`sha256` of its examples when they were read), `examples` (how many), `examples_sha256`, `base_data` "
        "(whether the task's base data was included)."
    )
    metrics: JSON = strawberry.field(description="What its recipe measured on held-out data while training it.")
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
            seed=row.seed,
            training_data=JSON(_training_data(row.training_data or {})),
            metrics=JSON(dict(row.metrics or {})),
            created_at=as_utc(row.created_at),
        )


def _training_data(stored: dict) -> dict:
    """The stored record with each data set's row id as the global id the rest of the API uses."""
    out = dict(stored)
    if isinstance(out.get("datasets"), list):
        out["datasets"] = [
            {**d, "id": global_id("Dataset", d["id"])} if isinstance(d, dict) and isinstance(d.get("id"), int) else d
            for d in out["datasets"]
        ]
    return out
