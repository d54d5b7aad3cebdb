"""Service-layer tests, each on SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from support import current_round, make_user

from dynaforge.db.models import Context, Example, ExampleStatus, RoundUserStats, User
from dynaforge.errors import (
    AlreadyExists,
    Forbidden,
    InvalidCredentials,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    RateLimited,
)
from dynaforge.services import auth, contexts, examples, tasks
from dynaforge.services.actor import Actor
from dynaforge.settings import Settings
from dynaforge.tasks.base import ModelSpec


async def _count(p, model, *where) -> int:
    async with p.db.session() as s:
        return await s.scalar(select(func.count()).select_from(model).where(*where))


# --------------------------------------------------------------------------- accounts and tokens


async def test_register_login_and_tokens(platform):
    user, token = await auth.register(platform, username="bob", email="Bob@Example.org", password="s3cret-enough")
    assert token.startswith("dfk_")
    async with platform.db.session() as s:
        stored = await s.get(User, user.id)
    assert stored.password_hash.startswith("$argon2id$")
    assert "s3cret" not in stored.password_hash
    assert stored.email == "bob@example.org"

    authn = await auth.authenticate(platform, token)
    assert authn.username == "bob" and authn.sign_in_error is None

    _, second = await auth.login(platform, username="BOB", password="s3cret-enough")
    row, third = await auth.create_token(platform, authn, name="laptop")
    assert len({token, second, third}) == 3
    listed = await auth.list_tokens(platform, authn)
    assert [t.name for t in listed] == ["registration", "login", "laptop"]
    assert all(t.token_hash != third and len(t.token_hash) == 64 for t in listed)

    await auth.revoke_token(platform, authn, row.id)
    revoked = await auth.authenticate(platform, third)
    assert revoked.is_anonymous and "revoked" in revoked.sign_in_error
    bogus = await auth.authenticate(platform, "dfk_not-a-token")
    assert bogus.is_anonymous and "not valid" in bogus.sign_in_error


async def test_password_hashing_cost_follows_the_settings_and_production_keeps_a_floor(platform):
    user = await make_user(platform, "erin")
    async with platform.db.session() as s:
        stored = await s.get(User, user.user_id)
    assert "$m=64,t=1," in stored.password_hash  # the tests' cheap setting (support.make_settings)
    await auth.login(platform, username="erin", password="long enough pw")
    with pytest.raises(InvalidCredentials):  # an unknown user is checked against a dummy hash of the same cost
        await auth.login(platform, username="nobody", password="long enough pw")
    assert Settings(_env_file=None).password_hash_time_cost == 3
    assert Settings(_env_file=None).password_hash_memory_kib == 65536
    with pytest.raises(ValueError, match="DYNAFORGE_PASSWORD_HASH_TIME_COST must be at least 2"):
        Settings(environment="production", secret_key="x" * 40, password_hash_time_cost=1)
    with pytest.raises(ValueError, match="OWASP"):
        Settings(environment="production", secret_key="x" * 40, password_hash_memory_kib=4096)


async def test_register_rejects_bad_and_duplicate_accounts(platform):
    with pytest.raises(InvalidInput) as err:
        await auth.register(platform, username="x", email="nope", password="short")
    assert {e.field for e in err.value.field_errors} == {"username", "email", "password"}
    await auth.register(platform, username="carol", email="carol@example.org", password="long enough pw")
    with pytest.raises(AlreadyExists) as taken:  # usernames are public: a taken one is said
        await auth.register(platform, username="Carol", email="other@example.org", password="long enough pw")
    assert "username" in taken.value.message and "email" not in taken.value.message
    assert await _count(platform, User) == 1


async def test_a_used_email_address_is_never_revealed(platform, monkeypatch):
    """Registering with an address another account gave answers exactly like any registration (a new account and
    its token), after the same hashing work: nobody learns whether an address has an account here, and nobody can
    lock an address's owner out by registering it first."""
    hashes: list[str] = []
    real = auth.password_hasher

    class Counting:
        def __init__(self, hasher):
            self.hasher = hasher

        def hash(self, password):
            hashes.append(password)
            return self.hasher.hash(password)

        def verify(self, stored, password):
            return self.hasher.verify(stored, password)

    monkeypatch.setattr(auth, "password_hasher", lambda settings: Counting(real(settings)))
    first, first_token = await auth.register(platform, username="nina", email="nina@example.org", password="pw nina 1")
    second, second_token = await auth.register(
        platform, username="nina2", email="NINA@example.org", password="pw nina 2"
    )
    assert (second.email, second.username) == ("nina@example.org", "nina2") and second.id != first.id
    assert second_token.startswith("dfk_") and second_token != first_token
    with pytest.raises(AlreadyExists):
        await auth.register(platform, username="NINA", email="elsewhere@example.org", password="pw nina 3")
    assert hashes == ["pw nina 1", "pw nina 2", "pw nina 3"]  # one hash each: a new, a used and a taken name alike
    assert (await auth.login(platform, username="nina", password="pw nina 1"))[0].id == first.id
    assert (await auth.login(platform, username="nina2", password="pw nina 2"))[0].id == second.id


