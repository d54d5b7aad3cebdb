"""Owners' analytics of a round: equal to a recount of the examples and votes, bucketed by hour or day; services and
GraphQL, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update
from support import make_user, register_user

from dynaforge.api.node import parse_id
from dynaforge.db.models import Example, Round
from dynaforge.errors import Forbidden, NotFound
from dynaforge.services import analytics, counters, examples, tasks, validation
from dynaforge.services.actor import Actor

MORNING = datetime(2026, 1, 5, 10, 15, tzinfo=UTC)


async def _write(p, actor, n: int, *, fooling: bool = True):
    """The toy model says 'good' when the text has the word: labelled 'bad', such a text fools it."""
    fields = {"text": f"good thing number {n}", "label": "bad" if fooling else "good"}
    return (await examples.submit(p, actor, task_code="toy", fields=fields, time_taken_ms=1000 * n)).example


async def _at(p, example_id: int, created: datetime, decided: datetime | None = None) -> None:
    """Move an example's times, as if it had been written (and decided) then."""
    async with p.db.write() as s:
        values = {"created_at": created, "fooled_at": created}
        if decided is not None:
            values["decided_at"] = decided
        await s.execute(update(Example).where(Example.id == example_id).values(**values))


@pytest.fixture
async def world(platform):
    people = {n: await make_user(platform, f"user_{n}") for n in ("ann", "bob", "v1", "v2", "owner")}
    await tasks.grant_ownership(platform, Actor.system(), "toy", people["owner"].user_id)
    await tasks.update_settings(platform, people["owner"], "toy", {"validation_quorum": 2})
    written = {}
    written["a1"] = await _write(platform, people["ann"], 1)
    written["a2"] = await _write(platform, people["ann"], 2)
    written["a3"] = await _write(platform, people["ann"], 3, fooling=False)
    written["b1"] = await _write(platform, people["bob"], 4)
    written["b2"] = await _write(platform, people["bob"], 5)
    # a1 accepted by the crowd (both agree); b1 rejected (v1 disagrees); b2 retracted; a2 waits with one vote.
    for voter in ("v1", "v2"):
        await validation.validate(platform, people[voter], written["a1"].id, "CORRECT")
    await validation.validate(platform, people["v1"], written["b1"].id, "CORRECT")
    await validation.validate(platform, people["v2"], written["b1"].id, "INCORRECT")
    await validation.validate(platform, people["owner"], written["b1"].id, "INCORRECT")  # an owner's: not counted
    await examples.retract(platform, people["bob"], written["b2"].id)
    await validation.validate(platform, people["v1"], written["a2"].id, "INCORRECT")
    await _at(platform, written["a1"].id, MORNING, decided=MORNING + timedelta(hours=2, minutes=5))
    await _at(platform, written["a2"].id, MORNING + timedelta(minutes=30))
    await _at(platform, written["a3"].id, MORNING + timedelta(minutes=40))
    await _at(platform, written["b1"].id, MORNING + timedelta(hours=1), decided=MORNING + timedelta(hours=1))
    await _at(platform, written["b2"].id, MORNING + timedelta(days=1))
    return people, written


