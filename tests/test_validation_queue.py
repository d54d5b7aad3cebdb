"""What the annotate and validate screens show about their queues: the validation queue's size, skipping an
example (it comes back last, for the skipper only), the limits on reading the queue and skipping, and how many
examples the daily cap still allows; services and GraphQL, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from support import gid, make_user, register_user

from dynaforge.errors import Forbidden, NotAuthenticated, NotFound, QuotaExceeded, RateLimited
from dynaforge.services import examples, tasks, validation
from dynaforge.services.actor import Actor


async def _fooling(p, actor, n: int):
    outcome = await examples.submit(p, actor, task_code="toy", fields={"text": f"a good thing {n}", "label": "bad"})
    assert outcome.example.fooled
    return outcome.example


@pytest.fixture
async def people(platform):
    actors = {n: await make_user(platform, f"queue_{n}") for n in ("author", "v1", "v2", "owner")}
    await tasks.grant_ownership(platform, Actor.system(), "toy", actors["owner"].user_id)
    return actors


async def test_the_queue_size_counts_what_the_validator_could_be_served(platform, people):
    written = [await _fooling(platform, people["author"], n) for n in range(3)]
    assert await validation.queue_size(platform, people["author"], "toy") == 0  # never one's own
    assert await validation.queue_size(platform, people["v1"], "toy") == 3
    await validation.validate(platform, people["v1"], written[0].id, "CORRECT")
    assert await validation.queue_size(platform, people["v1"], "toy") == 2  # never one already voted on
    assert await validation.queue_size(platform, people["v2"], "toy") == 3
    await validation.flag(platform, people["v2"], written[1].id, "names a real person")
    assert await validation.queue_size(platform, people["v1"], "toy") == 1  # flagged: out of the crowd's queue
    assert await validation.queue_size(platform, people["owner"], "toy", owner_mode=True) == 3  # own mode: all
    with pytest.raises(Forbidden):
        await validation.queue_size(platform, people["v1"], "toy", owner_mode=True)
    with pytest.raises(NotAuthenticated):
        await validation.queue_size(platform, Actor.anonymous(), "toy")


async def test_a_skipped_example_comes_back_after_every_other_one_for_the_skipper_only(platform, people):
    first, second = [await _fooling(platform, people["author"], n) for n in range(2)]
    served = await validation.example_to_validate(platform, people["v1"], "toy")
    assert served is not None
    other = second if served.id == first.id else first
    await validation.skip(platform, people["v1"], served.id)
    for _ in range(5):  # picked at random among equals: the skipped one never wins while another waits
        assert (await validation.example_to_validate(platform, people["v1"], "toy")).id == other.id
    assert await validation.queue_size(platform, people["v1"], "toy") == 2  # skipped, still in the queue
    await validation.validate(platform, people["v1"], other.id, "CORRECT")
    # Fewest votes first: v1's skip does not push the skipped example back in anyone else's queue.
    assert (await validation.example_to_validate(platform, people["v2"], "toy")).id == served.id
    assert (await validation.example_to_validate(platform, people["v1"], "toy")).id == served.id  # then it returns
    await validation.skip(platform, people["v1"], served.id)  # skipping again is harmless
    assert (await validation.example_to_validate(platform, people["v1"], "toy")).id == served.id
    with pytest.raises(NotFound):
        await validation.skip(platform, people["v1"], 10**9)


async def test_the_queue_shows_one_example_at_a_time_and_reads_and_skips_are_limited(platform, people):
    """The queue holds other people's examples with the gold they claim: a validator is served the same one until
    they vote on it or skip it (rereading shows nothing new), reads are limited per user and minute, skips per
    validator, task and hour (RateLimited, saying when to come back), and only an example of one's own queue can be
    skipped (the answer carries its gold)."""
    platform.settings.validation_reads_per_minute = 10
    platform.settings.validation_skips_per_hour = 3
    written = [await _fooling(platform, people["author"], n) for n in range(6)]
    served = {(await validation.example_to_validate(platform, people["v1"], "toy")).id for _ in range(10)}
    assert len(served) == 1
    with pytest.raises(RateLimited) as limited:
        await validation.example_to_validate(platform, people["v1"], "toy")
    assert limited.value.retry_after_s > 0 and "at most 10 per 60s" in str(limited.value)
    assert await validation.example_to_validate(platform, people["v2"], "toy") is not None  # per user

    shown = []
    for _ in range(3):
        example = await validation.example_to_validate(platform, people["v2"], "toy")
        shown.append(example.id)
        await validation.skip(platform, people["v2"], example.id)
    assert len(set(shown)) == 3  # each skip served another example
    with pytest.raises(RateLimited) as limited:
        await validation.skip(platform, people["v2"], written[5].id)
    assert limited.value.retry_after_s > 0 and "skips in toy" in str(limited.value)

    await validation.validate(platform, people["v1"], written[0].id, "CORRECT")
    for actor, example in ((people["author"], written[1]), (people["v1"], written[0])):  # own; voted on
        with pytest.raises(Forbidden, match="not in your validation queue"):
            await validation.skip(platform, actor, example.id)


async def test_the_remaining_daily_cap(platform, people):
    author = people["author"]
    assert await examples.remaining_today(platform, author, "toy") is None  # no cap
    await tasks.update_settings(platform, people["owner"], "toy", {"daily_example_cap": 2})
    assert await examples.remaining_today(platform, author, "toy") == 2
    await _fooling(platform, author, 0)
    assert await examples.remaining_today(platform, author, "toy") == 1
    await _fooling(platform, author, 1)
    assert await examples.remaining_today(platform, author, "toy") == 0
    with pytest.raises(QuotaExceeded):
        await _fooling(platform, author, 2)
    assert await examples.remaining_today(platform, people["v1"], "toy") == 2  # per user


QUEUE = """query($t: String!) { exampleToValidate(taskCode: $t) { id }
  task(code: $t) { validationQueueSize viewerStats { remainingToday total { collected } } }
  tasks { code validationQueueSize } }"""
SKIP = """mutation($id: ID!) { skipExample(input: {id: $id}) {
  __typename ... on ExampleSkipped { example { id status } } ... on Error { message } } }"""


async def test_the_queue_over_graphql(gql, platform, people):
    author_token, _ = await register_user(gql, "writer")
    gql.token = author_token
    written = await gql(
        'mutation { createExample(input: {taskCode: "toy", fields: {text: "a good day", label: "bad"}}) '
        "{ ... on ExampleCreated { example { id } } } }"
    )
    example_id = written["createExample"]["example"]["id"]
    mine = await gql(QUEUE, {"t": "toy"})
    assert mine["task"]["validationQueueSize"] == 0 and mine["exampleToValidate"] is None
    assert mine["task"]["viewerStats"] == {"remainingToday": None, "total": {"collected": 1}}
    gql.token, _ = await register_user(gql, "checker")
    theirs = await gql(QUEUE, {"t": "toy"})
    assert theirs["task"]["validationQueueSize"] == 1 and theirs["exampleToValidate"] == {"id": example_id}
    assert {"code": "toy", "validationQueueSize": 1} in theirs["tasks"]  # every task's queue in one request
    skipped = (await gql(SKIP, {"id": example_id}))["skipExample"]
    assert skipped == {"__typename": "ExampleSkipped", "example": {"id": example_id, "status": "CREATED"}}
    missing = (await gql(SKIP, {"id": gid("Example", 999999)}))["skipExample"]
    assert missing["__typename"] == "NotFound"
    own = (await gql(SKIP, {"id": example_id}, token=author_token))["skipExample"]
    assert own["__typename"] == "Forbidden" and "not in your validation queue" in own["message"]
    anonymous = await gql(SKIP, {"id": example_id}, token=None)
    assert anonymous["skipExample"]["__typename"] == "NotAuthenticated"
