"""The per-request context: the platform, who is asking, and one set of DataLoaders per request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

import strawberry
from strawberry.dataloader import DataLoader

from dynaforge.services import examples as example_service
from dynaforge.services import submissions as submission_service
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform


def _loaders(p: Platform) -> dict[str, DataLoader]:
    async def load_rounds(ids: list[int]) -> list[Any]:
        rows = await example_service.rounds_by_id(p, list(ids))
        return [rows.get(i) for i in ids]

    async def load_task_codes(ids: list[int]) -> list[Any]:
        rows = await example_service.task_codes_by_id(p, list(ids))
        return [rows.get(i) for i in ids]

    async def load_queue_positions(ids: list[int]) -> list[Any]:
        positions = await submission_service.queue_positions(p, list(ids))
        return [positions.get(i) for i in ids]

    # Rounds and queue positions are not cached: they move, and a websocket's context lives as long as the
    # connection.
    return {
        "round": DataLoader(load_fn=load_rounds, cache=False),
        "task_code": DataLoader(load_fn=load_task_codes),
        "queue_position": DataLoader(load_fn=load_queue_positions, cache=False),
    }


@dataclass
class RequestContext:
    platform: Platform
    actor: Actor  # anonymous when no valid token was sent (its sign_in_error says why one was refused)
    request: Any = None
    response: Any = None
    loaders: dict[str, DataLoader] = field(default_factory=dict)
    token: str | None = None  # the bearer token this context was authenticated with (websockets re-check it)
    connection_params: dict[str, Any] | None = None  # websockets: the connection_init payload
    open_subscriptions: int = 0  # websockets: the subscriptions running on this connection

    @property
    def caller(self) -> tuple[Platform, Actor]:
        """``(platform, actor)``: what every service call takes first (``p, actor = info.context.caller``)."""
        return self.platform, self.actor

    @classmethod
    def create(
        cls,
        platform: Platform,
        actor: Actor,
        request=None,
        response=None,
        token: str | None = None,
    ):
        context = cls(platform, actor, request, response, _loaders(platform), token)

        async def load_reviews(ids: list[int]) -> list[Any]:
            # The actor as it is when loading: a websocket's is set after the context is made.
            found = await example_service.reviews(platform, context.actor, list(ids))
            return [found.get(i) for i in ids]

        # Not cached: a websocket's context lives as long as the connection, and votes keep coming.
        context.loaders["review"] = DataLoader(load_fn=load_reviews, cache=False)

        async def load_voted(ids: list[int]) -> list[bool]:
            voted = await example_service.voted_on(platform, context.actor, list(ids))
            return [i in voted for i in ids]

        context.loaders["voted"] = DataLoader(load_fn=load_voted, cache=False)
        return context


#: The resolvers' ``info`` argument: the request's context is a :class:`RequestContext`.
Info = strawberry.Info[RequestContext]
#: A task-code argument, described once for the whole schema.
TaskCode = Annotated[str, strawberry.argument(description="The task's code (Task.code).")]
