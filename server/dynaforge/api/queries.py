"""Query root."""

from __future__ import annotations

from typing import Annotated

import strawberry

from dynaforge.api.arguments import (
    AdversaryFilter,
    AuthorFilter,
    ContextRound,
    ContextTag,
    ExampleRound,
    ExampleStatusFilter,
    ExampleTag,
    FooledFilter,
    MineOnly,
    SourceFilter,
)
from dynaforge.api.context import Info, TaskCode
from dynaforge.api.enums import ContextStrategy, ExampleSource, ExampleStatus, raw
from dynaforge.api.errors import errors_as_graphql, errors_as_null
from dynaforge.api.node import parse_id
from dynaforge.api.task_lists import task_list
from dynaforge.api.types.connection import After, Before, Connection, First, Last
from dynaforge.api.types.context_type import ContextType
from dynaforge.api.types.example import Example
from dynaforge.api.types.plugin import Plugin
from dynaforge.api.types.round import Round
from dynaforge.api.types.task import Task
from dynaforge.api.types.user import User
from dynaforge.services import auth as auth_service
from dynaforge.services import contexts as context_service
from dynaforge.services import examples as example_service
from dynaforge.services import tasks as task_service


@task_list("contexts")
async def contexts_connection(
    info: Info,
    task_code: str,
    round: int | None,
    tag: str | None,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
) -> Connection[ContextType]:
    """Task.contexts (and the deprecated root field)."""
    listing = await context_service.list_contexts(
        *info.context.caller,
        task_code,
        round_number=round,
        tag=tag,
        first=first,
        after=after,
        last=last,
        before=before,
    )
    return Connection.from_listing(listing, ContextType.from_row)


@task_list("examples")
async def examples_connection(
    info: Info,
    task_code: str,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
    status: ExampleStatus | None,
    mine: bool,
    round: int | None,
    fooled: bool | None,
    tag: str | None,
    source: ExampleSource | None,
    adversary: str | None,
    author: strawberry.ID | None,
) -> Connection[Example]:
    """Task.examples (and the deprecated root field)."""
    page = await example_service.list_examples(
        *info.context.caller,
        task_code=task_code,
        first=first if first is not None or last is not None else 20,
        after=after,
        last=last,
        before=before,
        status=raw(status) if status else None,
        mine=mine,
        round_number=round,
        fooled=fooled,
        tag=tag,
        source=raw(source) if source else None,
        adversary=adversary,
        author_id=parse_id(author, "author", "User") if author is not None else None,
    )
    rounds = {round_id: Round.from_row(row) for round_id, row in page.rounds.items()}
    return Connection.of(
        (
            (
                Example.from_row(r, task_code=page.task_code, round_=rounds.get(r.round_id)),
                example_service.encode_cursor(r.id),
            )
            for r in page.items
        ),
        has_next=page.has_next,
        has_previous=page.has_previous,
        total=page.total,
    )


@strawberry.type
class Query:
    @strawberry.field(
        description="Every task whose plugin is installed, by code; hidden ones only for their owners and admins. "
        "Anyone may ask, anonymous callers included."
    )
    async def tasks(self, info: Info) -> list[Task]:
        return [Task.from_view(v) for v in await task_service.list_tasks(*info.context.caller)]

    @strawberry.field(
        description="One task by code; null when there is none you can see (no such task, its plugin is not "
        "installed, or it is hidden and you do not own it)."
    )
    @errors_as_null
    async def task(
        self, info: Info, code: Annotated[str, strawberry.argument(description="The task's code (Task.code).")]
    ) -> Task | None:
        return Task.from_view(await task_service.get_task(*info.context.caller, code))

    @strawberry.field(
        description="A round of a task (default: the current one, open or closed); null when there is no such "
        "round or task you can see. Anyone who can see the task."
    )
    @errors_as_null
    async def round(
        self,
        info: Info,
        task_code: TaskCode,
        number: Annotated[
            int | None, strawberry.argument(description="The round's number, from 1; null: the current round.")
        ] = None,
    ) -> Round | None:
        view = await task_service.get_task(*info.context.caller, task_code)
        row = await task_service.get_round(info.context.platform, view.row.id, number)
        return None if row is None else Round.from_row(row)

    @strawberry.field(
        description="A context of the task's current round to write against, chosen by `strategy` (default: the "
        "task's context_strategy setting, else LEAST_USED); `tag` narrows to contexts with that tag. Anyone who "
        "can see the task; a NOT_FOUND error when the round has no such context."
    )
    @errors_as_graphql
    async def next_context(
        self,
        info: Info,
        task_code: TaskCode,
        tag: Annotated[
            str | None,
            strawberry.argument(description="Only contexts with exactly this tag; null: any context of the round."),
        ] = None,
        strategy: Annotated[
            ContextStrategy | None,
            strawberry.argument(description="How to choose; null: the task's contextStrategy setting."),
        ] = None,
    ) -> ContextType | None:
        row = await context_service.next_context(
            *info.context.caller,
            task_code,
            tag=tag,
            strategy=None if strategy is None else context_service.ContextStrategy[strategy.name],
        )
        return ContextType.from_row(row)

    @strawberry.field(
        description="A task's contexts, newest first, for its owners and admins (a FORBIDDEN error for anyone "
        "else): those of one round, or with one tag, when asked.",
        deprecation_reason="Use Task.contexts (task(code:) { ... }).",
    )
    @errors_as_graphql
    async def contexts(
        self,
        info: Info,
        task_code: TaskCode,
        round: ContextRound = None,
        tag: ContextTag = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[ContextType] | None:
        return await contexts_connection(info, task_code, round, tag, first, after, last, before)

    @strawberry.field(
        description="One example: authors read their own, owners and admins every example of their tasks. Errors "
        "tell the cases apart (the field is then null): NOT_FOUND (no such example, or its task is hidden from "
        "you), NOT_AUTHENTICATED (sign in), FORBIDDEN (someone else's example)."
    )
    @errors_as_graphql
    async def example(
        self, info: Info, id: Annotated[strawberry.ID, strawberry.argument(description="The example's id.")]
    ) -> Example | None:
        return Example.from_row(await example_service.get_example(*info.context.caller, parse_id(id, "id", "Example")))

    @strawberry.field(
        description="A task's examples, newest first. Signed-in users see their own; owners and admins see all "
        "(`mine: true` narrows to their own). Anonymous callers get a NOT_AUTHENTICATED error.",
        deprecation_reason="Use Task.examples (task(code:) { ... }).",
    )
    @errors_as_graphql
    async def examples(
        self,
        info: Info,
        task_code: TaskCode,
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
    ) -> Connection[Example] | None:
        return await examples_connection(
            info, task_code, first, after, last, before, status, mine, round, fooled, tag, source, adversary, author
        )

    @strawberry.field(description="The signed-in user; null when anonymous.")
    async def me(self, info: Info) -> User | None:
        row = await auth_service.current_user(*info.context.caller)
        return None if row is None else User.from_row(row)

    @strawberry.field(
        description="Loaded plugins, and those that failed to load; why one failed (its error) is for admins only."
    )
    def plugins(self, info: Info) -> list[Plugin]:
        admin = info.context.actor.is_admin
        return [
            Plugin(
                name=p.name,
                version=p.version,
                hooks=list(p.hooks),
                is_default=p.is_default,
                error=p.error if admin or p.error is None else "failed to load (admins see why)",
            )
            for p in info.context.platform.plugins.info()
        ]
