"""Subscriptions over graphql-transport-ws: a real uvicorn server on loopback (in this process, on a fresh SQLite or
PostgreSQL database), the ``gql`` client over websockets for subscriptions and HTTP for mutations.

Who sees what: example events need a signed-in subscriber (anonymous queries cannot read examples); round events
anyone who can see the task; evaluation progress anyone who can see the model. Tokens come in the
``connection_init`` payload; a revoked one stops a running subscription.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import websockets
from gql import Client, gql
from gql.graphql_request import GraphQLRequest
from gql.transport.exceptions import TransportQueryError
from gql.transport.websockets import WebsocketsTransport
from support import gid, serve_in_loop

from dynaforge.app import create_app
from dynaforge.db.models import DatasetAccess
from dynaforge.inference.backends import InferenceError
from dynaforge.inference.client import InferenceClient
from dynaforge.jobs import publisher
from dynaforge.services import auth, datasets, submissions, validation
from dynaforge.services.actor import Actor
from dynaforge.services.evaluation_runner import Runner

CREATE = """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename
  ... on ExampleCreated { example { id fooled } } ... on Error { message } } }"""
VALIDATE = """mutation($id: ID!) { validateExample(input: {id: $id, label: CORRECT}) { __typename } }"""
OPEN_ROUND = """mutation { openNextRound(input: {taskCode: "toy"}) { __typename } }"""
FOOLED = gql(
    'subscription { modelFooled(taskCode: "toy") { id fields prediction { label } fooled task { code } '
    "round { number } } }"
)
CREATED = gql(
    'subscription { exampleCreated(taskCode: "toy") { __typename ... on Example { id fooled status } '
    "... on RedactedExample { exampleId status } } }"
)
VALIDATED = gql(
    'subscription { exampleValidated(taskCode: "toy") { label example { __typename '
    "... on Example { id status votes { correct } } ... on RedactedExample { exampleId status votes { correct } } } } }"
)
ROUNDS = gql('subscription { roundChanged(taskCode: "toy") { taskCode change round { number } } }')
PROGRESS = gql("subscription($m: ID!) { evaluationProgress(modelId: $m) { evaluationId datasetName status progress } }")


class Served:
    def __init__(self, p, base: str):
        self.p, self.base = p, base
        self.http = httpx.AsyncClient(base_url=base, timeout=30)

    async def __aenter__(self) -> Served:
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.http.aclose()

    async def gql(self, query: str, variables: dict | None = None, token: str | None = None) -> dict:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = await self.http.post(
            "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
        )
        body = response.json()
        assert "errors" not in body, body
        return body["data"]

    async def user(self, name: str, admin: bool = False) -> tuple[str, int]:
        user = await auth.create_user(
            self.p,
            Actor.system(),
            username=name,
            email=f"{name}@example.org",
            password="long enough pw",
            is_admin=admin,
        )
        _, token = await auth.create_token(self.p, Actor(user.id, user.username, admin), name="test")
        return token, user.id

    @asynccontextmanager
    async def subscriber(self, token: str | None = None, params: dict | None = None) -> AsyncIterator[Any]:
        init = params if params is not None else ({"authorization": f"Bearer {token}"} if token else {})
        transport = WebsocketsTransport(
            url=self.base.replace("http", "ws") + "/graphql",
            init_payload=init,
            subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
        )
        async with Client(transport=transport, fetch_schema_from_transport=False) as session:
            yield session


@pytest.fixture
async def served(live_platform):
    p = live_platform
    p.settings.examples_per_minute = 1000
    app = create_app(platform=p, sync_tasks=False)
    await p.events.start()
    async with serve_in_loop(app) as base, Served(p, base) as s:
        yield s


async def _collect(session, document, count: int, variables: dict | None = None, within: float = 10.0) -> list[dict]:
    """The first ``count`` results of a subscription (started before the caller makes events)."""
    results = []

    async def read():
        request = document if variables is None else GraphQLRequest(document.document, variable_values=variables)
        async for result in session.subscribe(request):
            results.append(result)
            if len(results) == count:
                return

    await asyncio.wait_for(read(), within)
    return results


async def _started(task: asyncio.Task, bus, topic: str) -> None:
    """Wait until the subscription is registered on the bus (so that no event is made before it listens)."""
    for _ in range(200):
        if bus.subscriber_count(topic) or task.done():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"nobody subscribed to {topic}")


async def test_example_events_reach_signed_in_subscribers(served):
    """Another user's examples reach a reader redacted, and never as modelFooled: that an example fooled the
    target, with the target's verdict on the same text (anyone may ask for it), is a two-class task's gold."""
    author, _ = await served.user("author1")
    reader, _ = await served.user("reader1")
    async with served.subscriber(reader) as fooled_session, served.subscriber(reader) as created_session:
        fooled = asyncio.create_task(_collect(fooled_session, FOOLED, 1))
        created = asyncio.create_task(_collect(created_session, CREATED, 3))
        await _started(fooled, served.p.events, "modelFooled:toy")
        await _started(created, served.p.events, "exampleCreated:toy")
        plain = await served.gql(
            CREATE, {"input": {"taskCode": "toy", "fields": {"text": "bad day", "label": "bad"}}}, author
        )
        tricky = await served.gql(
            CREATE, {"input": {"taskCode": "toy", "fields": {"text": "good grief", "label": "bad"}}}, author
        )
        assert plain["createExample"]["example"]["fooled"] is False and tricky["createExample"]["example"]["fooled"]
        own = await served.gql(
            CREATE, {"input": {"taskCode": "toy", "fields": {"text": "good riddance", "label": "bad"}}}, reader
        )
        got_fooled, got_created = await fooled, await created
    # The author's fooling example never came: the reader's first modelFooled event is their own, whole.
    event = got_fooled[0]["modelFooled"]
    assert event["id"] == own["createExample"]["example"]["id"]
    assert event["fields"] == {"text": "good riddance", "label": "bad"} and event["prediction"] == {"label": "good"}
    assert (event["fooled"], event["task"]["code"], event["round"]["number"]) == (True, "toy", 1)
    # exampleCreated shows the author's examples redacted (their own type, without whether they fooled the
    # target and without the example's id, so a normalised cache keeps them apart); the reader's own whole.
    assert [r["exampleCreated"] for r in got_created] == [
        {"__typename": "RedactedExample", "exampleId": plain["createExample"]["example"]["id"], "status": "CREATED"},
        {"__typename": "RedactedExample", "exampleId": tricky["createExample"]["example"]["id"], "status": "CREATED"},
        {"__typename": "Example", "id": own["createExample"]["example"]["id"], "fooled": True, "status": "CREATED"},
    ]


async def test_anonymous_and_bad_tokens_get_a_clear_error(served):
    async with served.subscriber() as session:
        with pytest.raises(TransportQueryError, match="signed-in users"):
            await _collect(session, FOOLED, 1, within=5)
    async with served.subscriber(params={"authorization": "Bearer not-a-token"}) as session:
        with pytest.raises(TransportQueryError, match="not valid"):
            await _collect(session, ROUNDS, 1, within=5)
    token, _ = await served.user("someone")
    async with served.subscriber(token) as session:
        with pytest.raises(TransportQueryError, match="No task 'nope'"):
            await _collect(session, gql('subscription { modelFooled(taskCode: "nope") { id } }'), 1, within=5)


async def test_rounds_are_public_and_votes_reach_subscribers(served):
    admin, _ = await served.user("admin1", admin=True)
    author, _ = await served.user("author2")
    voter, _ = await served.user("voter1")
    created = await served.gql(
        CREATE, {"input": {"taskCode": "toy", "fields": {"text": "good grief", "label": "bad"}}}, author
    )
    example_id = created["createExample"]["example"]["id"]
    async with served.subscriber() as anonymous, served.subscriber(voter) as signed_in:
        rounds = asyncio.create_task(_collect(anonymous, ROUNDS, 1))
        votes = asyncio.create_task(_collect(signed_in, VALIDATED, 1))
        await _started(rounds, served.p.events, "roundChanged:toy")
        await _started(votes, served.p.events, "exampleValidated:toy")
        assert (await served.gql(VALIDATE, {"id": example_id}, voter))["validateExample"][
            "__typename"
        ] == "ValidationRecorded"
        assert (await served.gql(OPEN_ROUND, token=admin))["openNextRound"]["__typename"] == "RoundOpened"
        got_rounds, got_votes = await rounds, await votes
    assert got_rounds == [{"roundChanged": {"taskCode": "toy", "change": "OPENED", "round": {"number": 2}}}]
    vote = got_votes[0]["exampleValidated"]
    assert vote["label"] == "CORRECT" and vote["example"] == {
        "__typename": "RedactedExample",  # the author's example, to a voter
        "exampleId": example_id,
        "status": "CREATED",
        "votes": {"correct": 1},
    }


async def test_a_revoked_token_stops_a_running_subscription(served, monkeypatch):
    monkeypatch.setattr(served.p.settings, "subscription_reauth_s", 0.0)  # re-check the token at every event
    author, _ = await served.user("author3")
    reader, reader_id = await served.user("reader3")
    async with served.subscriber(reader) as session:
        seen: list[dict] = []

        async def read():
            async for result in session.subscribe(CREATED):
                seen.append(result)

        reading = asyncio.create_task(read())
        await _started(reading, served.p.events, "exampleCreated:toy")
        await served.gql(CREATE, {"input": {"taskCode": "toy", "fields": {"text": "one", "label": "bad"}}}, author)
        for _ in range(250):  # the first event arrives while the token is good
            if seen:
                break
            await asyncio.sleep(0.02)
        assert len(seen) == 1
        token_id = (await served.gql("{ me { apiTokens { nodes { id } } } }", token=reader))["me"]["apiTokens"][
            "nodes"
        ][0]["id"]
        await served.gql(f'mutation {{ revokeApiToken(input: {{id: "{token_id}"}}) {{ __typename }} }}', token=reader)
        await served.gql(CREATE, {"input": {"taskCode": "toy", "fields": {"text": "two", "label": "bad"}}}, author)
        with pytest.raises(TransportQueryError, match="revoked"):
            await asyncio.wait_for(reading, 10)
    assert len(seen) == 1


async def test_evaluation_progress_is_shown_to_those_who_can_see_the_model(served):
    p = served.p
    builder, builder_id = await served.user("builder1")
    stranger, _ = await served.user("stranger1")
    _, admin_id = await served.user("admin4", admin=True)
    admin = Actor(admin_id, "admin4", True)
    author, _ = await served.user("author4")
    for i in range(6):
        await served.gql(
            CREATE, {"input": {"taskCode": "toy", "fields": {"text": f"good {i}", "label": "good"}}}, author
        )
    async with p.db.session() as s:
        from sqlalchemy import select

        from dynaforge.db.models import Example

        ids = list(await s.scalars(select(Example.id)))
    for example_id in ids:
        await validation.validate(p, admin, example_id, "CORRECT")
    await datasets.build_from_round(p, admin, "toy", 1, splits=(("test", 1.0, DatasetAccess.SCORING),))
    model, queued = await submissions.submit_model(
        p,
        Actor(builder_id, "builder1", False),
        task_code="toy",
        name="private",
        backend="python",
        config={"callable": "toy_plugin:keyword_model"},
    )
    async with served.subscriber(stranger) as session:
        with pytest.raises(TransportQueryError, match=f"No model {model.id}"):
            await _collect(session, PROGRESS, 1, {"m": gid("Model", model.id)}, within=5)
    async with served.subscriber(builder) as session:
        first = queued[0]
        listening = asyncio.create_task(_collect(session, PROGRESS, 3, {"m": gid("Model", model.id)}))
        await _started(listening, p.events, f"evaluationProgress:{model.id}")
        p.settings.eval_chunk_size = 4
        runner = Runner(p.settings, p.plugins, db=p.db)
        runner.progress = publisher(p.events)
        assert await runner.run(first.id) == "DONE"
        got = [r["evaluationProgress"] for r in await listening]
    assert [(g["status"], g["progress"]) for g in got] == [
        ("RUNNING", 0.0),
        ("RUNNING", 0.5),
        ("RUNNING", 1.0),
    ]  # 6 items, chunks of 4
    assert {g["evaluationId"] for g in got} == {gid("Evaluation", first.id)} and got[0]["datasetName"] == "r1-test"


async def test_only_graphql_transport_ws_is_spoken(served):
    """The legacy graphql-ws protocol (which let clients skip connection_init in older servers) is closed with
    4406 before any operation runs."""
    url = served.base.replace("http", "ws") + "/graphql"
    with pytest.raises(websockets.exceptions.ConnectionClosedError) as closed:
        async with websockets.connect(url, subprotocols=["graphql-ws"]) as ws:
            await ws.send(
                json.dumps(
                    {
                        "type": "start",
                        "id": "1",
                        "payload": {"query": 'subscription { roundChanged(taskCode: "toy") { change } }'},
                    }
                )
            )
            await asyncio.wait_for(ws.recv(), 5)
    assert closed.value.rcvd.code == 4406


async def test_a_slow_subscriber_is_dropped_with_a_bounded_buffer():
    """The bus, directly: a subscriber that does not read gets at most ``buffer`` events queued, then its stream
    ends with a message saying it fell behind; other subscribers are unaffected and memory stays bounded."""
    from dynaforge.events import InMemoryEventBus, SubscriberTooSlow

    bus = InMemoryEventBus(buffer=4)
    slow, fast = bus.subscribe("t"), bus.subscribe("t")
    slow_first = asyncio.ensure_future(slow.__anext__())
    fast_seen = []

    async def read_fast():
        async for event in fast:
            fast_seen.append(event["n"])
            if len(fast_seen) == 10:
                return

    reading = asyncio.create_task(read_fast())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    for n in range(10):
        await bus.publish("t", {"n": n})
        await asyncio.sleep(0)
    await reading
    assert fast_seen == list(range(10))
    received = [(await slow_first)["n"]]
    with pytest.raises(SubscriberTooSlow, match="fell more than 4 events behind"):
        while True:
            received.append((await slow.__anext__())["n"])
    assert received == [0, 1, 2, 3, 4] and bus.subscriber_count("t") == 1  # the fast one
    await fast.aclose()
    assert bus.subscriber_count("t") == 0


async def test_every_path_shows_an_examples_gold_to_the_same_people(served):
    """One example, read as each role through the query, the subscription and a webhook: its author, the task's
    owners and admins see it whole; every other signed-in user sees it redacted (no label, no prediction, no
    `fooled`, no author) in exampleCreated, not at all in modelFooled, and not at all through example(id)."""
    from sqlalchemy import select

    from dynaforge.db.models import WebhookDelivery
    from dynaforge.services import tasks, webhooks

    p = served.p
    people = {
        name: await served.user(f"g{name}", admin=name == "admin") for name in ("author", "owner", "admin", "other")
    }
    await tasks.grant_ownership(p, Actor.system(), "toy", people["owner"][1])
    for name, (_, user_id) in people.items():  # a webhook each (deliveries are stored; none is sent here)
        actor = Actor(user_id, f"g{name}", name == "admin")
        await webhooks.create(p, actor, "toy", f"http://127.0.0.1:9/{name}", ["modelFooled", "exampleCreated"])
    query = "query($id: ID!) { example(id: $id) { ... on Example { fields prediction { label } } } }"
    created = gql(
        'subscription { exampleCreated(taskCode: "toy") { ... on Example { id fields prediction { label } fooled } '
        "... on RedactedExample { exampleId fields } } }"
    )
    async with (
        served.subscriber(people["author"][0]) as author,
        served.subscriber(people["owner"][0]) as owner,
        served.subscriber(people["admin"][0]) as admin,
        served.subscriber(people["other"][0]) as other,
    ):
        sessions = {"author": author, "owner": owner, "admin": admin}
        reading = {name: asyncio.create_task(_collect(s, FOOLED, 1)) for name, s in sessions.items()}
        reading["other"] = asyncio.create_task(_collect(other, created, 1))
        for task in reading.values():
            await _started(task, p.events, "modelFooled:toy")
        for _ in range(200):  # every subscription is listening before the example is made
            if p.events.subscriber_count("modelFooled:toy") == 3 and p.events.subscriber_count("exampleCreated:toy"):
                break
            await asyncio.sleep(0.02)
        made = await served.gql(
            CREATE,
            {"input": {"taskCode": "toy", "fields": {"text": "good grief", "label": "bad"}}},
            people["author"][0],
        )
        example_id = made["createExample"]["example"]["id"]
        events = {name: (await task)[0] for name, task in reading.items()}
    whole = {"text": "good grief", "label": "bad"}
    for name in ("author", "owner", "admin"):
        event = events[name]["modelFooled"]
        assert event["fields"] == whole and event["prediction"] == {"label": "good"} and event["fooled"], name
        read = (await served.gql(query, {"id": example_id}, people[name][0]))["example"]
        assert read == {"fields": whole, "prediction": {"label": "good"}}, name
    redacted = {"exampleId": example_id, "fields": {"text": "good grief"}}  # no prediction, no fooled at all
    assert events["other"]["exampleCreated"] == redacted
    refused = await served.http.post(
        "/graphql",
        json={"query": query, "variables": {"id": example_id}},
        headers={"Authorization": f"Bearer {people['other'][0]}"},
    )
    body = refused.json()
    assert body["data"]["example"] is None and body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    async with p.db.session() as s:
        bodies = {(d.webhook_id, d.event): json.loads(d.body)["data"] for d in await s.scalars(select(WebhookDelivery))}
    admin_actor = Actor(people["admin"][1], "gadmin", True)
    hooks = {h.user_id: h.id for h in await webhooks.list_webhooks(p, admin_actor, "toy")}
    for name, (_, user_id) in people.items():
        if name == "other":  # no modelFooled delivery; exampleCreated redacted
            assert (hooks[user_id], "modelFooled") not in bodies
            data = bodies[hooks[user_id], "exampleCreated"]
            assert data["fields"] == {"text": "good grief"} and data["prediction"] is None and "user_id" not in data
            assert data["fooled"] is None
        else:
            for event in ("modelFooled", "exampleCreated"):
                data = bodies[hooks[user_id], event]
                assert data["fields"] == whole and data["prediction"]["label"] == "good" and data["fooled"], name


async def test_subscriptions_are_capped_per_connection_and_per_user(served):
    p = served.p
    p.settings.subscriptions_per_connection = 2
    p.settings.subscriptions_per_user = 3
    token, user_id = await served.user("many1")

    async def first_event_or_error(session) -> str:
        try:
            async for _ in session.subscribe(ROUNDS):
                return "event"
        except TransportQueryError as exc:
            return exc.errors[0]["extensions"]["code"] + ": " + exc.errors[0]["message"]
        return "ended"

    async with served.subscriber(token) as one, served.subscriber(token) as two:
        running = [asyncio.create_task(first_event_or_error(one)) for _ in range(2)]
        for _ in range(200):
            if p.subscriptions.held(f"user:{user_id}") == 2:
                break
            await asyncio.sleep(0.02)
        third_on_one = await asyncio.wait_for(first_event_or_error(one), 10)
        assert third_on_one.startswith("RATE_LIMITED") and "this connection" in third_on_one
        running.append(asyncio.create_task(first_event_or_error(two)))  # the user's third
        for _ in range(200):
            if p.subscriptions.held(f"user:{user_id}") == 3:
                break
            await asyncio.sleep(0.02)
        fourth = await asyncio.wait_for(first_event_or_error(two), 10)
        assert fourth.startswith("RATE_LIMITED") and "at most 3 at once" in fourth
        await served.gql(OPEN_ROUND, token=(await served.user("admin9", admin=True))[0])
        assert await asyncio.wait_for(asyncio.gather(*running), 10) == ["event"] * 3
    for _ in range(200):  # every slot is given back when the subscriptions end
        if p.subscriptions.held(f"user:{user_id}") == 0:
            break
        await asyncio.sleep(0.02)
    assert p.subscriptions.held(f"user:{user_id}") == 0


async def test_a_task_hidden_since_ends_its_subscriptions_for_those_who_may_not_see_it(served):
    from dynaforge.services import tasks

    admin_token, admin_id = await served.user("admin5", admin=True)
    async with served.subscriber() as anonymous:

        async def until_refused() -> str:
            try:
                async for _ in anonymous.subscribe(ROUNDS):
                    return "event"
            except TransportQueryError as exc:
                return exc.errors[0]["extensions"]["code"]
            return "ended"

        listening = asyncio.create_task(until_refused())
        await _started(listening, served.p.events, "roundChanged:toy")
        await tasks.update_settings(served.p, Actor(admin_id, "admin5", True), "toy", {"hidden": True})
        await served.gql(OPEN_ROUND, token=admin_token)  # an event that the anonymous subscriber may not see now
        assert await asyncio.wait_for(listening, 10) == "NOT_FOUND"


# --------------------------------------------------------------------------- resuming modelFooled after a drop

RESUME = gql(
    'subscription($after: ID) { modelFooled(taskCode: "toy", after: $after) { id fields prediction { label } '
    "fooled status author { username } round { number } } }"
)


def _fooling(text: str) -> dict:
    """Fields that fool the toy task's keyword model (it reads 'good' and answers good)."""
    return {"text": f"good {text}", "label": "bad"}


