"""Live events across processes through Redis pub/sub, and what happens when Redis goes away.

* Two real ``dynaforge serve`` processes share a database and a Redis: an example written on one reaches a websocket
  subscriber of the other, and so does a round opened there (SQLite and PostgreSQL).
* A Redis server of the test's own (``redis-server`` on a free loopback port) is stopped and started again: the event
  bus and the job broker fail with errors that say what happened and what to do, nothing written is lost, and both
  work again once Redis is back.
"""

from __future__ import annotations

import asyncio
import sys
import uuid

import httpx
import pytest
from gql import Client, gql
from gql.transport.websockets import WebsocketsTransport
from sqlalchemy import select
from support import REDIS_URL, PrivateRedis, cli, database, eventually, serve, service_missing, toy_redis_env

pytestmark = pytest.mark.e2e

CREATED = gql(
    'subscription { exampleCreated(taskCode: "toy") { ... on Example { id fields fooled prediction { fields label '
    "probabilities { label } } } ... on RedactedExample { exampleId fields } } }"
)
ROUNDS = gql('subscription { roundChanged(taskCode: "toy") { change round { number } } }')
CREATE = """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename
  ... on ExampleCreated { example { id fooled } } ... on Error { message } } }"""


def _redis_reachable(url: str) -> None:
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except Exception as exc:  # noqa: BLE001 - any failure means no usable server
        service_missing("Redis", f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
async def test_an_event_raised_on_one_server_reaches_a_subscriber_of_another(kind, tmp_path):
    _redis_reachable(REDIS_URL)
    with database(kind, tmp_path) as database_url:
        env = toy_redis_env(tmp_path, database_url, f"dynaforge-test-{uuid.uuid4().hex[:8]}:")
        cli(env, tmp_path, "db", "upgrade")
        for user, admin in (("operator", True), ("writer", False), ("watcher", False)):
            cli(
                env,
                tmp_path,
                "users",
                "create",
                "--username",
                user,
                "--email",
                f"{user}@example.org",
                "--password",
                "long enough pw",
                *(["--admin"] if admin else []),
            )
        tokens = {
            u: cli(env, tmp_path, "tokens", "create", "--username", u).stdout.strip().splitlines()[-1]
            for u in ("operator", "writer", "watcher")
        }
        with serve(env, tmp_path, "a") as a, serve(env, tmp_path, "b") as b:
            ws = b.replace("http", "ws") + "/graphql"

            def session(token: str | None):
                init = {"authorization": f"Bearer {token}"} if token else {}
                return Client(
                    transport=WebsocketsTransport(
                        url=ws, init_payload=init, subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL]
                    )
                )

            async with (
                session(tokens["watcher"]) as watcher,
                session(None) as anonymous,
                httpx.AsyncClient(base_url=a, timeout=30) as http,
            ):
                created_events, rounds = [], []

                async def read(s, document, into):
                    async for result in s.subscribe(document):
                        into.append(result)
                        return

                readers = [
                    asyncio.create_task(read(watcher, CREATED, created_events)),
                    asyncio.create_task(read(anonymous, ROUNDS, rounds)),
                ]
                await asyncio.sleep(1.0)  # both subscriptions registered on B (and B's pattern subscribed)
                created = (
                    await http.post(
                        "/graphql",
                        headers={"Authorization": f"Bearer {tokens['writer']}"},
                        json={
                            "query": CREATE,
                            "variables": {
                                "input": {"taskCode": "toy", "fields": {"text": "good grief", "label": "bad"}}
                            },
                        },
                    )
                ).json()
                example = created["data"]["createExample"]["example"]
                assert example["fooled"] is True
                opened = (
                    await http.post(
                        "/graphql",
                        headers={"Authorization": f"Bearer {tokens['operator']}"},
                        json={"query": 'mutation { openNextRound(input: {taskCode: "toy"}) { __typename } }'},
                    )
                ).json()
                assert opened["data"]["openNextRound"]["__typename"] == "RoundOpened"
                await asyncio.wait_for(asyncio.gather(*readers), timeout=15)
    assert created_events == [
        {
            "exampleCreated": {
                # The subscriber is not the author nor an owner: the example comes redacted (services.visibility).
                "exampleId": example["id"],
                "fields": {"text": "good grief"},
            }
        }
    ]
    assert rounds == [{"roundChanged": {"change": "OPENED", "round": {"number": 2}}}]


