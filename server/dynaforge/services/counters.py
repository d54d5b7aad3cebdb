"""Round and per-user counters, changed in the same transaction as the examples they count."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from dynaforge.db.models import Counters, Round, RoundUserStats

COUNTERS = tuple(Counters.model_fields)


async def bump(s: AsyncSession, *, round_id: int, user_id: int, **deltas: int) -> None:
    """Add ``deltas`` (counter name -> change) to the round's and the user's counters, atomically in SQL."""
    deltas = {k: v for k, v in deltas.items() if v}
    unknown = set(deltas) - set(COUNTERS)
    if unknown:
        raise ValueError(f"unknown counters {sorted(unknown)}")
    if not deltas:
        return
    await s.execute(
        update(Round).where(Round.id == round_id).values({k: getattr(Round, k) + v for k, v in deltas.items()})
    )
    dialect = s.bind.dialect.name if s.bind is not None else "sqlite"
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    table = RoundUserStats.__table__
    statement = insert(table).values(round_id=round_id, user_id=user_id, **{k: max(v, 0) for k, v in deltas.items()})
    statement = statement.on_conflict_do_update(
        index_elements=[table.c.round_id, table.c.user_id],
        set_={k: table.c[k] + v for k, v in deltas.items()},
    )
    await s.execute(statement)
