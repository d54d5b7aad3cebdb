"""Relay cursor connections: one generic shape for every list that grows.

``Connection[Example]`` is the GraphQL type ``ExampleConnection`` (``edges { cursor node }``, ``nodes``, ``pageInfo``,
``totalCount``); the services page it on a keyset (:mod:`dynaforge.services.cursors`) and count it only when a client
asks for ``totalCount``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Annotated, Any, Generic, Self, TypeVar

import strawberry

from dynaforge.services import cursors

T = TypeVar("T")


@strawberry.type(description="Where a page sits in its list (the Relay cursor connection specification).")
class PageInfo:
    has_next_page: bool = strawberry.field(
        description="Whether rows follow the last one of this page: ask with `first` and `after: endCursor`."
    )
    has_previous_page: bool = strawberry.field(
        description="Whether rows precede the first one of this page: ask with `last` and `before: startCursor`."
    )
    start_cursor: str | None = strawberry.field(description="The first row's cursor; null for an empty page.")
    end_cursor: str | None = strawberry.field(description="The last row's cursor; null for an empty page.")


@strawberry.type(description="One row of a page and its cursor.")
class Edge(Generic[T]):
    node: T = strawberry.field(description="The row.")
    cursor: str = strawberry.field(description="Opaque: pass it as `after` or `before` to page from this row.")


@strawberry.type(
    description="A page of a list. Page forward with `first` and `after` (the previous page's `pageInfo.endCursor`), "
    "back with `last` and `before` (its `startCursor`); `first` and `last` are exclusive."
)
class Connection(Generic[T]):
    edges: list[Edge[T]] = strawberry.field(description="The page's rows with their cursors, in the list's order.")
    page_info: PageInfo = strawberry.field(description="Where the page sits in the list.")
    total: strawberry.Private[Callable[[], Awaitable[int]] | None] = None

    @strawberry.field(description="The page's rows without their cursors, in the list's order.")
    def nodes(self) -> list[T]:
        return [edge.node for edge in self.edges]

    @strawberry.field(
        description="How many rows the whole list has with the filters given (one count, made only when asked)."
    )
    async def total_count(self) -> int:
        return 0 if self.total is None else await self.total()

    @classmethod
    def of(
        cls,
        pairs: Iterable[tuple[Any, str]],
        *,
        has_next: bool,
        has_previous: bool,
        total: Callable[[], Awaitable[int]] | None,
    ) -> Self:
        """A connection of ``(node, cursor)`` pairs."""
        edges: list[Edge[Any]] = [Edge(node=node, cursor=cursor) for node, cursor in pairs]
        return cls(
            edges=edges,
            page_info=PageInfo(
                has_next_page=has_next,
                has_previous_page=has_previous,
                start_cursor=edges[0].cursor if edges else None,
                end_cursor=edges[-1].cursor if edges else None,
            ),
            total=total,
        )

    @classmethod
    def from_listing(cls, listing: cursors.Listing, node: Callable[[Any], Any]) -> Self:
        """A connection of a service's listing, each row made into its GraphQL object by ``node``."""
        page = listing.window
        return cls.of(
            ((node(row), page.cursor(row)) for row in page.rows),
            has_next=page.has_next,
            has_previous=page.has_previous,
            total=listing.total,
        )


#: The page arguments every connection takes (descriptions shared).
First = Annotated[
    int | None,
    strawberry.argument(description="Page forward: this many rows (1 to the list's page limit) after `after`."),
]
After = Annotated[
    str | None,
    strawberry.argument(description="A cursor of this list (pageInfo.endCursor): the page starts after its row."),
]
Last = Annotated[
    int | None,
    strawberry.argument(description="Page back: this many rows before `before` (or the list's end); not with first."),
]
Before = Annotated[
    str | None,
    strawberry.argument(description="A cursor of this list (pageInfo.startCursor): the page ends before its row."),
]
