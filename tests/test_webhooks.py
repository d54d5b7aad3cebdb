"""Webhooks: registration rules, Standard Webhooks signatures, deliveries through the job system with retries and
backoff, and the delivery log. A receiver runs on loopback (uvicorn, in this process); the jobs run on dramatiq's
StubBroker with the in-process worker, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import dramatiq
import httpx
import pytest
from sqlalchemy import select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from support import GraphQLClient, gid, make_user, serve_in_loop

from dynaforge.api.node import parse_id
from dynaforge.app import create_app
from dynaforge.db.models import WebhookDelivery
from dynaforge.errors import InvalidInput, NotAuthenticated, NotFound, QuotaExceeded
from dynaforge.jobs import QUEUE, Jobs
from dynaforge.services import auth, examples, tasks, webhooks
from dynaforge.services.actor import Actor


def test_signatures_match_the_standard_webhooks_reference_vector():
    secret, message_id, timestamp, body = (
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        '{"test": 2432232314}',
    )
    signature = webhooks.sign(secret, message_id, timestamp, body)
    assert signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    headers = {"webhook-id": message_id, "webhook-timestamp": str(timestamp), "webhook-signature": signature}
    assert webhooks.verify(secret, headers, body, now=timestamp + 10)
    assert not webhooks.verify(secret, headers, body + " ", now=timestamp + 10)  # the body was changed
    assert not webhooks.verify(secret, headers, body, now=timestamp + 3600)  # replayed an hour later


async def test_urls_are_checked_and_internal_hosts_refused_in_every_environment():
    from dynaforge.settings import Settings

    closed = Settings(environment="test", outbound_allow="")  # no allowlist: development and test alike
    allowed = Settings(environment="production", secret_key="x" * 40, outbound_allow="10.0.0.0/8,127.0.0.1")
    pinned = await webhooks.check_url(allowed, "http://127.0.0.1:9/hook")  # an operator's allowlisted receiver
    assert pinned.pinned_url == "http://127.0.0.1:9/hook"
    for url, rule in [
        ("ftp://example.org/x", "format"),
        ("/relative", "format"),
        ("https://user:pw@example.org/x", "credentials"),
    ]:
        with pytest.raises(InvalidInput) as caught:
            await webhooks.check_url(closed, url)
        assert caught.value.field_errors[0].rule == rule
    for url in (
        "http://127.0.0.1/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]:8080/x",
        "http://localhost/x",
        "http://2130706433/x",
    ):
        with pytest.raises(InvalidInput, match="loopback, private, link-local") as caught:
            await webhooks.check_url(closed, url)
        assert caught.value.field_errors[0].rule == "internal"
    assert (await webhooks.check_url(allowed, "http://10.1.2.3/hook")).address == "10.1.2.3"


# --------------------------------------------------------------------------- a receiver and the jobs


class Receiver:
    """Records every POST; answers ``failures`` times with 500 (per path), then 204."""

    def __init__(self):
        self.calls: list[tuple[str, dict[str, str], str]] = []
        self.failures: dict[str, int] = {}

        async def hook(request: Request):
            body = (await request.body()).decode()
            self.calls.append((request.url.path, dict(request.headers), body))
            left = self.failures.get(request.url.path, 0)
            if left:
                self.failures[request.url.path] = left - 1
                return PlainTextResponse("not now", status_code=500)
            return PlainTextResponse("", status_code=204)

        self.app = Starlette(routes=[Route("/{name}", hook, methods=["POST"])])
        self.base = ""  # set once it serves

    def on(self, path: str) -> list[tuple[dict[str, str], str]]:
        return [(h, b) for p, h, b in self.calls if p == path]


@pytest.fixture
async def world(live_platform):
    p = live_platform
    p.settings.examples_per_minute = 1000
    p.settings.webhook_min_backoff_ms = 50
    p.settings.webhook_max_backoff_ms = 200
    p.settings.webhook_max_attempts = 3
    receiver = Receiver()
    async with serve_in_loop(receiver.app) as receiver.base:
        p.jobs = Jobs(p.settings)
        p.jobs.start_worker()
        users = {}
        for name, admin in (("owner1", False), ("author1", False), ("watcher1", False), ("admin1", True)):
            users[name] = await make_user(p, name, admin)
        await tasks.grant_ownership(p, Actor.system(), "toy", users["owner1"].user_id)
        try:
            yield p, receiver, users
        finally:
            p.jobs.stop()
            p.jobs = None


async def _deliveries(p, webhook_id: int, until, within: float = 15.0) -> list[WebhookDelivery]:
    deadline = time.monotonic() + within
    while True:
        async with p.db.session() as s:
            rows = list(
                await s.scalars(
                    select(WebhookDelivery).where(WebhookDelivery.webhook_id == webhook_id).order_by(WebhookDelivery.id)
                )
            )
        if until(rows) or time.monotonic() > deadline:
            return rows
        await asyncio.sleep(0.05)


async def test_an_owner_webhook_gets_signed_events_with_the_author(world):
    p, receiver, users = world
    made = await webhooks.create(p, users["owner1"], "toy", f"{receiver.base}/owner", ["modelFooled", "roundChanged"])
    assert made.secret.startswith("whsec_")
    fooling = await examples.submit(p, users["author1"], task_code="toy", fields={"text": "good grief", "label": "bad"})
    await examples.submit(
        p, users["author1"], task_code="toy", fields={"text": "bad day", "label": "bad"}
    )  # not fooled
    rows = await _deliveries(p, made.webhook.id, lambda rows: rows and rows[0].status != "PENDING")
    assert [(r.event, r.status, r.attempts, r.response_status) for r in rows] == [("modelFooled", "DELIVERED", 1, 204)]
    [(headers, body)] = receiver.on("/owner")
    assert webhooks.verify(made.secret, headers, body)
    assert headers["webhook-id"] == rows[0].message_id and headers["content-type"] == "application/json"
    sent = json.loads(body)
    assert sent["type"] == "modelFooled" and sent["data"]["id"] == fooling.example.id
    assert sent["data"]["user_id"] == users["author1"].user_id and sent["data"]["fields"]["text"] == "good grief"
    # the secret is derived, not stored: a rotated one signs from then on and the old one no longer verifies
    rotated = await webhooks.rotate_secret(p, users["owner1"], made.webhook.id)
    assert rotated.secret != made.secret
    await tasks.open_next_round(p, users["owner1"], "toy")
    rows = await _deliveries(p, made.webhook.id, lambda rows: len(rows) == 2 and rows[1].status != "PENDING")
    headers, body = receiver.on("/owner")[-1]
    assert json.loads(body)["type"] == "roundChanged" and json.loads(body)["data"]["number"] == 2
    assert webhooks.verify(rotated.secret, headers, body) and not webhooks.verify(made.secret, headers, body)


async def test_a_delivery_does_not_wait_behind_busy_evaluations(world):
    """Every evaluation thread is busy (as when a new scoring set queues an evaluation per model): a webhook
    delivery still goes out at once, on the worker of its own."""
    p, receiver, users = world
    release = threading.Event()
    started = threading.Semaphore(0)

    @dramatiq.actor(broker=p.jobs.broker, queue_name=QUEUE, actor_name="test.busy_evaluation", max_retries=0)
    def busy() -> None:
        started.release()
        release.wait(30)

    try:
        for _ in range(p.jobs.worker_threads):
            busy.send()
        for _ in range(p.jobs.worker_threads):  # every evaluation thread holds one
            assert await asyncio.to_thread(started.acquire, True, 15)
        made = await webhooks.create(p, users["owner1"], "toy", f"{receiver.base}/busy", ["modelFooled"])
        await examples.submit(p, users["author1"], task_code="toy", fields={"text": "good news", "label": "bad"})
        rows = await _deliveries(p, made.webhook.id, lambda rows: rows and rows[0].status != "PENDING")
        assert [(r.status, r.response_status) for r in rows] == [("DELIVERED", 204)]
        assert not release.is_set()  # delivered while the evaluations still ran
    finally:
        release.set()


async def test_failed_deliveries_are_retried_with_backoff_then_marked_failed(world):
    p, receiver, users = world
    flaky = await webhooks.create(p, users["watcher1"], "toy", f"{receiver.base}/flaky", ["exampleCreated"])
    dead = await webhooks.create(p, users["watcher1"], "toy", f"{receiver.base}/dead", ["exampleCreated"])
    receiver.failures = {"/flaky": 2, "/dead": 99}
    example = await examples.submit(p, users["author1"], task_code="toy", fields={"text": "plain", "label": "bad"})
    done = lambda rows: rows and rows[0].status != "PENDING"  # noqa: E731
    [ok] = await _deliveries(p, flaky.webhook.id, done)
    [failed] = await _deliveries(p, dead.webhook.id, done)
    assert (ok.status, ok.attempts, ok.response_status, ok.error) == ("DELIVERED", 3, 204, None)
    assert (failed.status, failed.attempts, failed.response_status) == ("FAILED", 3, 500)
    assert "HTTP 500" in failed.error
    calls = receiver.on("/flaky")
    assert len(calls) == 3 and len({h["webhook-id"] for h, _ in calls}) == 1  # the same message each time
    assert len({h["webhook-timestamp"] for h, _ in calls}) >= 1 and all(
        webhooks.verify(flaky.secret, h, b) for h, b in calls
    )
    assert len(receiver.on("/dead")) == 3
    body = json.loads(calls[0][1])
    assert body["data"]["id"] == example.example.id and "user_id" not in body["data"]  # not an owner's webhook


async def test_a_delivery_checks_its_address_again_when_sent(world):
    """Registered while its network was allowlisted; the operator then closes it: the deliveries fail without a
    request, and the log says why."""
    p, receiver, users = world
    hook = await webhooks.create(p, users["watcher1"], "toy", f"{receiver.base}/closed", ["exampleCreated"])
    p.settings.outbound_allow = ""
    await examples.submit(p, users["author1"], task_code="toy", fields={"text": "plain", "label": "bad"})
    [failed] = await _deliveries(p, hook.webhook.id, lambda rows: rows and rows[0].status != "PENDING")
    assert failed.status == "FAILED" and failed.response_status is None
    assert "internal address" in failed.error and "OUTBOUND_ALLOW" in failed.error
    assert receiver.on("/closed") == []


async def test_registration_rules(world):
    p, receiver, users = world
    with pytest.raises(NotAuthenticated):
        await webhooks.create(p, Actor.anonymous(), "toy", f"{receiver.base}/x", ["modelFooled"])
    with pytest.raises(InvalidInput, match="choose one or more"):
        await webhooks.create(p, users["watcher1"], "toy", f"{receiver.base}/x", ["modelFooled", "everything"])
    with pytest.raises(NotFound):
        await webhooks.create(p, users["watcher1"], "no-such-task", f"{receiver.base}/x", ["modelFooled"])
    mine = [
        await webhooks.create(p, users["watcher1"], "toy", f"{receiver.base}/w{i}", ["modelFooled"])
        for i in range(webhooks.MAX_PER_USER_AND_TASK)
    ]
    with pytest.raises(QuotaExceeded, match="delete one first"):
        await webhooks.create(p, users["watcher1"], "toy", f"{receiver.base}/more", ["modelFooled"])
    owners = await webhooks.create(p, users["owner1"], "toy", f"{receiver.base}/o", ["exampleCreated"])
    assert [w.id for w in await webhooks.list_webhooks(p, users["watcher1"], "toy")] == [m.webhook.id for m in mine]
    assert len(await webhooks.list_webhooks(p, users["owner1"], "toy")) == len(mine) + 1  # owners see all
    with pytest.raises(NotFound):
        await webhooks.delete(p, users["author1"], owners.webhook.id)  # someone else's
    with pytest.raises(NotFound):
        await webhooks.rotate_secret(p, users["watcher1"], owners.webhook.id)
    assert await webhooks.delete(p, users["owner1"], mine[0].webhook.id) == mine[0].webhook.id  # owners may
    assert len(await webhooks.list_webhooks(p, users["watcher1"], "toy")) == len(mine) - 1


CREATE_HOOK = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { __typename
  ... on WebhookSecret { secret webhook { id url events } } ... on Error { message } } }"""