# --------------------------------------------------------------------------- Redis stopped and started again


@pytest.fixture
def private_redis(tmp_path):
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def test_the_event_bus_says_when_redis_is_down_and_recovers(private_redis, caplog):
    from dynaforge.events import EventBusUnavailable, RedisEventBus

    bus = RedisEventBus(private_redis.url, prefix="t:")
    await bus.start()
    try:
        stream = bus.subscribe("news")
        first = asyncio.ensure_future(stream.__anext__())
        for _ in range(100):
            if bus.subscriber_count("news"):
                break
            await asyncio.sleep(0.02)
        await bus.publish("news", {"n": 1})
        assert await asyncio.wait_for(first, 5) == {"n": 1}

        private_redis.stop()
        with pytest.raises(
            EventBusUnavailable,
            match=rf"Redis at redis://127.0.0.1:{private_redis.port}/0\) is unreachable.*subscribe again",
        ):
            await asyncio.wait_for(stream.__anext__(), 10)
        await bus.publish("news", {"n": 2})  # the caller's write is committed: publishing logs, never raises
        assert bus.failed_publishes == 1 and "was not published" in caplog.text
        with pytest.raises(EventBusUnavailable, match="unreachable"):
            await bus.subscribe("news").__anext__()

        private_redis.start()

        async def delivers():
            again = bus.subscribe("news")
            pending = asyncio.ensure_future(again.__anext__())
            await asyncio.sleep(0.2)
            await bus.publish("news", {"n": 3})
            try:
                return await asyncio.wait_for(pending, 2)
            finally:
                await again.aclose()

        assert await eventually(delivers, within=15, what="an event delivered through the restarted Redis") == {"n": 3}
    finally:
        await bus.close()


async def test_jobs_say_when_redis_is_down_and_queued_work_is_sent_when_it_is_back(
    live_platform, private_redis, caplog
):
    """A submission while the broker is down is stored with its evaluations QUEUED and the error logged; the
    broker's error says what happens next; a restart's requeue sends them once Redis is back."""
    from dynaforge.db.models import DatasetAccess, Evaluation, EvaluationStatus
    from dynaforge.jobs import BrokerUnavailable, Jobs
    from dynaforge.services import auth, datasets, examples, submissions, validation
    from dynaforge.services.actor import Actor

    p = live_platform
    p.settings.broker_url = private_redis.url
    admin_user = await auth.create_user(
        p, Actor.system(), username="admin9", email="admin9@example.org", password="long enough pw", is_admin=True
    )
    admin = Actor(admin_user.id, "admin9", True)
    author_user = await auth.create_user(
        p, Actor.system(), username="author9", email="author9@example.org", password="long enough pw"
    )
    author = Actor(author_user.id, "author9")
    for i in range(3):
        outcome = await examples.submit(p, author, task_code="toy", fields={"text": f"good {i}", "label": "good"})
        await validation.validate(p, admin, outcome.example.id, "CORRECT")  # nobody validates their own
    await datasets.build_from_round(p, admin, "toy", 1, splits=(("test", 1.0, DatasetAccess.SCORING),))
    p.jobs = Jobs(p.settings)
    try:
        private_redis.stop()
        with pytest.raises(BrokerUnavailable, match="unreachable.*stay queued"):
            p.jobs.enqueue([12345])
        model, queued = await submissions.submit_model(
            p,
            admin,
            task_code="toy",
            name="while-down",
            backend="python",
            config={"callable": "toy_plugin:keyword_model"},
        )
        assert queued and "stay queued" in caplog.text
        async with p.db.session() as s:
            statuses = set(await s.scalars(select(Evaluation.status).where(Evaluation.model_id == model.id)))
        assert statuses == {EvaluationStatus.QUEUED}

        private_redis.start()
        assert await submissions.requeue_unfinished(p, running_too=False) == len(queued)
        import redis

        sent = redis.Redis.from_url(private_redis.url).llen("dramatiq:evaluations")
        assert sent == len(queued)
    finally:
        p.jobs.stop()
        p.jobs = None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
