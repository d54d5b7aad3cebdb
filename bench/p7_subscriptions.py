"""P7: a modelFooled event reaches 100 websocket subscribers, p95 ≤ 50 ms after commit.

What it measures: 100 graphql-transport-ws connections to the served ``/graphql`` (the ``websockets`` client in
this process, each signed in with an annotator's token in ``connection_init``; the annotators are made owners of
the task for the run, since a modelFooled event of someone else's example reaches only its author, the task's owners
and admins) subscribe to
``modelFooled(taskCode: "sentiment") { id createdAt }``. Examples that fool the model are then written one at a time
over HTTP; for each, every subscriber records the wall-clock time its event arrived. The latency of one delivery is
that time minus the example's ``createdAt``, which the server stamps after the model's prediction and before the
insert and commit: so each figure is the commit plus the fan-out, never less than the time after commit (the
target's measure), and server and client share the machine's clock.

Which statements fool the model is learnt first: positive statements of ``STATEMENTS`` labelled negative (and the
reverse) are sent once, and the ones answered ``fooled`` are used. A warm-up event must reach all 100 subscribers
before measuring. Each measured event waits until every subscriber has it (or 5 s, counted as missing).

Target (absolute, there is no in-run baseline for a fan-out): p95 over all deliveries ≤ 50 ms, and none missing.
Printed: p50, p95, p99 and max, deliveries, and how many were missing.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime

import websockets

from bench.common import STATEMENTS, TASK, Context, Result, graphql, percentile

ID = "P7"
SUBSCRIBERS = 100
EVENTS = 20
P95_TARGET_MS = 50.0
DELIVERY_TIMEOUT_S = 5.0
SUBSCRIPTION = f'subscription {{ modelFooled(taskCode: "{TASK}") {{ id createdAt }} }}'
CREATE = """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename
  ... on ExampleCreated { example { id fooled } } } }"""


class Subscriber:
    def __init__(self, url: str, token: str):
        self.url, self.token = url, token
        self.arrivals: dict[str, float] = {}  # example id -> wall-clock arrival
        self.created: dict[str, float] = {}
        self.ws = None
        self.reader: asyncio.Task | None = None

    async def open(self) -> None:
        self.ws = await websockets.connect(self.url, subprotocols=["graphql-transport-ws"], max_queue=None)
        await self.ws.send(
            json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {self.token}"}})
        )
        ack = json.loads(await asyncio.wait_for(self.ws.recv(), 10))
        if ack.get("type") != "connection_ack":
            raise RuntimeError(f"no connection_ack: {ack}")
        await self.ws.send(json.dumps({"type": "subscribe", "id": "1", "payload": {"query": SUBSCRIPTION}}))
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for raw in self.ws:
            arrived = time.time()
            message = json.loads(raw)
            if message.get("type") == "next":
                data = message["payload"].get("data") or {}
                event = data.get("modelFooled")
                if event:
                    self.arrivals[event["id"]] = arrived
                    self.created[event["id"]] = datetime.fromisoformat(event["createdAt"]).timestamp()
                else:
                    raise RuntimeError(f"subscription error: {message['payload']}")
            elif message.get("type") == "ping":
                await self.ws.send(json.dumps({"type": "pong"}))

    async def close(self) -> None:
        if self.reader is not None:
            self.reader.cancel()
        if self.ws is not None:
            await self.ws.close()


async def _fooling_inputs(ctx: Context, token: str) -> list[dict[str, str]]:
    flip = {"positive": "negative", "negative": "positive"}
    found = []
    for statement, label in STATEMENTS:
        if label not in flip:
            continue
        fields = {"statement": statement, "label": flip[label]}
        data = await graphql(ctx.http, ctx.server, CREATE, token, input={"taskCode": TASK, "fields": fields})
        result = data["createExample"]
        if result["__typename"] == "ExampleCreated" and result["example"]["fooled"]:
            found.append(fields)
    if not found:
        raise RuntimeError("no statement fooled the model; P7 needs fooling examples")
    return found


async def _send_and_wait(
    ctx: Context, token: str, fields: dict[str, str], subscribers: list[Subscriber]
) -> tuple[str, int]:
    data = await graphql(ctx.http, ctx.server, CREATE, token, input={"taskCode": TASK, "fields": fields})
    example = data["createExample"]["example"]
    example_id = example["id"]
    deadline = time.monotonic() + DELIVERY_TIMEOUT_S
    while time.monotonic() < deadline:
        if all(example_id in s.arrivals for s in subscribers):
            break
        await asyncio.sleep(0.005)
    return example_id, sum(example_id not in s.arrivals for s in subscribers)


ME = "query { me { username } }"
OWNERSHIP = {
    grant: f"""mutation($input: {verb}TaskOwnershipInput!) {{
  change: {verb.lower()}TaskOwnership(input: $input) {{ __typename ... on Error {{ message }} }} }}"""
    for grant, verb in ((True, "Grant"), (False, "Revoke"))
}


async def _owners(ctx: Context, tokens: list[str], grant: bool) -> None:
    """Make the subscribers owners of the task for the run (or no longer): modelFooled sends someone's example whole
    to its author, the task's owners and admins only, so the writer's events reach owners."""
    for token in tokens:
        name = (await graphql(ctx.http, ctx.server, ME, token))["me"]["username"]
        variables = {"input": {"taskCode": TASK, "username": name}}
        answer = await graphql(ctx.http, ctx.server, OWNERSHIP[grant], ctx.server.admin_token, **variables)
        result = answer["change"]
        if not result["__typename"].startswith("TaskOwnership"):
            raise RuntimeError(f"could not change {name}'s ownership: {result}")


async def run(ctx: Context) -> Result:
    url = ctx.server.graphql_url.replace("http://", "ws://")
    tokens = ctx.server.annotator_tokens
    writer = ctx.server.admin_token
    fooling = await _fooling_inputs(ctx, writer)
    subscribers = [Subscriber(url, tokens[i % len(tokens)]) for i in range(SUBSCRIBERS)]
    await _owners(ctx, tokens, grant=True)
    try:
        for start in range(0, SUBSCRIBERS, 20):
            await asyncio.gather(*(s.open() for s in subscribers[start : start + 20]))
        await asyncio.sleep(0.5)  # every subscribe message handled
        _, missing = await _send_and_wait(ctx, writer, fooling[0], subscribers)  # warm-up, and the check
        if missing:
            raise RuntimeError(f"the warm-up event did not reach {missing} of {SUBSCRIBERS} subscribers")
        latencies: list[float] = []
        missed = 0
        for n in range(EVENTS):
            example_id, missing = await _send_and_wait(ctx, writer, fooling[n % len(fooling)], subscribers)
            missed += missing
            latencies += [
                (s.arrivals[example_id] - s.created[example_id]) * 1000 for s in subscribers if example_id in s.arrivals
            ]
    finally:
        await asyncio.gather(*(s.close() for s in subscribers), return_exceptions=True)
        await _owners(ctx, tokens, grant=False)
    p50, p95, p99 = (percentile(latencies, q) for q in (50, 95, 99))
    figures = (
        f"{SUBSCRIBERS} subscribers × {EVENTS} events: delivery after commit p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
        f"p99 {p99:.1f} ms, max {max(latencies):.1f} ms; {len(latencies)} delivered, {missed} missing"
    )
    return Result(ID, figures, f"p95 ≤ {P95_TARGET_MS:g} ms, none missing", p95 <= P95_TARGET_MS and missed == 0)