async def test_analytics_equal_a_recount(platform, world):
    people, _ = world
    view = await tasks.get_task(platform, Actor.anonymous(), "toy")
    value = await analytics.round_analytics(platform, people["owner"], "toy", 1)
    async with platform.db.session() as s:
        round_ = await s.scalar(select(Round).where(Round.task_id == view.row.id, Round.number == 1))
        per_round, per_user = await counters.recount(s, [round_.id])
        by_source = await counters.by_source(s, [round_.id])
    stored = {c: getattr(round_, c) for c in counters.COUNTERS}
    assert per_round[round_.id] == stored  # the counters themselves are right
    for name in ("collected", "fooled", "verified_fooled"):
        assert sum(getattr(p, name) for p in value.periods) == stored[name], name
    by_user = {a.user.id: a for a in value.annotators}
    for (_, user_id), expected in per_user.items():
        assert {c: getattr(by_user[user_id].stats, c) for c in counters.COUNTERS} == expected
    assert {k: vars(v) for k, v in value.sources.items()} == by_source

    # Hour by hour: what was written at 10, found fooling at 10 and 11, verified at 11 and 12; b2 (retracted, the
    # next day) still counts as collected and fooled, as the counters count it.
    table = [(p.start.isoformat(), p.collected, p.fooled, p.verified_fooled) for p in value.periods]
    assert table == [
        ("2026-01-05T10:00:00+00:00", 3, 2, 0),
        ("2026-01-05T11:00:00+00:00", 1, 1, 0),
        ("2026-01-05T12:00:00+00:00", 0, 0, 1),
        ("2026-01-06T10:00:00+00:00", 1, 1, 0),
    ]
    daily = await analytics.round_analytics(platform, people["owner"], "toy", 1, analytics.Bucket.DAY)
    assert [(p.start.date().isoformat(), p.collected) for p in daily.periods] == [("2026-01-05", 4), ("2026-01-06", 1)]

    ann, v1, v2 = by_user[people["ann"].user_id], by_user[people["v1"].user_id], by_user[people["v2"].user_id]
    assert ann.median_time_taken_ms == 2000 and ann.validations == 0 and ann.validation_agreement is None
    assert (v1.validations, v1.decided_validations, v1.agreed_validations) == (3, 2, 1)  # a2 is undecided
    assert (v2.validations, v2.validation_agreement) == (2, 1.0)
    assert v1.stats.collected == 0 and people["owner"].user_id not in by_user  # the owner's vote is no crowd vote
    assert [a.user.username for a in value.annotators][:2] == ["user_ann", "user_bob"]  # most verified first


async def test_only_owners_read_analytics(platform, world):
    people, _ = world
    for who in ("ann", "v1"):
        with pytest.raises(Forbidden):
            await analytics.round_analytics(platform, people[who], "toy", 1)
    with pytest.raises(NotFound, match="no round 4"):
        await analytics.round_analytics(platform, people["owner"], "toy", 4)
    admin = await make_user(platform, "user_admin", admin=True)
    assert (await analytics.round_analytics(platform, admin, "toy", 1)).annotators


ANALYTICS = """query ($b: TimeBucket!) { task(code: "toy") { currentRound { analytics(bucket: $b) {
  bucket periods { start end collected fooled verifiedFooled }
  annotators { user { username } stats { collected verifiedFooled vmer } medianTimeTakenMs validations
               validationAgreement }
  sources { source stats { collected } } } } } }"""


async def test_graphql_contract(gql, platform):
    writer, _ = await register_user(gql, "writer")
    owner, owner_id = await register_user(gql, "boss")
    await tasks.grant_ownership(platform, Actor.system(), "toy", parse_id(owner_id, "id", "User"))
    for n in range(2):
        sent = await gql(
            'mutation ($f: JSON!) { createExample(input: {taskCode: "toy", fields: $f, timeTakenMs: 1500}) { '
            "__typename } }",
            {"f": {"text": f"good times {n}", "label": "bad"}},
            token=writer,
        )
        assert sent["createExample"]["__typename"] == "ExampleCreated"
    seen = (await gql(ANALYTICS, {"b": "DAY"}, token=owner))["task"]["currentRound"]["analytics"]
    assert seen["bucket"] == "DAY" and len(seen["periods"]) == 1
    period = seen["periods"][0]
    assert (period["collected"], period["fooled"], period["verifiedFooled"]) == (2, 2, 0)
    start, end = datetime.fromisoformat(period["start"]), datetime.fromisoformat(period["end"])
    assert end - start == timedelta(days=1) and start.hour == 0
    assert seen["annotators"] == [
        {
            "user": {"username": "writer"},
            "stats": {"collected": 2, "verifiedFooled": 0, "vmer": 0.0},
            "medianTimeTakenMs": 1500,
            "validations": 0,
            "validationAgreement": None,
        }
    ]
    assert {s["source"]: s["stats"]["collected"] for s in seen["sources"]} == {"HUMAN": 2, "ASSISTED": 0, "MACHINE": 0}
    refused = await gql(ANALYTICS, {"b": "HOUR"}, token=writer, expect_errors=True)
    assert refused["data"]["task"]["currentRound"]["analytics"] is None
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