async def _submit(p, actor: Actor, fields: dict) -> int:
    from dynaforge.services import examples

    return (await examples.submit(p, actor, task_code="toy", fields=fields)).example.id


def _resume(session, after: str, into: list[dict], count: int) -> asyncio.Task:
    """Resume modelFooled after the example ``after`` in the background, each event appended to ``into``, until
    ``count`` came."""

    async def read():
        async for result in session.subscribe(GraphQLRequest(RESUME.document, variable_values={"after": after})):
            into.append(result["modelFooled"])
            if len(into) == count:
                return

    return asyncio.create_task(read())


async def _until(reached, reading: list[asyncio.Task]) -> None:
    for _ in range(500):
        if reached() or any(task.done() for task in reading):
            break
        await asyncio.sleep(0.02)
    for task in reading:
        if task.done():
            task.result()  # a subscription that ended early says why
    assert reached(), "the replay did not arrive"


async def test_model_fooled_resumes_after_the_last_example_received(served, monkeypatch):
    """Examples that fooled the model while nobody listened come first, oldest first (read a page at a time), then
    live ones. Those that did not fool or were retracted are not replayed, and one stored after the bus listens but
    before the database is read comes once, not both ways."""
    from dynaforge.services import examples, subscriptions

    p = served.p
    monkeypatch.setattr(subscriptions, "REPLAY_PAGE", 2)
    token, user_id = await served.user("resumer1")
    actor = Actor(user_id, "resumer1", False)
    received = await _submit(p, actor, _fooling("received"))  # the last one the subscriber got before it dropped
    missed = [await _submit(p, actor, _fooling("one")), await _submit(p, actor, _fooling("two"))]
    await _submit(p, actor, {"text": "bad day", "label": "bad"})  # did not fool
    await examples.retract(p, actor, await _submit(p, actor, _fooling("withdrawn")))
    missed.append(await _submit(p, actor, _fooling("three")))

    read_page = examples.fooled_after

    async def racing(*args, **kwargs):
        if len(missed) == 3:  # the first page: one more is stored (and announced) as the database is read
            missed.append(await _submit(p, actor, _fooling("racing")))
        return await read_page(*args, **kwargs)

    monkeypatch.setattr(examples, "fooled_after", racing)
    got: list[dict] = []
    async with served.subscriber(token) as session:
        reading = _resume(session, gid("Example", received), got, 5)
        await _until(lambda: len(got) == 4, [reading])
        live = await _submit(p, actor, _fooling("live"))
        await asyncio.wait_for(reading, 10)
    assert [g["id"] for g in got] == [gid("Example", i) for i in (*missed, live)]  # the racing one once
    assert all(g["fooled"] and g["fields"]["label"] == "bad" for g in got)  # the author sees them whole


