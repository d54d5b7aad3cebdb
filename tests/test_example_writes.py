"""A new example's write on real connections (no shared test transaction), on SQLite and PostgreSQL: the example,
the round's and the user's counters and its context's use move together, under concurrent writers. On PostgreSQL a
pooled connection is pinged once before use: a connection the server dropped is replaced before a request meets
it."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import select, text
from support import make_user

from dynaforge.db.models import Context, Example, Round, RoundUserStats
from dynaforge.services import contexts, counters, examples, tasks
from dynaforge.services.actor import Actor


async def test_concurrent_examples_move_counters_and_contexts_with_them(live_platform):
    p = live_platform
    suffix = uuid.uuid4().hex[:6]
    writers = [await make_user(p, f"writer{i}{suffix}") for i in range(4)]
    await contexts.add_contexts(p, Actor.system(), "toy", [{"topic": "weather"}, {"topic": "food"}])
    view = await tasks.get_task(p, Actor.anonymous(), "toy")
    async with p.db.session() as s:
        context_ids = list(await s.scalars(select(Context.id).where(Context.task_id == view.row.id)))

    async def write(i: int) -> Example:
        # the toy model says "good" iff the text has the word good: claiming "bad" for it fools the model
        fooling = i % 3 != 0
        outcome = await examples.submit(
            p,
            writers[i % len(writers)],
            task_code="toy",
            fields={"text": f"a good thing number {i}", "label": "bad" if fooling else "good"},
            context_id=context_ids[i % len(context_ids)] if i % 2 else None,
        )
        assert outcome.example.fooled is fooling
        return outcome.example

    written = await asyncio.gather(*(write(i) for i in range(24)))

    async with p.db.session() as s:
        stored = {e.id: e for e in await s.scalars(select(Example).where(Example.task_id == view.row.id))}
        rounds = list(await s.scalars(select(Round).where(Round.task_id == view.row.id)))
        per_round, per_user = await counters.recount(s, [r.id for r in rounds])
        users = list(await s.scalars(select(RoundUserStats)))
        used = {c.id: (c.total_used, c.total_fooled) for c in await s.scalars(select(Context))}
    assert {e.id for e in written} <= set(stored)
    for e in written:  # each answer is the row that was stored
        assert stored[e.id].fields == e.fields and stored[e.id].fooled == e.fooled and stored[e.id].user_id == e.user_id
    for r in rounds:
        assert {c: getattr(r, c) for c in counters.COUNTERS} == per_round[r.id]
    assert sum(per_round[r.id]["collected"] for r in rounds) == len(stored)
    for row in users:
        assert {c: getattr(row, c) for c in counters.COUNTERS} == per_user[(row.round_id, row.user_id)]
    expected: dict[int, tuple[int, int]] = {}
    for e in stored.values():
        if e.context_id is not None:
            n, f = expected.get(e.context_id, (0, 0))
            expected[e.context_id] = (n + 1, f + int(bool(e.fooled)))
    assert {i: used[i] for i in expected} == expected and sum(n for n, _ in expected.values()) == 12


@pytest.mark.parametrize("db_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
async def test_a_connection_the_server_dropped_is_replaced_before_use(live_platform):
    p = live_platform
    writer = await make_user(p, f"writer{uuid.uuid4().hex[:6]}")
    async with p.db.engine.connect() as other:  # a second pooled connection, to drop the first from
        async with p.db.engine.connect() as first:
            first_pid = await first.scalar(text("SELECT pg_backend_pid()"))
        # the first is back in the pool, idle, when the server drops it
        await other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first_pid})
        await other.commit()
    for _ in range(2):  # the pool hands back the dropped connection first; every call must still work
        outcome = await examples.submit(
            p, writer, task_code="toy", fields={"text": "a good thing after a drop", "label": "bad"}
        )
        assert outcome.example.id is not None
    async with p.db.session() as s:
        assert await s.scalar(text("SELECT pg_backend_pid()")) != first_pid
