"""Opaque keyset cursors for the API's pages: a kind and a row id, base64-encoded.

A cursor names a row of a page: ``after`` the page's end cursor is the next page, ``before`` its start cursor the
previous one (Relay's cursor connections). The kind (``example``, ``model``, ...) keeps a
cursor of one list from being replayed on another, and a malformed or foreign one is an ``InvalidInput`` on the
``after`` argument that says to pass ``pageInfo.endCursor`` back unchanged.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from dynaforge.errors import MAX_ID, FieldError, InvalidInput


def encode(kind: str, row_id: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{row_id}".encode()).decode()


def decode(kind: str, cursor: str, field: str = "after", minimum: int = 1) -> int:
    """The row id (or position, from ``minimum``) in a cursor of ``kind``; InvalidInput (on ``field``) for anything
    else."""
    prefix = f"{kind}:"
    try:
        raw = base64.urlsafe_b64decode(cursor.encode()).decode()
        if not raw.startswith(prefix):
            raise ValueError
        number = int(raw[len(prefix) :])
        if not minimum <= number <= MAX_ID + 1:
            raise ValueError
        return number
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput.from_errors(
            [FieldError(field, "cursor", "is not a cursor from this list; pass a cursor of its pageInfo unchanged")]
        ) from exc


@dataclass(frozen=True)
class Window:
    """One page of a newest-first list and where it sits in the whole (Relay's PageInfo, from the server's side)."""

    rows: list[Any]
    has_next: bool  # rows exist after the last one (older ones)
    has_previous: bool  # rows exist before the first one (newer ones)
    kind: str
    key: Callable[[Any], int]

    @property
    def start_cursor(self) -> str | None:
        return encode(self.kind, self.key(self.rows[0])) if self.rows else None

    @property
    def end_cursor(self) -> str | None:
        return encode(self.kind, self.key(self.rows[-1])) if self.rows else None

    def cursor(self, row: Any) -> str:
        return encode(self.kind, self.key(row))


@dataclass(frozen=True)
class PageRequest:
    """``first``/``after`` (forward) or ``last``/``before`` (backward), checked: sizes in range, cursors of this
    list."""

    size: int
    forward: bool
    after_id: int | None
    before_id: int | None

    @classmethod
    def of(
        cls,
        kind: str,
        *,
        first: int | None = None,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
        max_size: int,
        default: int = 20,
        minimum: int = 1,
    ) -> PageRequest:
        problems = []
        if first is not None and last is not None:
            problems.append(FieldError("last", "exclusive", "pass first (with after) or last (with before), not both"))
        for name, value in (("first", first), ("last", last)):
            if value is not None and not 1 <= value <= max_size:
                problems.append(FieldError(name, "range", f"must be between 1 and {max_size}"))
        if problems:
            raise InvalidInput.from_errors(problems)
        after_id = None if after is None else decode(kind, after, minimum=minimum)
        before_id = None if before is None else decode(kind, before, field="before", minimum=minimum)
        forward = last is None
        return cls(first or default if forward else last or default, forward, after_id, before_id)


async def window(
    session: Any,
    statement: Any,
    key_column: Any,
    kind: str,
    request: PageRequest,
    *,
    key: Callable[[Any], int] = lambda row: int(row.id),
    scalars: bool = True,
    descending: bool = True,
) -> Window:
    """The page of ``statement`` (a SELECT with its filters, ordered by the unique ``key_column``: newest first by
    default) that ``request`` asks for: keyset on the key, one query for the page (one row more, to know whether the
    list goes on) and, where the request starts at a cursor, one EXISTS for whether rows lie on its other side."""

    # "later" in the list's order: smaller keys for a newest-first list, larger ones for an ascending one.
    def later(bound: int) -> Any:
        return key_column < bound if descending else key_column > bound

    def earlier(bound: int) -> Any:
        return key_column > bound if descending else key_column < bound

    bounded = statement
    if request.after_id is not None:
        bounded = bounded.where(later(request.after_id))
    if request.before_id is not None:
        bounded = bounded.where(earlier(request.before_id))
    in_order = key_column.desc() if descending else key_column.asc()
    reversed_order = key_column.asc() if descending else key_column.desc()
    result = await session.execute(
        bounded.order_by(in_order if request.forward else reversed_order).limit(request.size + 1)
    )
    rows = list(result.scalars() if scalars else result.all())
    more = len(rows) > request.size
    rows = rows[: request.size]
    if not request.forward:
        rows.reverse()
    # The side the request came from: rows at or beyond its cursor exist unless they were deleted meanwhile.
    beyond = None
    if request.forward and request.after_id is not None:
        beyond = ~later(request.after_id)
    elif not request.forward and request.before_id is not None:
        beyond = ~earlier(request.before_id)
    other_side = False
    if beyond is not None:
        probe = statement.with_only_columns(key_column).where(beyond).limit(1)
        other_side = (await session.execute(probe)).first() is not None
    if request.forward:
        return Window(rows, more, other_side, kind, key)
    return Window(rows, other_side, more, kind, key)


async def count(session: Any, statement: Any) -> int:
    """How many rows ``statement`` (a SELECT with its filters, no limit) yields: a connection's totalCount."""
    return int(await session.scalar(select(func.count()).select_from(statement.order_by(None).subquery())) or 0)


@dataclass(frozen=True)
class Listing:
    """A page of a list and a way to count the whole list (one query, run only when a client asks for totalCount)."""

    window: Window
    total: Callable[[], Awaitable[int]]


def counter(p: Any, statement: Any) -> Callable[[], Awaitable[int]]:
    """A ``Listing.total`` for ``statement`` (the list's SELECT with its filters), on a session of its own."""

    async def total() -> int:
        async with p.db.session() as s:
            return await count(s, statement)

    return total


@dataclass(frozen=True)
class WorkPage:
    """What a page of a task's work items (training jobs, generation runs) asks for: a state, an order, a page."""

    status: str | None = None
    oldest_first: bool = False
    first: int | None = None
    after: str | None = None
    last: int | None = None
    before: str | None = None


async def work_listing(
    p: Any, table: Any, task_id: int, kind: str, statuses: tuple[str, ...], page: WorkPage
) -> Listing:
    """A page of ``table``'s rows of the task (a keyset on their ids), newest first unless ``page.oldest_first``,
    only those of ``page.status`` (InvalidInput when it is not one of ``statuses``)."""
    request = PageRequest.of(
        kind, first=page.first, after=page.after, last=page.last, before=page.before, max_size=p.settings.page_max_size
    )
    if page.status is not None and page.status not in statuses:
        raise InvalidInput.from_errors([FieldError("status", "choice", f"must be one of {', '.join(statuses)}")])
    statement = select(table).where(table.task_id == task_id)
    if page.status is not None:
        statement = statement.where(table.status == page.status)
    return await id_listing(p, statement, table, kind, page, request)


async def id_listing(
    p: Any, statement: Any, table: Any, kind: str, page: WorkPage, request: PageRequest | None = None
) -> Listing:
    """A page of ``statement``'s rows of ``table`` (a keyset on their ids), newest first unless
    ``page.oldest_first``; ``page.status`` is the caller's to apply."""
    if request is None:
        request = PageRequest.of(
            kind,
            first=page.first,
            after=page.after,
            last=page.last,
            before=page.before,
            max_size=p.settings.page_max_size,
        )
    async with p.db.session() as s:
        found = await window(s, statement, table.id, kind, request, descending=not page.oldest_first)
    return Listing(found, counter(p, statement))