async def test_replayed_examples_follow_the_live_rules(served):
    """The replay follows the live stream's rules: whole to the author, the task's owners and admins; to any other
    signed-in user none of someone else's examples, replayed or live (only their own). ``after`` may name an
    example the subscriber cannot read: it is only a position."""
    p = served.p
    author, author_id = await served.user("resumer2")
    reader, reader_id = await served.user("reader2")
    _, admin_id = await served.user("admin2", admin=True)
    actor = Actor(author_id, "resumer2", False)
    received = gid("Example", await _submit(p, actor, {"text": "bad day", "label": "bad"}))
    await _submit(p, actor, _fooling("grief"))
    await validation.validate(p, Actor(admin_id, "admin2", True), await _submit(p, actor, _fooling("mood")), "CORRECT")
    mine: list[dict] = []
    theirs: list[dict] = []
    async with served.subscriber(author) as whole, served.subscriber(reader) as other:
        reading = [_resume(whole, received, mine, 3), _resume(other, received, theirs, 1)]
        await _until(lambda: len(mine) == 2, reading)
        await _submit(p, actor, _fooling("grief"))  # live, with the same fields as the first one replayed
        await _until(lambda: len(mine) == 3, reading)
        own = await _submit(p, Actor(reader_id, "reader2", False), _fooling("riddance"))
        await asyncio.wait_for(asyncio.gather(*reading), 10)
    # The reader's first event is their own example: none of the author's three came before it.
    assert theirs == [
        {
            "id": gid("Example", own),
            "fields": _fooling("riddance"),
            "prediction": {"label": "good"},
            "fooled": True,
            "status": "CREATED",
            "author": {"username": "reader2"},
            "round": {"number": 1},
        }
    ]
    first = {
        "fields": _fooling("grief"),
        "prediction": {"label": "good"},
        "fooled": True,
        "status": "CREATED",
        "author": {"username": "resumer2"},
        "round": {"number": 1},
    }
    assert [{k: v for k, v in e.items() if k != "id"} for e in mine] == [
        first,
        {**first, "fields": _fooling("mood"), "status": "ACCEPTED"},  # as it is now
        first,  # replayed and live alike
    ]