async def test_login_wrong_password_and_unknown_user_say_the_same(platform):
    await make_user(platform, "dave")
    with pytest.raises(InvalidCredentials) as wrong:
        await auth.login(platform, username="dave", password="wrong password")
    with pytest.raises(InvalidCredentials) as unknown:
        await auth.login(platform, username="nobody", password="wrong password")
    assert wrong.value.message == unknown.value.message


async def test_login_attempts_are_rate_limited(platform):
    await make_user(platform, "erin")
    for _ in range(10):
        with pytest.raises(InvalidCredentials):
            await auth.login(platform, username="erin", password="not it at all")
    with pytest.raises(RateLimited):
        await auth.login(platform, username="erin", password="long enough pw")


async def test_only_admins_create_admins_and_foreign_tokens(platform):
    alice = await make_user(platform, "alice")
    with pytest.raises(Forbidden):
        await auth.create_user(
            platform, alice, username="mallory", email="m@example.org", password="long enough pw", is_admin=True
        )
    with pytest.raises(Forbidden):
        await auth.create_token(platform, alice, name="x", username="someone")
    await make_user(platform, "frank")
    row, _ = await auth.create_token(platform, Actor.system(), name="ops", username="frank")
    assert row.name == "ops"


async def test_revoking_someone_elses_token_is_not_found(platform):
    alice, bob = await make_user(platform, "alice"), await make_user(platform, "bob")
    row, _ = await auth.create_token(platform, alice, name="mine")
    with pytest.raises(NotFound):
        await auth.revoke_token(platform, bob, row.id)


# --------------------------------------------------------------------------- tasks and contexts


async def test_sync_registered_tasks_is_idempotent(platform):
    assert await tasks.sync_registered_tasks(platform) == []
    round_ = await current_round(platform)
    assert round_.number == 1
    assert round_.target_models == [
        {"name": "keyword", "backend": "python", "config": {"callable": "toy_plugin:keyword_model"}}
    ]
    assert len(round_.secret) == 64


async def test_next_context_picks_least_used(platform):
    alice = await make_user(platform)
    seen = set()
    for _ in range(3):
        ctx = await contexts.next_context(platform, alice, "toy")
        seen.add(ctx.id)
        await examples.submit(platform, alice, task_code="toy", context_id=ctx.id, fields={"text": "x", "label": "bad"})
    assert len(seen) == 3  # every context used once before any is used twice
    with pytest.raises(NotFound):
        await contexts.next_context(platform, alice, "no-such-task")


async def test_add_contexts_is_owner_only_and_all_or_nothing(platform):
    alice = await make_user(platform)
    with pytest.raises(Forbidden):
        await contexts.add_contexts(platform, alice, "toy", [{"topic": "sports"}])
    before = await _count(platform, Context)
    with pytest.raises(InvalidInput) as err:
        await contexts.add_contexts(platform, Actor.system(), "toy", [{"topic": "ok"}, {"topic": "x" * 500}])
    assert err.value.field_errors[0].field == "contexts[1].topic"
    assert await _count(platform, Context) == before
    await tasks.grant_ownership(platform, Actor.system(), "toy", alice.user_id)
    assert len(await contexts.add_contexts(platform, alice, "toy", [{"topic": "sports"}])) == 1


