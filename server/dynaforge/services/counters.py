"""Round and per-user counters, changed in the same transaction as the examples they count.

Every counter is a count of examples in some state, so each example *contributes* to the counters as a pure function
of its status and ``fooled`` (``contribution``). A change of state bumps the counters by the difference of the two
contributions (``delta``), and a recount from the examples table (``recount``) must equal the stored counters.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, Executable, bindparam, case, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from dynaforge.adversaries.base import SOURCES
from dynaforge.db.models import Counters, Example, Round, RoundUserStats
from dynaforge.db.models import ExampleStatus as S
from dynaforge.db.models import table as table_of

COUNTERS = tuple(Counters.model_fields)


def contribution(status: str, fooled: bool | None) -> dict[str, int]:
    """What one example in ``status`` adds to each counter.

    collected: the model answered (``fooled`` is known), whatever happened next; fooled: it fooled the model;
    verified_fooled: accepted by validators and fooled the model (vMER = verified_fooled / collected); accepted,
    rejected, flagged, retracted, pending: examples in that status now.
    """
    return {
        "collected": int(fooled is not None),
        "fooled": int(bool(fooled)),
        "verified_fooled": int(status == S.ACCEPTED and bool(fooled)),
        "accepted": int(status == S.ACCEPTED),
        "rejected": int(status == S.REJECTED),
        "flagged": int(status == S.FLAGGED),
        "retracted": int(status == S.RETRACTED),
        "pending": int(status == S.PENDING_PREDICTION),
    }


def delta(before: tuple[str, bool | None] | None, after: tuple[str, bool | None]) -> dict[str, int]:
    """The counter changes when an example goes from ``before`` (status, fooled) to ``after`` (None: new)."""
    old = contribution(*before) if before is not None else dict.fromkeys(COUNTERS, 0)
    new = contribution(*after)
    return {k: new[k] - old[k] for k in COUNTERS if new[k] != old[k]}


async def move(s: AsyncSession, *, round_id: int, user_id: int, before, after) -> None:
    """Bump the counters for one example's change of state (see ``delta``)."""
    await bump(s, round_id=round_id, user_id=user_id, **delta(before, after))


def move_sync(s: Connection, *, round_id: int, user_id: int, before, after) -> None:
    """``move`` on a synchronous connection (a unit run by ``Database.run_write``)."""
    deltas = _checked(delta(before, after))
    if deltas:
        for statement in _statements(_dialect(s), tuple(sorted(deltas.items()))):
            s.execute(statement, {"round_id": round_id, "user_id": user_id})


def _count_columns() -> dict[str, Any]:
    """The counters as SQL aggregates over examples (the contribution of each, summed)."""
    status, fooled = col(Example.status), col(Example.fooled)
    return {
        "collected": func.count(fooled),
        "fooled": func.sum(case((fooled.is_(True), 1), else_=0)),
        "verified_fooled": func.sum(case(((status == S.ACCEPTED) & fooled.is_(True), 1), else_=0)),
        **{
            name: func.sum(case((status == value, 1), else_=0))
            for name, value in (
                ("accepted", S.ACCEPTED),
                ("rejected", S.REJECTED),
                ("flagged", S.FLAGGED),
                ("retracted", S.RETRACTED),
                ("pending", S.PENDING_PREDICTION),
            )
        },
    }


async def recount(
    s: AsyncSession, round_ids: list[int]
) -> tuple[dict[int, dict[str, int]], dict[tuple[int, int], dict[str, int]]]:
    """The counters recomputed from the examples table: per round, and per (round, user)."""
    columns = _count_columns()
    rows = await s.execute(
        select(col(Example.round_id), col(Example.user_id), *(c.label(n) for n, c in columns.items()))
        .where(col(Example.round_id).in_(round_ids))
        .group_by(col(Example.round_id), col(Example.user_id))
    )
    per_round: dict[int, dict[str, int]] = {r: dict.fromkeys(COUNTERS, 0) for r in round_ids}
    per_user: dict[tuple[int, int], dict[str, int]] = defaultdict(lambda: dict.fromkeys(COUNTERS, 0))
    for row in rows.mappings():
        for name in COUNTERS:
            value = int(row[name] or 0)
            per_round[row["round_id"]][name] += value
            per_user[(row["round_id"], row["user_id"])][name] = value
    return per_round, dict(per_user)


async def by_source(s: AsyncSession, round_ids: list[int]) -> dict[str, dict[str, int]]:
    """The counters of ``round_ids`` together, split by where the examples came from (every source in
    ``SOURCES``, zeros included). Counted from the examples table in one grouped query (an index on round and
    source serves it), so the split adds up to the stored counters exactly (``recount``'s invariant)."""
    columns = _count_columns()
    totals = {source: dict.fromkeys(COUNTERS, 0) for source in SOURCES}
    if not round_ids:
        return totals
    rows = await s.execute(
        select(col(Example.source), *(c.label(n) for n, c in columns.items()))
        .where(col(Example.round_id).in_(round_ids))
        .group_by(col(Example.source))
    )
    for row in rows.mappings():
        counts = totals.setdefault(row["source"], dict.fromkeys(COUNTERS, 0))
        for name in COUNTERS:
            counts[name] += int(row[name] or 0)
    return totals


async def bump(s: AsyncSession, *, round_id: int, user_id: int, **deltas: int) -> None:
    """Add ``deltas`` (counter name -> change) to the round's and the user's counters, atomically in SQL."""
    deltas = _checked(deltas)
    if deltas:
        for statement in _statements(_dialect(s), tuple(sorted(deltas.items()))):
            await s.execute(statement, {"round_id": round_id, "user_id": user_id})


def _checked(deltas: dict[str, int]) -> dict[str, int]:
    deltas = {k: v for k, v in deltas.items() if v}
    unknown = set(deltas) - set(COUNTERS)
    if unknown:
        raise ValueError(f"unknown counters {sorted(unknown)}")
    return deltas


def _dialect(s: AsyncSession | Connection) -> str:
    if isinstance(s, Connection):
        return s.dialect.name
    return s.bind.dialect.name if s.bind is not None else "sqlite"


@lru_cache(maxsize=256)
def _statements(dialect: str, deltas: tuple[tuple[str, int], ...]) -> tuple[Executable, Executable]:
    """The UPDATE of the round's counters and the upsert of the user's, for one set of changes, with the round and
    user as parameters. Built once per (dialect, changes): the few shapes an example's change of state can have
    recur on every write, and building SQL expressions costs more than executing them."""
    # Core tables, not the ORM entities: an ORM-enabled UPDATE would also evaluate its SET clause against every
    # matching object in the session (synchronize_session), work nobody here needs.
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    rounds, table = table_of(Round), table_of(RoundUserStats)
    round_update = (
        update(rounds).where(rounds.c.id == bindparam("round_id")).values({k: rounds.c[k] + v for k, v in deltas})
    )
    user_upsert = insert(table).values(
        round_id=bindparam("round_id"), user_id=bindparam("user_id"), **{k: max(v, 0) for k, v in deltas}
    )
    user_upsert = user_upsert.on_conflict_do_update(
        index_elements=[table.c.round_id, table.c.user_id],
        set_={k: table.c[k] + v for k, v in deltas},
    )
    return round_update, user_upsert
