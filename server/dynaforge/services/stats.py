"""Statistics: the counters of a round, of each user in a round, and of a task (the sum of its rounds).

The counters are kept by the write path (``dynaforge.services.counters``); these functions only read them.
vMER, the verified model error rate, is ``verified_fooled / collected``: the share of examples with a model
prediction that fooled the model and were then accepted by validators.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields

from sqlalchemy import func, select
from sqlmodel import col

from dynaforge.db.models import Round, RoundUserStats, User
from dynaforge.errors import FieldError, InvalidInput, NotFound
from dynaforge.services import counters, cursors
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human
from dynaforge.services.counters import COUNTERS
from dynaforge.services.platform import Platform

MAX_LEADERBOARD = 100


@dataclass(frozen=True)
class Stats:
    collected: int = 0
    fooled: int = 0
    verified_fooled: int = 0
    accepted: int = 0
    rejected: int = 0
    flagged: int = 0
    retracted: int = 0
    pending: int = 0

    @property
    def vmer(self) -> float | None:
        """Verified model error rate; None before anything was collected."""
        return self.verified_fooled / self.collected if self.collected else None

    @property
    def fooling_rate(self) -> float | None:
        return self.fooled / self.collected if self.collected else None

    @classmethod
    def of(cls, row) -> Stats:
        return cls(**{name: int(getattr(row, name) or 0) for name in COUNTERS})


assert {f.name for f in fields(Stats)} == set(COUNTERS), "Stats must mirror the stored counters"


@dataclass(frozen=True)
class UserStats:
    user_id: int
    username: str
    rank: int
    stats: Stats


async def task_stats(p: Platform, task_id: int) -> Stats:
    """The sum of the counters of every round of the task."""
    async with p.db.session() as s:
        row = (
            await s.execute(
                select(*(func.coalesce(func.sum(getattr(Round, c)), 0).label(c) for c in COUNTERS)).where(
                    col(Round.task_id) == task_id
                )
            )
        ).one()
    return Stats.of(row)


async def leaderboard(p: Platform, round_id: int, *, first: int = 20, offset: int = 0) -> list[UserStats]:
    """A round's annotators by verified fooling examples, then fooling examples, then examples collected. People
    only: machine adversaries' accounts are counted in the round's split by source, not ranked against people."""
    if not 1 <= first <= MAX_LEADERBOARD or offset < 0:
        raise InvalidInput.from_errors(
            [FieldError("first", "range", f"must be between 1 and {MAX_LEADERBOARD} (and offset at least 0)")]
        )
    return await _ranked(p, round_id, offset=offset, limit=first)


async def _ranked(p: Platform, round_id: int, *, offset: int, limit: int) -> list[UserStats]:
    order = (
        col(RoundUserStats.verified_fooled).desc(),
        col(RoundUserStats.fooled).desc(),
        col(RoundUserStats.collected).desc(),
        col(RoundUserStats.user_id),
    )
    async with p.db.session() as s:
        rows = (
            await s.execute(
                select(RoundUserStats, col(User.username))
                .join(User, col(User.id) == col(RoundUserStats.user_id))
                .where(col(RoundUserStats.round_id) == round_id, col(User.is_machine).is_(False))
                .order_by(*order)
                .offset(offset)
                .limit(limit)
            )
        ).all()
    return [UserStats(r.user_id, name, offset + i + 1, Stats.of(r)) for i, (r, name) in enumerate(rows)]


async def my_stats(p: Platform, actor: Actor, task_code: str) -> list[tuple[int, Stats]]:
    """The signed-in user's counters in each round of a task where they wrote something, by round number."""
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        rows = (
            await s.execute(
                select(col(Round.number), RoundUserStats)
                .join(RoundUserStats, col(RoundUserStats.round_id) == col(Round.id))
                .where(col(Round.task_id) == view.row.id, col(RoundUserStats.user_id) == actor.user_id)
                .order_by(col(Round.number))
            )
        ).all()
    return [(number, Stats.of(row)) for number, row in rows]


async def by_source(p: Platform, round_ids: list[int]) -> dict[str, Stats]:
    """The counters of these rounds together, per source (``HUMAN``, ``ASSISTED``, ``MACHINE``), each with its vMER;
    they add up to the rounds' own counters."""
    async with p.db.session() as s:
        counts = await counters.by_source(s, round_ids)
    return {source: Stats(**values) for source, values in counts.items()}


async def task_round_ids(p: Platform, task_id: int) -> list[int]:
    async with p.db.session() as s:
        return list(await s.scalars(select(col(Round.id)).where(col(Round.task_id) == task_id)))


def total(stats: list[Stats]) -> Stats:
    return Stats(**{c: sum(getattr(x, c) for x in stats) for c in COUNTERS})


async def round_id(p: Platform, task_id: int, number: int) -> int:
    async with p.db.session() as s:
        found = await s.scalar(select(col(Round.id)).where(col(Round.task_id) == task_id, col(Round.number) == number))
    if found is None:
        raise NotFound(f"No round {number}")
    return found


async def leaderboard_page(
    p: Platform,
    round_id: int,
    *,
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
) -> tuple[list[UserStats], bool, bool, Callable[[], Awaitable[int]]]:
    """A page of a round's leaderboard as a connection: ``(entries, has_next, has_previous, total)``. A cursor is a
    rank (``rank:N``); ranks move as people write, so a page is the ranks after (or before) the cursor's rank at the
    time of asking."""
    request = cursors.PageRequest.of(
        "rank", first=first, after=after, last=last, before=before, max_size=MAX_LEADERBOARD
    )
    total = cursors.counter(
        p,
        select(col(RoundUserStats.user_id))
        .join(User, col(User.id) == col(RoundUserStats.user_id))
        .where(col(RoundUserStats.round_id) == round_id, col(User.is_machine).is_(False)),
    )
    low = request.after_id or 0  # ranks after this one
    high = request.before_id  # ranks before this one (None: to the end)
    if request.forward:
        limit = request.size + 1 if high is None else max(min(request.size + 1, high - 1 - low), 0)
        entries = await _ranked(p, round_id, offset=low, limit=limit) if limit else []
        more = len(entries) > request.size or (high is not None and low + len(entries) < high - 1)
        return entries[: request.size], more, low > 0, total
    end = (await total()) + 1 if high is None else high  # the rank just past the page
    start = max(low, end - 1 - request.size)
    entries = await _ranked(p, round_id, offset=start, limit=end - 1 - start) if end - 1 > start else []
    return entries, high is not None, start > low, total