# --------------------------------------------------------------------------- examples


async def test_submit_not_fooled_and_fooled_updates_counters(platform):
    alice = await make_user(platform)
    ctx = await contexts.next_context(platform, alice, "toy")
    kept = await examples.submit(
        platform,
        alice,
        task_code="toy",
        context_id=ctx.id,
        fields={"text": "a good day", "label": "good"},
        time_taken_ms=1200,
    )
    assert kept.example.fooled is False and kept.example.status == ExampleStatus.CREATED
    assert kept.example.prediction["label"] == "good"
    fooled = await examples.submit(
        platform, alice, task_code="toy", context_id=ctx.id, fields={"text": "not good at all", "label": "bad"}
    )
    assert fooled.example.fooled is True
    assert fooled.example.model_predictions[0]["model"] == "keyword"

    round_ = await current_round(platform)
    assert (round_.collected, round_.fooled, round_.pending) == (2, 1, 0)
    async with platform.db.session() as s:
        stats = await s.get(RoundUserStats, (round_.id, alice.user_id))
        context = await s.get(Context, ctx.id)
    assert (stats.collected, stats.fooled) == (2, 1)
    assert (context.total_used, context.total_fooled) == (2, 1)


async def test_submit_without_context_stores_context_fields(platform):
    alice = await make_user(platform)
    outcome = await examples.submit(
        platform, alice, task_code="toy", fields={"topic": "trains", "text": "good", "label": "good"}
    )
    assert outcome.example.context_id is None
    assert outcome.example.fields == {"topic": "trains", "text": "good", "label": "good"}


@pytest.mark.parametrize(
    ("fields", "field", "rule"),
    [
        ({"text": "fine", "label": "meh"}, "label", "choice"),
        ({"text": "x" * 101, "label": "good"}, "text", "max_length"),
        ({"label": "good"}, "text", "required"),
        ({"text": "fine", "label": "good", "colour": "red"}, "colour", "unknown_field"),
        ({"text": "fine", "label": "good", "topic": "override"}, "topic", "role"),
    ],
)
async def test_submit_rejects_bad_fields_and_writes_nothing(platform, fields, field, rule):
    alice = await make_user(platform)
    ctx = await contexts.next_context(platform, alice, "toy")
    with pytest.raises(InvalidInput) as err:
        await examples.submit(platform, alice, task_code="toy", context_id=ctx.id, fields=fields)
    assert (err.value.field_errors[0].field, err.value.field_errors[0].rule) == (field, rule)
    assert await _count(platform, Example) == 0
    round_ = await current_round(platform)
    assert (round_.collected, round_.pending) == (0, 0)


async def test_submit_needs_a_user_and_a_known_task_and_context(platform):
    with pytest.raises(NotAuthenticated):
        await examples.submit(platform, Actor.anonymous(), task_code="toy", fields={"text": "good", "label": "good"})
    with pytest.raises(NotAuthenticated):
        await examples.submit(platform, Actor.system(), task_code="toy", fields={"text": "good", "label": "good"})
    alice = await make_user(platform)
    with pytest.raises(NotFound):
        await examples.submit(platform, alice, task_code="nope", fields={"text": "good", "label": "good"})
    with pytest.raises(NotFound):
        await examples.submit(
            platform, alice, task_code="toy", context_id=999999, fields={"text": "g", "label": "good"}
        )
    assert await _count(platform, Example) == 0


async def _set_target(platform, spec: ModelSpec) -> None:
    view = await tasks.get_task(platform, Actor.anonymous(), "toy")
    async with platform.db.write() as s:
        round_ = await tasks.current_round(s, view.row.id)
        round_.target_models = [spec.as_dict()]


async def test_slow_model_stores_example_pending(platform):
    await _set_target(platform, ModelSpec("slow", "python", {"callable": "toy_plugin:slow_model"}))
    alice = await make_user(platform)
    outcome = await examples.submit(platform, alice, task_code="toy", fields={"text": "good", "label": "good"})
    assert outcome.pending_reason and "did not answer" in outcome.pending_reason
    assert outcome.example.status == ExampleStatus.PENDING_PREDICTION and outcome.example.fooled is None
    round_ = await current_round(platform)
    assert (round_.collected, round_.pending) == (0, 1)
    assert await _count(platform, Example) == 1


