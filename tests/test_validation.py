"""Validation, flags, statistics, rounds, task settings and proposals: services and GraphQL, on SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import select
from support import make_user, register_user

from dynaforge.api.node import parse_id
from dynaforge.db.models import Context, Example, Round, RoundUserStats, Validation
from dynaforge.db.models import ExampleStatus as S
from dynaforge.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    QuotaExceeded,
    RateLimited,
    RoundClosed,
)
from dynaforge.services import auth, counters, examples, proposals, stats, tasks, validation
from dynaforge.services.actor import Actor


async def _write(p, actor, *, fooling: bool = True, tag: str | None = None, n: int = 0) -> Example:
    """The toy model says 'good' iff the text has the word good: a fooling example claims the other label."""
    text = f"a good thing number {n}"
    outcome = await examples.submit(
        p, actor, task_code="toy", fields={"text": text, "label": "bad" if fooling else "good"}, tag=tag
    )
    assert outcome.example.fooled is fooling
    return outcome.example


async def _assert_counters_match_recount(p) -> None:
    async with p.db.session() as s:
        rounds = list(await s.scalars(select(Round)))
        per_round, per_user = await counters.recount(s, [r.id for r in rounds])
        stored_users = list(await s.scalars(select(RoundUserStats)))
    for r in rounds:
        assert {c: getattr(r, c) for c in counters.COUNTERS} == per_round[r.id], f"round {r.number}"
    for row in stored_users:
        expected = per_user.get((row.round_id, row.user_id), dict.fromkeys(counters.COUNTERS, 0))
        assert {c: getattr(row, c) for c in counters.COUNTERS} == expected


@pytest.fixture
async def people(platform):
    names = ["author", "v1", "v2", "v3", "v4", "owner"]
    actors = {n: await make_user(platform, f"user_{n}") for n in names}
    await tasks.grant_ownership(platform, Actor.system(), "toy", actors["owner"].user_id)
    return actors


# --------------------------------------------------------------------------- the state machine


async def test_quorum_of_correct_accepts_and_counts_verified_fooled(platform, people):
    example = await _write(platform, people["author"])
    for name in ("v1", "v2"):
        result = await validation.validate(platform, people[name], example.id, "CORRECT")
        assert result.status == S.CREATED and result.decided_at is None
    result = await validation.validate(platform, people["v3"], example.id, "CORRECT")
    assert result.status == S.ACCEPTED and result.validations_correct == 3
    with pytest.raises(Conflict, match="accepted"):
        await validation.validate(platform, people["v4"], example.id, "INCORRECT")
    round_ = await tasks.get_round(platform, (await tasks.get_task(platform, Actor.anonymous(), "toy")).row.id)
    value = stats.Stats.of(round_)
    assert (value.collected, value.fooled, value.verified_fooled, value.accepted) == (1, 1, 1, 1)
    assert value.vmer == 1.0
    await _assert_counters_match_recount(platform)


@pytest.mark.parametrize("label", ["INCORRECT", "FLAGGED"])
async def test_quorum_of_incorrect_or_flagged_rejects(platform, people, label):
    example = await _write(platform, people["author"])
    await validation.validate(platform, people["v1"], example.id, "CORRECT")
    for name in ("v2", "v3"):
        assert (await validation.validate(platform, people[name], example.id, label)).status == S.CREATED
    result = await validation.validate(platform, people["v4"], example.id, label)
    assert result.status == S.REJECTED
    assert (result.validations_correct, result.validations_total) == (1, 4)
    await _assert_counters_match_recount(platform)


async def test_an_owners_vote_decides_alone_and_quorum_is_a_task_setting(platform, people):
    first = await _write(platform, people["author"], n=1)
    assert (await validation.validate(platform, people["owner"], first.id, "INCORRECT")).status == S.REJECTED
    second = await _write(platform, people["author"], n=2)
    assert (await validation.validate(platform, people["owner"], second.id, "CORRECT")).status == S.ACCEPTED
    async with platform.db.session() as s:
        votes = list(await s.scalars(select(Validation).where(Validation.user_id == people["owner"].user_id)))
    assert all(v.by_owner for v in votes) and len(votes) == 2

    await tasks.update_settings(platform, people["owner"], "toy", {"validation_quorum": 1})
    third = await _write(platform, people["author"], n=3)
    assert (await validation.validate(platform, people["v1"], third.id, "CORRECT")).status == S.ACCEPTED
    await _assert_counters_match_recount(platform)


async def test_nobody_validates_their_own_example_not_even_an_owner(platform, people):
    """An owner's vote decides alone, so an owner's vote on their own example would accept it unseen: refused, for
    admins too, and such examples stay out of their owner-mode queue; another owner or an admin decides them."""
    admin = await make_user(platform, "user_admin", admin=True)
    own = await _write(platform, people["owner"], n=1)
    admins = await _write(platform, admin, n=2)
    for actor, example in ((people["owner"], own), (admin, admins)):
        with pytest.raises(Forbidden, match="your own example; another owner or an admin decides it"):
            await validation.validate(platform, actor, example.id, "CORRECT")
        assert await validation.example_to_validate(platform, actor, "toy", owner_mode=True) is not None
        assert await validation.queue_size(platform, actor, "toy", owner_mode=True) == 1  # only the other's
        assert (await validation.example_to_validate(platform, actor, "toy", owner_mode=True)).id != example.id
    assert (await validation.validate(platform, admin, own.id, "CORRECT")).status == S.ACCEPTED
    assert (await validation.validate(platform, people["owner"], admins.id, "INCORRECT")).status == S.REJECTED
    await _assert_counters_match_recount(platform)


async def test_a_vote_is_withdrawn_within_its_window(platform, people):
    example = await _write(platform, people["author"])
    await validation.validate(platform, people["v1"], example.id, "INCORRECT")
    back = await validation.withdraw(platform, people["v1"], example.id)
    assert (back.validations_incorrect, back.validations_total, back.status) == (0, 0, S.CREATED)
    assert (await validation.example_to_validate(platform, people["v1"], "toy")).id == example.id  # queued again
    with pytest.raises(NotFound, match="no vote"):
        await validation.withdraw(platform, people["v1"], example.id)
    with pytest.raises(NotFound):
        await validation.withdraw(platform, people["v2"], example.id)  # never voted

    # After the window, or once the example is decided, a vote stays.
    await validation.validate(platform, people["v1"], example.id, "CORRECT")
    async with platform.db.write() as s:
        vote = await s.scalar(select(Validation).where(Validation.user_id == people["v1"].user_id))
        vote.created_at = vote.created_at - timedelta(seconds=validation.UNDO_VOTE_S + 5)
    with pytest.raises(Conflict, match="seconds"):
        await validation.withdraw(platform, people["v1"], example.id)
    for name in ("v2", "v3"):
        decided = await validation.validate(platform, people[name], example.id, "CORRECT")
    assert decided.status == S.ACCEPTED
    with pytest.raises(Conflict, match="accepted"):
        await validation.withdraw(platform, people["v3"], example.id)
    await _assert_counters_match_recount(platform)


async def test_votes_that_are_refused(platform, people):
    example = await _write(platform, people["author"])
    with pytest.raises(Forbidden, match="your own"):
        await validation.validate(platform, people["author"], example.id, "CORRECT")
    await validation.validate(platform, people["v1"], example.id, "CORRECT")
    with pytest.raises(AlreadyExists):
        await validation.validate(platform, people["v1"], example.id, "INCORRECT")
    with pytest.raises(InvalidInput, match="label"):
        await validation.validate(platform, people["v2"], example.id, "MAYBE")
    with pytest.raises(NotFound):
        await validation.validate(platform, people["v2"], 999_999, "CORRECT")
    with pytest.raises(InvalidInput, match="only with an INCORRECT"):
        await validation.validate(platform, people["v2"], example.id, "CORRECT", corrected_target={"label": "good"})
    with pytest.raises(InvalidInput, match="correctedTarget.label"):
        await validation.validate(platform, people["v2"], example.id, "INCORRECT", corrected_target={"label": "meh"})
    with pytest.raises(InvalidInput, match="target fields"):
        await validation.validate(platform, people["v2"], example.id, "INCORRECT", corrected_target={"text": "x"})
    voted = await validation.validate(
        platform, people["v2"], example.id, "INCORRECT", corrected_target={"label": "good"}, reason="the text is praise"
    )
    async with platform.db.session() as s:
        row = await s.scalar(select(Validation).where(Validation.user_id == people["v2"].user_id))
    assert row.corrected_target == {"label": "good"} and row.reason == "the text is praise"
    assert voted.validations_incorrect == 1

    not_fooling = await _write(platform, people["author"], fooling=False, n=5)
    with pytest.raises(Forbidden, match="only examples that fooled"):
        await validation.validate(platform, people["v1"], not_fooling.id, "CORRECT")
    await tasks.update_settings(platform, people["owner"], "toy", {"validate_non_fooling": True})
    assert (await validation.validate(platform, people["v1"], not_fooling.id, "CORRECT")).validations_correct == 1


async def test_owners_tune_a_threshold_or_a_rubric_only_where_the_task_has_one(platform, people):
    # The toy task's rule is "the targets differ": no threshold; it has no judge either. Nothing is stored.
    with pytest.raises(InvalidInput, match="fooledThreshold: toy's fooled rule compares with no threshold"):
        await tasks.update_settings(platform, people["owner"], "toy", {"fooled_threshold": 0.5})
    with pytest.raises(InvalidInput, match="judgeRubric: toy has no judge model"):
        await tasks.update_settings(platform, people["owner"], "toy", {"judge_rubric": "Wrong when wrong."})
    with pytest.raises(Forbidden):
        await tasks.update_settings(platform, people["v1"], "toy", {"validation_quorum": 2})
    view = await tasks.get_task(platform, people["owner"], "toy")
    assert view.settings.fooled_threshold is None and view.settings.judge_rubric is None
    assert view.task.fooled_threshold is None


async def test_validations_are_rate_limited(platform, people):
    platform.settings.validations_per_minute = 2
    examples_ = [await _write(platform, people["author"], n=i) for i in range(3)]
    for e in examples_[:2]:
        await validation.validate(platform, people["v1"], e.id, "CORRECT")
    with pytest.raises(RateLimited):
        await validation.validate(platform, people["v1"], examples_[2].id, "CORRECT")


async def test_flags_retraction_and_owner_review(platform, people):
    own = await _write(platform, people["author"], n=1)
    flagged = await validation.flag(platform, people["author"], own.id, "I picked the wrong label")
    assert flagged.status == S.FLAGGED and flagged.validations_total == 0  # the author's flag is not a vote
    assert (await validation.flag(platform, people["v1"], own.id, "again")).status == S.FLAGGED  # no change
    with pytest.raises(Conflict):
        await validation.validate(platform, people["v1"], own.id, "CORRECT")
    retracted = await examples.retract(platform, people["author"], own.id)
    assert retracted.status == S.RETRACTED

    other = await _write(platform, people["author"], n=2)
    with pytest.raises(InvalidInput, match="say why"):
        await validation.flag(platform, people["v1"], other.id, "   ")
    flagged = await validation.flag(platform, people["v1"], other.id, "it names a real person")
    assert flagged.status == S.FLAGGED and flagged.validations_flagged == 1
    assert await validation.example_to_validate(platform, people["v2"], "toy") is None
    with pytest.raises(Forbidden):
        await validation.example_to_validate(platform, people["v2"], "toy", owner_mode=True)
    queued = await validation.example_to_validate(platform, people["owner"], "toy", owner_mode=True)
    assert queued.id == other.id
    decided = await validation.validate(platform, people["owner"], other.id, "CORRECT")
    assert decided.status == S.ACCEPTED
    with pytest.raises(Forbidden, match="no longer be retracted"):
        await examples.retract(platform, people["author"], other.id)
    await _assert_counters_match_recount(platform)


# --------------------------------------------------------------------------- the queue


async def test_queue_order_exclusions_and_tags(platform, people):
    plain = await _write(platform, people["author"], fooling=False, n=1)
    voted = await _write(platform, people["author"], n=2)
    fresh = await _write(platform, people["author"], n=3)
    await validation.validate(platform, people["v2"], voted.id, "CORRECT")
    mine = await _write(platform, people["v1"], n=4)

    # fooling first, then fewest votes; never one's own
    assert (await validation.example_to_validate(platform, people["v1"], "toy")).id == fresh.id
    await validation.validate(platform, people["v1"], fresh.id, "CORRECT")
    assert (await validation.example_to_validate(platform, people["v1"], "toy")).id == voted.id
    await validation.validate(platform, people["v1"], voted.id, "CORRECT")
    assert await validation.example_to_validate(platform, people["v1"], "toy") is None  # the plain one is excluded
    await tasks.update_settings(platform, people["owner"], "toy", {"validate_non_fooling": True})
    assert (await validation.example_to_validate(platform, people["v1"], "toy")).id == plain.id
    assert (await validation.example_to_validate(platform, people["v3"], "toy")).id in {fresh.id, mine.id}

    await tasks.update_settings(
        platform, people["owner"], "toy", {"one_example_per_tag": True, "validate_non_fooling": False}
    )
    a = await _write(platform, people["author"], tag="set-a", n=10)
    b = await _write(platform, people["author"], tag="set-a", n=11)
    first = await validation.example_to_validate(platform, people["v4"], "toy")
    seen = set()
    while first is not None:
        seen.add(first.id)
        await validation.validate(platform, people["v4"], first.id, "CORRECT")
        first = await validation.example_to_validate(platform, people["v4"], "toy")
    assert len(seen & {a.id, b.id}) == 1


# --------------------------------------------------------------------------- statistics


async def test_counters_agree_with_a_recount_after_a_random_history(platform, people):
    rng = random.Random(7)
    writers = [people["author"], people["v1"], people["v2"]]
    voters = [people[n] for n in ("v1", "v2", "v3", "v4")]
    written = []
    for i in range(24):
        written.append(await _write(platform, rng.choice(writers), fooling=rng.random() < 0.7, n=i))
    await tasks.update_settings(
        platform, people["owner"], "toy", {"validate_non_fooling": True, "validation_quorum": 2}
    )
    for example in written:
        action = rng.random()
        try:
            if action < 0.1:
                await examples.retract(platform, Actor(example.user_id, "x"), example.id)
            elif action < 0.2:
                await validation.flag(platform, rng.choice(voters), example.id, "looks off")
            else:
                for voter in rng.sample(voters, 3):
                    await validation.validate(
                        platform, voter, example.id, rng.choice(["CORRECT", "CORRECT", "INCORRECT", "FLAGGED"])
                    )
        except (Conflict, Forbidden, AlreadyExists):
            pass
    await _assert_counters_match_recount(platform)
    view = await tasks.get_task(platform, Actor.anonymous(), "toy")
    total = await stats.task_stats(platform, view.row.id)
    board = await stats.leaderboard(platform, (await tasks.get_round(platform, view.row.id)).id)
    assert sum(e.stats.collected for e in board) == total.collected == 24
    assert [e.rank for e in board] == list(range(1, len(board) + 1))
    keys = [(e.stats.verified_fooled, e.stats.fooled, e.stats.collected) for e in board]
    assert keys == sorted(keys, reverse=True)
    mine = await stats.my_stats(platform, people["author"], "toy")
    assert [n for n, _ in mine] == [1]


# --------------------------------------------------------------------------- rounds and settings


async def test_rounds_open_close_and_describe(platform, people):
    view = await tasks.get_task(platform, Actor.anonymous(), "toy")
    await _write(platform, people["author"])
    with pytest.raises(Forbidden):
        await tasks.open_next_round(platform, people["v1"], "toy")
    first_secret = (await tasks.get_round(platform, view.row.id)).secret
    new, previous = await tasks.open_next_round(
        platform,
        people["owner"],
        "toy",
        description="harder",
        copy_contexts=True,
        models=[{"name": "kw2", "backend": "python", "config": {"callable": "toy_plugin:keyword_model"}}],
    )
    assert (new.number, previous.number) == (2, 1) and previous.ended_at is not None and new.ended_at is None
    assert new.secret != first_secret and new.target_models[0]["name"] == "kw2"
    async with platform.db.session() as s:
        copied = list(await s.scalars(select(Context).where(Context.round_id == new.id)))
    assert len(copied) == 3 and all(c.total_used == 0 for c in copied)
    example = await _write(platform, people["author"], n=9)
    assert example.round_id == new.id  # the cache was dropped at once

    closed = await tasks.close_round(platform, people["owner"], "toy")
    assert closed.number == 2 and closed.ended_at is not None
    with pytest.raises(RoundClosed):
        await _write(platform, people["author"], n=10)
    updated = await tasks.update_round(platform, people["owner"], "toy", 1, description="the first")
    assert updated.description == "the first"
    with pytest.raises(NotFound):
        await tasks.update_round(platform, people["owner"], "toy", 7, description="x")
    with pytest.raises(InvalidInput, match="ensembleRule"):
        await tasks.open_next_round(platform, people["owner"], "toy", rule="loudest")
    third, _ = await tasks.open_next_round(platform, people["owner"], "toy")
    assert third.number == 3 and third.target_models[0]["name"] == "kw2"


async def test_task_settings_caps_visibility_and_ownership(platform, people):
    with pytest.raises(Forbidden):
        await tasks.update_settings(platform, people["v1"], "toy", {"validation_quorum": 2})
    with pytest.raises(InvalidInput) as error:
        await tasks.update_settings(
            platform, people["owner"], "toy", {"validation_quorum": 0, "context_strategy": "best"}
        )
    assert {e.field for e in error.value.field_errors} == {"validationQuorum", "contextStrategy"}
    view = await tasks.update_settings(
        platform, people["owner"], "toy", {"daily_example_cap": 2, "instructions": "Be kind."}
    )
    assert view.instructions == "Be kind." and view.settings.daily_example_cap == 2
    await _write(platform, people["author"], n=1)
    await _write(platform, people["author"], n=2)
    with pytest.raises(QuotaExceeded, match="cap of 2") as capped:
        await _write(platform, people["author"], n=3)
    assert (capped.value.quota, capped.value.limit) == ("EXAMPLES_PER_DAY", 2)
    assert 0 < (capped.value.retry_after_s or 0) <= 24 * 3600  # midnight UTC
    view = await tasks.update_settings(platform, people["owner"], "toy", {"daily_example_cap": 0, "instructions": ""})
    assert view.settings.daily_example_cap is None and view.instructions == view.task.instructions
    await _write(platform, people["author"], n=3)

    await tasks.update_settings(platform, people["owner"], "toy", {"active": False})
    with pytest.raises(RoundClosed, match="not collecting"):
        await _write(platform, people["author"], n=4)
    await tasks.update_settings(platform, people["owner"], "toy", {"active": True, "hidden": True})
    with pytest.raises(NotFound):
        await tasks.get_task(platform, people["v1"], "toy")
    assert (await tasks.get_task(platform, people["owner"], "toy")).row.hidden

    with pytest.raises(Forbidden):
        await tasks.grant_ownership(platform, people["owner"], "toy", people["v1"].user_id)
    await tasks.grant_ownership(platform, Actor.system(), "toy", people["v1"].user_id)
    assert (await tasks.get_task(platform, people["v1"], "toy")).row.hidden
    await tasks.revoke_ownership(platform, Actor.system(), "toy", people["v1"].user_id)
    with pytest.raises(NotFound):
        await tasks.get_task(platform, people["v1"], "toy")


async def test_break_reminders_are_a_task_default_owners_change(platform, people):
    toy = (await tasks.get_task(platform, Actor.anonymous(), "toy")).task
    assert tasks.TaskSettings.of(toy, {}).break_reminder_minutes is None
    worn = type("Worn", (), {"validation_quorum": 3, "break_reminder_minutes": 30})()
    assert tasks.TaskSettings.of(worn, {}).break_reminder_minutes == 30  # the task's own
    assert tasks.TaskSettings.of(worn, {"break_reminder_minutes": 0}).break_reminder_minutes is None  # turned off
    view = await tasks.update_settings(platform, people["owner"], "toy", {"break_reminder_minutes": 45})
    assert view.settings.break_reminder_minutes == 45
    for bad in (3, 500):
        with pytest.raises(InvalidInput) as caught:
            await tasks.update_settings(platform, people["owner"], "toy", {"break_reminder_minutes": bad})
        assert [(e.field, e.rule) for e in caught.value.field_errors] == [("breakReminderMinutes", "range")]
    view = await tasks.update_settings(platform, people["owner"], "toy", {"break_reminder_minutes": 0})
    assert view.settings.break_reminder_minutes is None


async def test_task_proposals(platform, people):
    from sqlalchemy import delete, update

    from dynaforge.db.models import TaskOwner, TaskRow

    admin = await make_user(platform, "root", admin=True)
    with pytest.raises(InvalidInput, match="code"):
        await proposals.propose(platform, people["v1"], code="Bad Code!", name="x")
    with pytest.raises(AlreadyExists, match="taken"):  # a running task: accepting would hand it to the proposer
        await proposals.propose(platform, people["v1"], code="toy", name="Mine now")
    # The toy plugin's task as a newly installed plugin's waits for its proposal: inactive, without owners.
    async with platform.db.write() as s:
        await s.execute(update(TaskRow).where(TaskRow.code == "toy").values(active=False))
        await s.execute(delete(TaskOwner))
    platform.caches.tasks.clear()
    mine = await proposals.propose(platform, people["v1"], code="toy", name="Toy again", description="a rerun")
    with pytest.raises(AlreadyExists):
        await proposals.propose(platform, people["v2"], code="toy", name="Same")
    missing = await proposals.propose(platform, people["v2"], code="babylm", name="BabyLM")
    assert [p.id for p in (await proposals.list_proposals(platform, people["v1"])).window.rows] == [mine.id]
    assert len((await proposals.list_proposals(platform, admin, status="PENDING")).window.rows) == 2
    with pytest.raises(Forbidden):
        await proposals.decide(platform, people["v1"], mine.id, accept=True)
    with pytest.raises(InvalidInput, match="no installed plugin"):
        await proposals.decide(platform, admin, missing.id, accept=True)
    declined = await proposals.decide(platform, admin, missing.id, accept=False, note="no plugin yet")
    assert declined.status == "DECLINED"
    accepted = await proposals.decide(platform, admin, mine.id, accept=True)
    assert accepted.status == "ACCEPTED" and accepted.decided_by == admin.user_id
    with pytest.raises(Conflict):
        await proposals.decide(platform, admin, mine.id, accept=False)
    view = await tasks.get_task(platform, Actor.anonymous(), "toy")
    async with platform.db.session() as s:
        assert await tasks.is_owner(s, people["v1"], view.row.id)
    with pytest.raises(AlreadyExists, match="taken"):
        await proposals.propose(platform, people["v2"], code="toy", name="Mine now")


async def test_a_proposal_never_hands_over_a_task_that_has_owners(platform, people):
    from sqlalchemy import delete, update

    from dynaforge.db.models import TaskOwner, TaskRow

    admin = await make_user(platform, "root", admin=True)
    async with platform.db.write() as s:
        await s.execute(update(TaskRow).where(TaskRow.code == "toy").values(active=False))
        await s.execute(delete(TaskOwner))
    platform.caches.tasks.clear()
    proposal = await proposals.propose(platform, people["v2"], code="toy", name="Early bird")
    await tasks.grant_ownership(platform, Actor.system(), "toy", people["v1"].user_id)  # before the decision
    with pytest.raises(Conflict, match="already has owners"):
        await proposals.decide(platform, admin, proposal.id, accept=True)


# --------------------------------------------------------------------------- GraphQL contract


STATS = (
    "query($c: String!) { task(code: $c) { currentRound { number stats { collected fooled verifiedFooled rejected "
    "vmer } } } }"
)
TO_VALIDATE = (
    "query($c: String!) { exampleToValidate(taskCode: $c) { id fields fooled context { fields } votes { correct } } }"
)
VALIDATE = """mutation($id: ID!, $l: ValidationLabel!) { validateExample(input: {id: $id, label: $l}) {
  __typename ... on ValidationRecorded { example { id status } decided } ... on Error { message } } }"""
OPEN = """mutation($c: String!) { openNextRound(input: {taskCode: $c}) {
  __typename ... on RoundOpened { round { number } previous { number endedAt } } ... on Error { message } } }"""
CREATE = """mutation($f: JSON!) { createExample(input: {taskCode: "toy", fields: $f}) {
  __typename ... on ExampleCreated { example { id } fooled } } }"""


async def test_graphql_contract(gql, platform):
    author, _ = await register_user(gql, "writer")
    voters = [(await register_user(gql, f"judge{i}"))[0] for i in range(3)]
    owner, owner_id = await register_user(gql, "boss")
    await tasks.grant_ownership(platform, Actor.system(), "toy", parse_id(owner_id, "id", "User"))
    created = await gql(CREATE, {"f": {"text": "good news", "label": "bad"}}, token=author)
    example_id = created["createExample"]["example"]["id"]

    anonymous = await gql(TO_VALIDATE, {"c": "toy"}, token=None, expect_errors=True)
    assert anonymous["errors"][0]["extensions"]["code"] == "NOT_AUTHENTICATED"
    assert (await gql(TO_VALIDATE, {"c": "toy"}, token=author))["exampleToValidate"] is None
    for i, token in enumerate(voters):
        queued = (await gql(TO_VALIDATE, {"c": "toy"}, token=token))["exampleToValidate"]
        assert queued["id"] == example_id and queued["fooled"] is True and queued["votes"]["correct"] == i
        result = (await gql(VALIDATE, {"id": example_id, "l": "CORRECT"}, token=token))["validateExample"]
        assert result["__typename"] == "ValidationRecorded"
        assert result["example"]["status"] == ("ACCEPTED" if i == 2 else "CREATED") and result["decided"] is (i == 2)
    again = (await gql(VALIDATE, {"id": example_id, "l": "CORRECT"}, token=voters[0]))["validateExample"]
    assert again["__typename"] == "Conflict"
    late = await gql(
        "mutation ($id: ID!) { withdrawValidation(input: {id: $id}) { __typename ... on Error { message } } }",
        {"id": example_id},
        token=voters[2],
    )
    assert late["withdrawValidation"]["__typename"] == "Conflict"  # the vote that decided it stays

    round_stats = (await gql(STATS, {"c": "toy"}, token=None))["task"]["currentRound"]
    assert round_stats == {
        "number": 1,
        "stats": {"collected": 1, "fooled": 1, "verifiedFooled": 1, "rejected": 0, "vmer": 1.0},
    }
    assert (await gql(OPEN, {"c": "toy"}, token=author))["openNextRound"]["__typename"] == "Forbidden"
    opened = (await gql(OPEN, {"c": "toy"}, token=owner))["openNextRound"]
    assert opened["round"]["number"] == 2 and opened["previous"]["number"] == 1 and opened["previous"]["endedAt"]
    board = await gql(
        '{ task(code: "toy") { round(number: 1) { leaderboard { nodes { rank username stats { verifiedFooled } } } } '
        "settings { validationQuorum } } }",
        token=None,
    )
    ranked = board["task"]["round"]["leaderboard"]["nodes"]
    assert ranked == [{"rank": 1, "username": "writer", "stats": {"verifiedFooled": 1}}]
    mine = await gql('{ myStats(taskCode: "toy") { rounds { roundNumber } total { collected vmer } } }', token=author)
    assert mine["myStats"] == {"rounds": [{"roundNumber": 1}], "total": {"collected": 1, "vmer": 1.0}}
    every = await gql(
        "{ tasks { code viewerStats { rounds { roundNumber } total { collected vmer } } } }", token=author
    )
    toy = next(t for t in every["tasks"] if t["code"] == "toy")
    assert toy["viewerStats"] == mine["myStats"]  # the deprecated root and the task's field agree
    anonymous = await gql('{ task(code: "toy") { code viewerStats { taskCode } } }', token=None, expect_errors=True)
    assert anonymous["data"]["task"] == {"code": "toy", "viewerStats": None}
    assert anonymous["errors"][0]["extensions"]["code"] == "NOT_AUTHENTICATED"

    settings = await gql(
        'mutation { updateTaskSettings(input: {taskCode: "toy", validationQuorum: 5, contextStrategy: UNIFORM}) { '
        "__typename ... on TaskSettingsUpdated { task { settings { validationQuorum contextStrategy } } } } }",
        token=owner,
    )
    assert settings["updateTaskSettings"]["task"]["settings"] == {"validationQuorum": 5, "contextStrategy": "UNIFORM"}
    grant = await gql(
        'mutation { grantTaskOwnership(input: {taskCode: "toy", username: "writer"}) { __typename } }', token=owner
    )
    assert grant["grantTaskOwnership"]["__typename"] == "Forbidden"


# --------------------------------------------------------------------------- concurrency on real connections


async def test_parallel_validations_push_the_state_machine_once(live_platform):
    p = live_platform
    suffix = uuid.uuid4().hex[:6]
    author = await make_user(p, f"w{suffix}")
    voters = [await make_user(p, f"v{i}{suffix}") for i in range(10)]
    example = await _write(p, author, n=1)
    view = await tasks.get_task(p, Actor.anonymous(), "toy")
    before = await stats.task_stats(p, view.row.id)

    results = await asyncio.gather(
        *(validation.validate(p, v, example.id, "CORRECT") for v in voters), return_exceptions=True
    )
    accepted = [r for r in results if isinstance(r, Example)]
    conflicts = [r for r in results if isinstance(r, Conflict)]
    assert len(accepted) == 3 and len(conflicts) == 7, results
    assert sum(r.status == S.ACCEPTED for r in accepted) == 1

    # the same voter twice at once: one vote, one AlreadyExists
    second = await _write(p, author, n=2)
    twice = await asyncio.gather(
        *(validation.validate(p, voters[0], second.id, "INCORRECT") for _ in range(4)), return_exceptions=True
    )
    assert sum(isinstance(r, Example) for r in twice) == 1 and sum(isinstance(r, AlreadyExists) for r in twice) == 3

    after = await stats.task_stats(p, view.row.id)
    assert after.verified_fooled - before.verified_fooled == 1
    assert after.accepted - before.accepted == 1
    async with p.db.session() as s:
        stored = await s.get(Example, example.id)
        votes = list(await s.scalars(select(Validation).where(Validation.example_id == example.id)))
        second_votes = list(await s.scalars(select(Validation).where(Validation.example_id == second.id)))
    assert stored.status == S.ACCEPTED and stored.validations_correct == 3 and len(votes) == 3
    assert len(second_votes) == 1
    await _assert_counters_match_recount(p)


async def test_concurrent_next_round_openings_make_one_round(live_platform):
    p = live_platform
    view = await tasks.get_task(p, Actor.anonymous(), "toy")
    start = (await tasks.get_round(p, view.row.id)).number
    results = await asyncio.gather(
        *(tasks.open_next_round(p, Actor.system(), "toy") for _ in range(4)), return_exceptions=True
    )
    opened = [r for r in results if isinstance(r, tuple)]
    assert all(isinstance(r, (tuple, Conflict)) for r in results), results
    numbers = sorted(r[0].number for r in opened)
    assert numbers == list(range(start + 1, start + 1 + len(opened)))  # no number twice, none skipped
    async with p.db.session() as s:
        open_rounds = list(await s.scalars(select(Round).where(Round.task_id == view.row.id, Round.ended_at.is_(None))))
    assert len(open_rounds) == 1


async def test_a_repeated_open_next_round_opens_one_round(gql, platform):
    owner = await make_user(platform, "round_keeper")
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner.user_id)
    _, token = await auth.create_token(platform, owner, name="test")
    view = await tasks.get_task(platform, Actor.anonymous(), "toy")
    seen = (await tasks.get_round(platform, view.row.id)).number
    mutation = """mutation($input: OpenNextRoundInput!) { openNextRound(input: $input) {
      __typename ... on RoundOpened { round { number } } ... on Conflict { message } } }"""
    asked = {"input": {"taskCode": "toy", "currentRound": seen}}
    first = (await gql(mutation, asked, token=token))["openNextRound"]
    assert first == {"__typename": "RoundOpened", "round": {"number": seen + 1}}
    again = (await gql(mutation, asked, token=token))["openNextRound"]  # a double click sends the same input
    assert again["__typename"] == "Conflict" and f"Round {seen + 1} of toy is the current round" in again["message"]
    assert (await tasks.get_round(platform, view.row.id)).number == seen + 1
    # without currentRound the next one opens whatever is current (as before)
    unguarded = (await gql(mutation, {"input": {"taskCode": "toy"}}, token=token))["openNextRound"]
    assert unguarded == {"__typename": "RoundOpened", "round": {"number": seen + 2}}


async def test_graphql_flags_rounds_ownership_and_proposals(gql, platform):
    author, _ = await register_user(gql, "scribe")
    other, _ = await register_user(gql, "reader")
    admin = await make_user(platform, "chief", admin=True)
    _, admin_token = await auth.create_token(platform, admin, name="test")
    created = await gql(CREATE, {"f": {"text": "good grief", "label": "bad"}}, token=author)
    example_id = created["createExample"]["example"]["id"]

    flag = """mutation($id: ID!, $r: String!) { flagExample(input: {id: $id, reason: $r}) {
      __typename ... on ExampleFlagged { example { id status } } ... on InvalidInput { fieldErrors { field } } } }"""
    assert (await gql(flag, {"id": example_id, "r": ""}, token=other))["flagExample"]["fieldErrors"] == [
        {"field": ["reason"]}
    ]
    flagged = (await gql(flag, {"id": example_id, "r": "mentions a private address"}, token=other))["flagExample"]
    assert flagged == {"__typename": "ExampleFlagged", "example": {"id": example_id, "status": "FLAGGED"}}
    owner_queue = await gql(
        '{ exampleToValidate(taskCode: "toy", mode: OWNER) { id } }', token=other, expect_errors=True
    )
    assert owner_queue["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert (await gql('{ exampleToValidate(taskCode: "toy", mode: OWNER) { id } }', token=admin_token))[
        "exampleToValidate"
    ] == {"id": example_id}

    close = (
        'mutation { closeRound(input: {taskCode: "toy"}) { __typename ... on RoundEnded { round { number endedAt '
        "} } } }"
    )
    assert (await gql(close, token=other))["closeRound"]["__typename"] == "Forbidden"
    closed = (await gql(close, token=admin_token))["closeRound"]
    assert closed["round"]["number"] == 1 and closed["round"]["endedAt"]
    refused = await gql(CREATE, {"f": {"text": "fine", "label": "bad"}}, token=author)
    assert refused["createExample"]["__typename"] == "RoundClosed"
    describe = """mutation { updateRound(input: {taskCode: "toy", round: 1, description: "warm-up"}) {
      __typename ... on RoundUpdated { round { description } } } }"""
    assert (await gql(describe, token=admin_token))["updateRound"]["round"]["description"] == "warm-up"

    grant = """mutation($m: String!) { %s(input: {taskCode: "toy", username: $m}) {
      __typename ... on TaskOwnershipChanged { isOwner user { username } task { viewerIsOwner } } } }"""
    granted = (await gql(grant % "grantTaskOwnership", {"m": "reader"}, token=admin_token))["grantTaskOwnership"]
    assert granted["isOwner"] and granted["user"]["username"] == "reader"
    owners = await gql('{ task(code: "toy") { owners { username } viewerIsOwner } }', token=other)
    assert owners["task"] == {"owners": [{"username": "reader"}], "viewerIsOwner": True}
    revoked = (await gql(grant % "revokeTaskOwnership", {"m": "reader"}, token=admin_token))["revokeTaskOwnership"]
    assert revoked["isOwner"] is False
    missing = (await gql(grant % "grantTaskOwnership", {"m": "nobody"}, token=admin_token))["grantTaskOwnership"]
    assert missing["__typename"] == "NotFound"

    propose = """mutation {
      proposeTask(input: {code: "riddles", name: "Riddles", description: "model-in-the-loop riddles"}) {
      __typename ... on TaskProposed { proposal { id status } } } }"""
    proposal = (await gql(propose, token=author))["proposeTask"]["proposal"]
    assert proposal["status"] == "PENDING"
    assert (await gql("{ taskProposals { nodes { code } } }", token=other))["taskProposals"]["nodes"] == []
    mine = (await gql("{ taskProposals { nodes { code } } }", token=author))["taskProposals"]["nodes"]
    assert mine == [{"code": "riddles"}]
    decide = """mutation($id: ID!, $a: Boolean!) {
      decideTaskProposal(input: {id: $id, accept: $a, note: "not installed"}) {
      __typename ... on TaskProposalDecided { proposal { status decisionNote } } ... on InvalidInput { message } } }"""
    assert (await gql(decide, {"id": proposal["id"], "a": True}, token=author))["decideTaskProposal"][
        "__typename"
    ] == "Forbidden"
    assert (
        "no installed plugin"
        in (await gql(decide, {"id": proposal["id"], "a": True}, token=admin_token))["decideTaskProposal"]["message"]
    )
    declined = (await gql(decide, {"id": proposal["id"], "a": False}, token=admin_token))["decideTaskProposal"]
    assert declined["proposal"] == {"status": "DECLINED", "decisionNote": "not installed"}
