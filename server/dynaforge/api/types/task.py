"""Task type: a registered task as a frontend needs it to render its form."""

from __future__ import annotations

from enum import Enum

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import RequestContext
from dynaforge.api.types.round import Round
from dynaforge.api.types.stats import Stats, TaskSettings
from dynaforge.api.types.user import User
from dynaforge.services import stats as stats_service
from dynaforge.services import tasks as task_service
from dynaforge.tasks.fields import ChoiceField, Role


@strawberry.enum(description="What a field is for.")
class FieldRole(Enum):
    CONTEXT = "context"
    INPUT = "input"
    TARGET = "target"
    METADATA = "metadata"


@strawberry.type(description="One field of a task.")
class TaskField:
    name: str
    role: FieldRole
    type: str = strawberry.field(description="The field type: text, choice, span, number or boolean.")
    description: str
    required: bool
    choices: list[str] | None


_TYPE_NAMES = {
    "TextField": "text",
    "ChoiceField": "choice",
    "SpanField": "span",
    "NumberField": "number",
    "BooleanField": "boolean",
}


@strawberry.type(description="A task: its fields, labels and current round. Its behaviour comes from a plugin.")
class Task:
    view: strawberry.Private[task_service.TaskView]
    code: str
    name: str
    description: str
    instructions: str
    labels: list[str]
    principal_metric: str
    metrics: list[str]
    perturbations: list[str]
    fairness_slices: list[str]
    hidden: bool
    active: bool

    @strawberry.field
    def fields(self) -> list[TaskField]:
        task = self.view.task
        return [
            TaskField(
                name=f.name,
                role=FieldRole(f.role.value),
                type=_TYPE_NAMES.get(type(f).__name__, type(f).__name__),
                description=f.description,
                required=f.required,
                choices=list(f.options(task)) if isinstance(f, ChoiceField) else None,
            )
            for f in task.fields
        ]

    @strawberry.field(description="JSON Schema (draft 2020-12) of the fields with the given roles (default: all).")
    def fields_json_schema(self, roles: list[FieldRole] | None = None) -> JSON:
        return JSON(self.view.task.json_schema(*(Role(r.value) for r in roles or [])))

    @strawberry.field
    async def current_round(self, info: strawberry.Info[RequestContext]) -> Round | None:
        row = await task_service.get_round(info.context.platform, self.view.row.id)
        return None if row is None else Round.from_row(row)

    @strawberry.field
    async def round(self, info: strawberry.Info[RequestContext], number: int) -> Round | None:
        row = await task_service.get_round(info.context.platform, self.view.row.id, number)
        return None if row is None else Round.from_row(row)

    @strawberry.field(description="Every round, oldest first.")
    async def rounds(self, info: strawberry.Info[RequestContext]) -> list[Round]:
        rows = await task_service.list_rounds(info.context.platform, self.view.row.id)
        return [Round.from_row(r) for r in rows]

    @strawberry.field(description="The counters of every round added up.")
    async def stats(self, info: strawberry.Info[RequestContext]) -> Stats:
        return Stats.of(await stats_service.task_stats(info.context.platform, self.view.row.id))

    @strawberry.field
    def settings(self) -> TaskSettings:
        return TaskSettings.of(self.view.settings)

    @strawberry.field(description="Whether the signed-in user owns this task (or is an admin).")
    async def viewer_is_owner(self, info: strawberry.Info[RequestContext]) -> bool:
        return await task_service.owns_task(*info.context.caller, self.view.row.id)

    @strawberry.field(description="The task's owners.")
    async def owners(self, info: strawberry.Info[RequestContext]) -> list[User]:
        return [User.from_row(u) for u in await task_service.owners(info.context.platform, self.view.row.id)]

    @classmethod
    def from_view(cls, view: task_service.TaskView) -> Task:
        t = view.task
        return cls(
            view=view,
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