async def test_a_bad_after_is_refused_and_a_hidden_task_replays_nothing(served):
    from dynaforge.services import tasks

    p = served.p
    token, user_id = await served.user("resumer3")
    async with served.subscriber(token) as session:
        for bad in ("42", gid("Model", 1), gid("Example", "x"), gid("Example", 0)):
            with pytest.raises(TransportQueryError) as refused:
                await _collect(session, RESUME, 1, {"after": bad}, within=5)
            error = refused.value.errors[0]
            assert error["extensions"]["code"] == "INVALID_INPUT", error
            assert error["extensions"]["fieldErrors"][0]["field"] == ["after"]
            assert "is not the id of an Example" in error["extensions"]["fieldErrors"][0]["message"]
    async with served.subscriber() as anonymous:
        with pytest.raises(TransportQueryError, match="signed-in users"):
            await _collect(anonymous, RESUME, 1, {"after": gid("Example", 1)}, within=5)
    await _submit(p, Actor(user_id, "resumer3", False), _fooling("hidden"))
    _, admin_id = await served.user("admin3", admin=True)
    await tasks.update_settings(p, Actor(admin_id, "admin3", True), "toy", {"hidden": True})
    reader, _ = await served.user("reader3b")
    async with served.subscriber(reader) as session:
        with pytest.raises(TransportQueryError, match="No task 'toy'"):
            await _collect(session, RESUME, 1, {"after": gid("Example", 1)}, within=5)