async def test_unusable_model_output_stores_example_pending(platform):
    await _set_target(platform, ModelSpec("broken", "python", {"callable": "toy_plugin:broken_model"}))
    alice = await make_user(platform)
    outcome = await examples.submit(platform, alice, task_code="toy", fields={"text": "good", "label": "good"})
    assert "unusable output" in outcome.pending_reason


async def test_submissions_are_rate_limited_per_user_and_task(platform):
    platform.settings.examples_per_minute = 2
    alice, bob = await make_user(platform, "alice"), await make_user(platform, "bob")
    for _ in range(2):
        await examples.submit(platform, alice, task_code="toy", fields={"text": "good", "label": "good"})
    with pytest.raises(RateLimited):
        await examples.submit(platform, alice, task_code="toy", fields={"text": "good", "label": "good"})
    await examples.submit(platform, bob, task_code="toy", fields={"text": "good", "label": "good"})


async def test_retract_rules(platform):
    alice, bob = await make_user(platform, "alice"), await make_user(platform, "bob")
    outcome = await examples.submit(platform, alice, task_code="toy", fields={"text": "good", "label": "good"})
    with pytest.raises(Forbidden):
        await examples.retract(platform, bob, outcome.example.id)
    retracted = await examples.retract(platform, alice, outcome.example.id)
    assert retracted.status == ExampleStatus.RETRACTED
    await examples.retract(platform, alice, outcome.example.id)  # twice is harmless and counts once
    round_ = await current_round(platform)
    assert round_.retracted == 1
    with pytest.raises(NotFound):
        await examples.retract(platform, alice, 424242)


async def test_examples_are_keyset_paged_and_private(platform):
    alice, bob = await make_user(platform, "alice"), await make_user(platform, "bob")
    ids = []
    for i in range(5):
        outcome = await examples.submit(platform, alice, task_code="toy", fields={"text": f"good {i}", "label": "good"})
        ids.append(outcome.example.id)
    await examples.submit(platform, bob, task_code="toy", fields={"text": "bad", "label": "bad"})
    seen, after = [], None
    while True:
        page = await examples.list_examples(platform, alice, task_code="toy", first=2, after=after)
        seen += [e.id for e in page.items]
        if not page.has_next:
            break
        after = page.end_cursor
    assert seen == sorted(ids, reverse=True)
    everything = await examples.list_examples(platform, Actor.system(), task_code="toy", first=100)
    assert len(everything.items) == 6
    with pytest.raises(Forbidden):  # someone else's example of a task bob sees: told apart from a missing one
        await examples.get_example(platform, bob, ids[0])
    with pytest.raises(NotFound):
        await examples.get_example(platform, bob, 10**6)
    with pytest.raises(InvalidInput):
        await examples.list_examples(platform, alice, task_code="toy", first=1000)
    with pytest.raises(InvalidInput):
        await examples.list_examples(platform, alice, task_code="toy", after="garbage")
    with pytest.raises(NotAuthenticated):
        await examples.list_examples(platform, Actor.anonymous(), task_code="toy")


async def test_example_events_fire_after_commit(platform):
    from dynaforge import hookimpl

    seen = []

    class Listener:
        @hookimpl
        def example_created(self, example):
            seen.append(("created", example["id"], example["fooled"]))

        @hookimpl
        async def model_fooled(self, example):
            seen.append(("fooled", example["id"]))

    platform.plugins.register(Listener(), "listener")
    try:
        alice = await make_user(platform)
        a = await examples.submit(platform, alice, task_code="toy", fields={"text": "good", "label": "good"})
        b = await examples.submit(platform, alice, task_code="toy", fields={"text": "good", "label": "bad"})
    finally:
        platform.plugins.unregister("listener")
    assert seen == [("created", a.example.id, False), ("created", b.example.id, True), ("fooled", b.example.id)]
