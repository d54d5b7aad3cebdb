"""Query root."""

from __future__ import annotations

import strawberry

from dynaforge.api.context import RequestContext
from dynaforge.api.contexts import ContextStrategy
from dynaforge.api.errors import errors_as_graphql, errors_as_null
from dynaforge.api.node import parse_id
from dynaforge.api.types.context_type import ContextType
from dynaforge.api.types.example import Example, ExampleConnection, ExampleStatus
from dynaforge.api.types.plugin import Plugin
from dynaforge.api.types.round import Round
from dynaforge.api.types.task import Task
from dynaforge.api.types.user import User
from dynaforge.services import auth as auth_service
from dynaforge.services import contexts as context_service
from dynaforge.services import examples as example_service
from dynaforge.services import tasks as task_service

Info = strawberry.Info[RequestContext]


@strawberry.type
class Query:
    @strawberry.field(description="Every task you can see.")
    async def tasks(self, info: Info) -> list[Task]:
        return [Task.from_view(v) for v in await task_service.list_tasks(*info.context.caller)]

    @strawberry.field(description="One task by code; null when there is none you can see.")
    @errors_as_null
    async def task(self, info: Info, code: str) -> Task | None:
        return Task.from_view(await task_service.get_task(*info.context.caller, code))

    @strawberry.field(description="A round of a task (default: the current one); null when there is none.")
    @errors_as_null
    async def round(self, info: Info, task_code: str, number: int | None = None) -> Round | None:
        view = await task_service.get_task(*info.context.caller, task_code)
        row = await task_service.get_round(info.context.platform, view.row.id, number)
        return None if row is None else Round.from_row(row)

    @strawberry.field(
        description="A context of the task's current round to write against, chosen by `strategy` (default: the "
        "task's context_strategy setting, else LEAST_USED); `tag` narrows to contexts with that tag."
    )
    @errors_as_graphql
    async def next_context(
        self, info: Info, task_code: str, tag: str | None = None, strategy: ContextStrategy | None = None
    ) -> ContextType:
        row = await context_service.next_context(
            *info.context.caller,
            task_code,
            tag=tag,
            strategy=None if strategy is None else context_service.ContextStrategy[strategy.name],
        )
        return ContextType.from_row(row)

    @strawberry.field(description="One example: authors see their own, owners and admins every example of a task.")
    @errors_as_null
    async def example(self, info: Info, id: strawberry.ID) -> Example | None:
        return Example.from_row(await example_service.get_example(*info.context.caller, parse_id(id, "id", "Example")))

    @strawberry.field(
        description="A task's examples, newest first. Users see their own; owners and admins see all "
        "(`mine: true` narrows to their own)."
    )
    @errors_as_graphql
    async def examples(
        self,
        info: Info,
        task_code: str,
        first: int | None = 20,
        after: str | None = None,
        status: ExampleStatus | None = None,
        mine: bool = False,
    ) -> ExampleConnection:
        page = await example_service.list_examples(
            *info.context.caller,
            task_code=task_code,
            first=first,
            after=after,
            status=status.value if status else None,
            mine=mine,
        )
        return ExampleConnection.from_page(page)

    @strawberry.field(description="The signed-in user; null when anonymous.")
    async def me(self, info: Info) -> User | None:
        row = await auth_service.current_user(*info.context.caller)
        return None if row is None else User.from_row(row)

    @strawberry.field(description="Loaded plugins, and those that failed to load with the reason.")
    def plugins(self, info: Info) -> list[Plugin]:
        return [
            Plugin(name=p.name, version=p.version, hooks=list(p.hooks), is_default=p.is_default, error=p.error)
            for p in info.context.platform.plugins.info()
        ]