class _Switchable(InferenceClient):
    """The platform's inference client; while ``down`` every prediction fails, as if the worker were restarting."""

    def __init__(self, inner: InferenceClient):
        self.inner, self.down = inner, False

    async def predict(self, spec, inputs):
        if self.down:
            raise InferenceError("the model worker is restarting")
        return await self.inner.predict(spec, inputs)


async def test_a_pending_example_that_fools_later_arrives_live_after_the_replay(served, monkeypatch):
    """An example with a smaller id than those replayed, still pending when the database was read, fools once its
    prediction comes: its live event is sent although its id is below the replay's last."""
    from dynaforge.services import examples

    p = served.p
    switch = _Switchable(p.inference)
    monkeypatch.setattr(p, "inference", switch)
    token, user_id = await served.user("resumer4")
    actor = Actor(user_id, "resumer4", False)
    received = await _submit(p, actor, _fooling("received"))
    switch.down = True
    pending = await _submit(p, actor, _fooling("pending"))
    switch.down = False
    later = await _submit(p, actor, _fooling("later"))
    got: list[dict] = []
    async with served.subscriber(token) as session:
        reading = _resume(session, gid("Example", received), got, 2)
        await _until(lambda: len(got) == 1, [reading])
        assert await examples.predict_pending(p) == 1
        await asyncio.wait_for(reading, 10)
    assert [(g["id"], g["fooled"]) for g in got] == [(gid("Example", later), True), (gid("Example", pending), True)]