LIST_HOOKS = """query { webhooks(taskCode: "toy") { id events deliveries(first: 5) { nodes { id event status attempts
  responseStatus } } } }"""


async def test_graphql_webhooks_and_their_delivery_log(world):
    p, receiver, users = world
    _, token = await auth.create_token(p, users["watcher1"], name="t")
    app = create_app(platform=p, sync_tasks=False, run_jobs=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        gql = GraphQLClient(http)
        made = (
            await gql(
                CREATE_HOOK,
                {"input": {"taskCode": "toy", "url": f"{receiver.base}/g", "events": ["EXAMPLE_CREATED"]}},
                token=token,
            )
        )["createWebhook"]
        assert made["__typename"] == "WebhookSecret" and made["secret"].startswith("whsec_")
        refused = (
            await gql(
                CREATE_HOOK,
                {"input": {"taskCode": "toy", "url": "gopher://x", "events": ["EXAMPLE_CREATED"]}},
                token=token,
            )
        )["createWebhook"]
        assert refused["__typename"] == "InvalidInput"
        await examples.submit(p, users["author1"], task_code="toy", fields={"text": "plain", "label": "bad"})
        await _deliveries(
            p, parse_id(made["webhook"]["id"], "id", "Webhook"), lambda rows: rows and rows[0].status == "DELIVERED"
        )
        listed = (await gql(LIST_HOOKS, token=token))["webhooks"]
        assert listed == [
            {
                "id": made["webhook"]["id"],
                "events": ["EXAMPLE_CREATED"],
                "deliveries": {
                    "nodes": [
                        {
                            "id": gid("WebhookDelivery", receiver.on("/g")[0][0]["webhook-id"]),
                            "event": "EXAMPLE_CREATED",
                            "status": "DELIVERED",
                            "attempts": 1,
                            "responseStatus": 204,
                        }
                    ]
                },
            }
        ]
        anonymous = await gql(LIST_HOOKS, token=None, expect_errors=True)
        assert anonymous["errors"][0]["extensions"]["code"] == "NOT_AUTHENTICATED"


async def test_deliveries_follow_who_may_see_the_task_now(world):
    """A hidden task's events reach only its owners' and admins' webhooks; a revoked owner's webhook stops getting
    authors; only the registrant rotates a secret."""
    p, receiver, users = world
    watcher = await webhooks.create(p, users["watcher1"], "toy", f"{receiver.base}/watcher", ["exampleCreated"])
    owner = await webhooks.create(p, users["owner1"], "toy", f"{receiver.base}/owner", ["exampleCreated"])
    with pytest.raises(NotFound):
        await webhooks.rotate_secret(p, users["owner1"], watcher.webhook.id)  # an owner may delete it, not re-key it
    await tasks.update_settings(p, users["owner1"], "toy", {"hidden": True})
    await examples.submit(p, users["owner1"], task_code="toy", fields={"text": "secret one", "label": "bad"})
    await _deliveries(p, owner.webhook.id, lambda rows: rows and rows[0].status == "DELIVERED")
    assert await _deliveries(p, watcher.webhook.id, lambda rows: bool(rows), within=0.5) == []
    assert "user_id" in json.loads(receiver.on("/owner")[0][1])["data"]
    await tasks.update_settings(p, users["owner1"], "toy", {"hidden": False})
    await tasks.revoke_ownership(p, users["admin1"], "toy", users["owner1"].user_id)
    await examples.submit(p, users["author1"], task_code="toy", fields={"text": "open two", "label": "bad"})
    await _deliveries(p, owner.webhook.id, lambda rows: len(rows) == 2 and rows[1].status == "DELIVERED")
    await _deliveries(p, watcher.webhook.id, lambda rows: rows and rows[0].status == "DELIVERED")
    assert "user_id" not in json.loads(receiver.on("/owner")[1][1])["data"]
    assert len(receiver.on("/watcher")) == 1