async def test_an_example_that_fooled_late_while_the_subscriber_was_away_is_replayed(served, monkeypatch):
    """An example stored before the last one received, still pending then, fools while the subscriber is away: the
    replay sends it, in the order the examples fooled. Resuming after that late one (the last received) sends only
    what fooled after it, not the examples stored after it that came before it."""
    from dynaforge.services import examples

    p = served.p
    switch = _Switchable(p.inference)
    monkeypatch.setattr(p, "inference", switch)
    token, user_id = await served.user("resumer5")
    actor = Actor(user_id, "resumer5", False)
    switch.down = True
    late = await _submit(p, actor, _fooling("late"))
    switch.down = False
    received = await _submit(p, actor, _fooling("received"))  # the last one the subscriber got before it dropped
    await asyncio.sleep(0.01)  # the clock moves on: the late one fools after the received one was stored
    assert await examples.predict_pending(p) == 1  # the late one fools while nobody listens
    after = await _submit(p, actor, _fooling("after"))
    got: list[dict] = []
    async with served.subscriber(token) as session:
        reading = _resume(session, gid("Example", received), got, 2)
        await asyncio.wait_for(reading, 10)
    assert [g["id"] for g in got] == [gid("Example", late), gid("Example", after)]
    again: list[dict] = []
    async with served.subscriber(token) as session:
        reading = _resume(session, gid("Example", late), again, 2)
        await _until(lambda: len(again) == 1, [reading])
        live = await _submit(p, actor, _fooling("live"))
        await asyncio.wait_for(reading, 10)
    assert [g["id"] for g in again] == [gid("Example", after), gid("Example", live)]  # not the received one again


async def test_resumed_skips_the_live_copies_of_replayed_examples_only():
    """The merge on its own: a live event of an example already replayed is skipped, once; any other passes, whatever
    its id."""
    from dynaforge.services.subscriptions import resumed

    async def stream(ids):
        for i in ids:
            yield {"id": i}

    merged = [e["id"] async for e in resumed(stream([5, 7, 9]), stream([7, 3, 11, 9, 8]))]
    assert merged == [5, 7, 9, 3, 11, 8]


async def test_a_dropped_subscriber_gets_a_code_that_says_subscribe_again(served):
    """When the bus drops a subscriber (it fell behind, Redis went away, the server shuts down) the error carries
    SERVICE_UNAVAILABLE, which clients read as "subscribe again" (modelFooled resumes with `after`)."""
    reader, _ = await served.user("dropped1")
    async with served.subscriber(reader) as session:
        reading = asyncio.create_task(_collect(session, FOOLED, 1))
        await _started(reading, served.p.events, "modelFooled:toy")
        await served.p.events.close()
        with pytest.raises(TransportQueryError) as caught:
            await reading
    (error,) = caught.value.errors
    assert error["extensions"]["code"] == "SERVICE_UNAVAILABLE" and "subscribe again" in error["message"]
