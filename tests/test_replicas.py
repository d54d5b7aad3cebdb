"""The production topology on one machine, bounded and on loopback (docs/deploy.md).

HAProxy (``deploy/haproxy.cfg``, as it is shipped) balances two ``dynaforge serve`` replicas, each with its model
worker; they share a PostgreSQL database and a Redis (events, jobs and, once the Redis limiter lands, rate limits).
A separate ``dynaforge worker`` runs the jobs (webhook deliveries here), and the toy task's target model runs behind
``dynaforge model-server`` through the ``http`` backend (allowlisted with ``DYNAFORGE_OUTBOUND_ALLOW``). Every
process runs with ``DYNAFORGE_ENVIRONMENT=production`` and the settings docs/deploy.md gives it.

* limits are shared: the (N+1)th example or login attempt is refused whichever replica receives it;
* events reach subscribers of either replica (and of a websocket through the load balancer), and the worker
  delivers webhooks signed with the replicas' secret;
* one replica is killed (SIGKILL, its model worker with it) during a load of createExample and reads through the
  load balancer: requests in flight may fail, the rest go to the survivor, and every example whose createExample was
  acknowledged is in the database.

The module's tests share one topology (a module-scoped fixture) and run in order, alone (``serial``): the replica
is killed last. HAProxy missing: skip, saying so (``scripts/services.sh`` installs it with apt-get); CI fails instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from gql import Client, gql
from gql.transport.websockets import WebsocketsTransport
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from support import (
    DYNAFORGE,
    ROOT,
    PrivateRedis,
    cli,
    database,
    eventually,
    free_port,
    last_line,
    serve_in_thread,
    service_missing,
    toy_process_env,
    wait_until,
)

from dynaforge.api.node import parse_id

# serial: a whole deployment (eight processes) on the shared CPUs, started once for the module's tests in order.
pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.serial]

HAPROXY_CONFIG = ROOT / "deploy" / "haproxy.cfg"
START_TIMEOUT_S = 90.0
MODEL_NAME = "keyword-http"
MODEL_SERVER_TOKEN = "model-server-token-" + uuid.uuid4().hex
EXAMPLES_PER_MINUTE = 40  # per user: the load's writers stay under it even when every replica counts alone
LOGINS_PER_MINUTE = 5  # per account
WRITERS = 8
EACH = 25  # createExample calls per writer: 200 in all
READERS = 3
KILL_AFTER = 60  # acknowledged examples before the replica is killed
FAILOVER_S = 8.0  # requests started this long after the kill all succeed (checks every 1 s, fall 2, on 2 busy CPUs)

CREATE = """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename
  ... on ExampleCreated { example { id modelPredictions { model } } }
  ... on PredictionPending { example { id } }
  ... on Error { message } } }"""
LOGIN = """mutation($input: LoginInput!) { login(input: $input) { __typename ... on Error { message } } }"""
REGISTER = """mutation($input: RegisterInput!) { register(input: $input) { __typename
  ... on AuthPayload { token } ... on Error { message } } }"""
SET_TARGETS = """mutation($input: SetTargetModelsInput!) {
  setTargetModels(input: $input) { __typename ... on Error { message } } }"""
CREATE_HOOK = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { __typename
  ... on WebhookSecret { secret webhook { id } } ... on Error { message } } }"""
UPDATE_HOOK = """mutation($input: UpdateWebhookInput!) { updateWebhook(input: $input) { __typename
  ... on Error { message } } }"""
READS = (
    'query { examples(taskCode: "toy", first: 10) { totalCount nodes { id fields } } }',
    'query { task(code: "toy") { currentRound { number collected fooled } } }',
)
CREATED = gql(
    'subscription { exampleCreated(taskCode: "toy") { ... on Example { id } '
    "... on RedactedExample { id: exampleId } } }"
)


# --------------------------------------------------------------------------- the topology


@dataclass
class Replica:
    name: str
    base: str
    proc: subprocess.Popen


class Receiver:
    """A webhook receiver on loopback: records every POST's headers and body."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, str], str]] = []

        async def hook(request: Request) -> PlainTextResponse:
            self.calls.append((dict(request.headers), (await request.body()).decode()))
            return PlainTextResponse("", status_code=204)

        self.app = Starlette(routes=[Route("/hook", hook, methods=["POST"])])


@dataclass
class Topology:
    workdir: Path
    lb: str  # the load balancer's base URL
    replicas: list[Replica]
    database_url: str
    operator: str  # an admin's token
    receiver: Receiver
    receiver_url: str
    worker: subprocess.Popen

    def logs(self) -> str:
        """The tail of every process's stderr, for failure messages."""
        parts = []
        for path in sorted(self.workdir.glob("*.err")):
            text = path.read_text(encoding="utf-8", errors="replace")
            parts.append(f"--- {path.name}\n{text[-3000:]}")
        return "\n".join(parts)


def _start(workdir: Path, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
    """A process in its own session (so that killing it kills what it started), logging to ``workdir/NAME.*``."""
    with open(workdir / f"{name}.out", "wb") as out, open(workdir / f"{name}.err", "wb") as err:
        return subprocess.Popen(args, env=env, cwd=workdir, stdout=out, stderr=err, start_new_session=True)


def _end(proc: subprocess.Popen) -> None:
    """Terminate a process and everything in its session; kill them if they do not end within 15 s."""
    if proc.returncode is not None:
        return  # reaped (the killed replica, with its whole session): its id may belong to another process now
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=15)
            return
        except subprocess.TimeoutExpired:
            continue


def _answers(url: str, expect: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200 and expect in response.read().decode()
    except (urllib.error.URLError, OSError):
        return False


def _wait_up(proc: subprocess.Popen, url: str, workdir: Path, name: str, expect: str = "ok") -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _answers(url, expect):
        if proc.poll() is not None or time.monotonic() > deadline:
            state = f"exited with {proc.poll()}" if proc.poll() is not None else f"not up after {START_TIMEOUT_S:g}s"
            log = (workdir / f"{name}.err").read_text(encoding="utf-8", errors="replace")
            pytest.fail(f"{name} {state} ({url})\n--- {name}.err\n{log[-5000:]}")
        time.sleep(0.1)


def _serve(workdir: Path, name: str, env: dict[str, str], stack: contextlib.ExitStack) -> Replica:
    """A replica serving on a free port, up. free_port's port may be taken before the replica binds it (by any
    process's outgoing connection): the replica then exits saying so, and starts again on another port."""
    for _ in range(3):
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = _start(workdir, name, [DYNAFORGE, "serve", "--host", "127.0.0.1", "--port", str(port)], env)
        stack.callback(_end, proc)
        deadline = time.monotonic() + START_TIMEOUT_S
        while proc.poll() is None and time.monotonic() < deadline and not _answers(base + "/healthz", "ok"):
            time.sleep(0.1)
        log = (workdir / f"{name}.err").read_text(encoding="utf-8", errors="replace")
        if proc.poll() is None or "address already in use" not in log:
            _wait_up(proc, base + "/healthz", workdir, name)  # up, or fails saying why
            return Replica(name, base, proc)
    pytest.fail(f"{name} found no free port in three tries")


def _post(base: str, query: str, token: str | None = None, **variables: Any) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.post(base + "/graphql", json={"query": query, "variables": variables}, headers=headers, timeout=60)
    body = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    return body["data"]


def _text_example(text: str, label: str = "bad") -> dict[str, Any]:
    return {"taskCode": "toy", "fields": {"text": text, "label": label}}


@pytest.fixture(scope="module")
def topology(tmp_path_factory) -> Iterator[Topology]:
    haproxy = shutil.which("haproxy")
    if haproxy is None:
        service_missing("HAProxy", "the haproxy binary is not on PATH; scripts/services.sh installs it with apt-get")
    workdir = tmp_path_factory.mktemp("replicas")
    with contextlib.ExitStack() as stack:
        redis = PrivateRedis(workdir)  # rate-limit counters, queues and channels of this topology only
        redis.start()
        stack.callback(redis.stop)
        database_url = stack.enter_context(database("postgresql", workdir))
        # What every replica and the worker share (docs/deploy.md): the database, the Redis, the secret key, the
        # proxy they believe and the internal addresses they may call.
        env = toy_process_env(
            workdir,
            database_url,
            environment="production",
            secret_key=secrets.token_hex(32),
            password_hash_time_cost="2",  # production's minimum (OWASP's), not the suite's cheap hashing
            password_hash_memory_kib=str(19 * 1024),
            broker_url=redis.url,
            broker_namespace="dynaforge-replicas",
            events_prefix="dynaforge-replicas:events:",
            forwarded_allow_ips="127.0.0.1",
            outbound_allow="127.0.0.1",
            examples_per_minute=str(EXAMPLES_PER_MINUTE),
            logins_per_minute=str(LOGINS_PER_MINUTE),
            registrations_per_hour_per_client="100",  # every client of this test is 127.0.0.1
            inference_timeout_s="30",  # 2 busy CPUs: a slow answer must not make examples pending
            pending_retry_s="1",
        )
        cli(env, workdir, "db", "upgrade")
        cli(
            env,
            workdir,
            *("users", "create", "--username", "operator", "--email", "operator@example.org"),
            *("--password", "operator password", "--admin"),
        )
        operator = last_line(cli(env, workdir, "tokens", "create", "--username", "operator"))

        # The model server runs elsewhere in production: none of the platform's settings, a token of its own.
        model_env = {k: v for k, v in env.items() if not k.startswith("DYNAFORGE_")}
        model_env.update(DYNAFORGE_LOAD_PLUGINS="", DYNAFORGE_MODEL_SERVER_TOKEN=MODEL_SERVER_TOKEN)
        model_port = free_port()
        model_config = json.dumps({"callable": "toy_plugin:keyword_model"})
        model_server = _start(
            workdir,
            "model-server",
            [DYNAFORGE, "model-server", "--backend", "python", "--config", model_config, "--port", str(model_port)],
            model_env,
        )
        stack.callback(_end, model_server)
        worker = _start(workdir, "worker", [DYNAFORGE, "worker"], env)
        stack.callback(_end, worker)
        replicas = [_serve(workdir, name, env, stack) for name in ("api1", "api2")]
        _wait_up(model_server, f"http://127.0.0.1:{model_port}/health", workdir, "model-server")

        lb_port = free_port()
        lb_env = {
            **os.environ,
            "DYNAFORGE_LB_BIND": f"127.0.0.1:{lb_port}",
            **{f"DYNAFORGE_API_{i + 1}": r.base.removeprefix("http://") for i, r in enumerate(replicas)},
        }
        checked = subprocess.run(
            [haproxy, "-c", "-f", str(HAPROXY_CONFIG)], env=lb_env, capture_output=True, text=True, timeout=30
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
        balancer = _start(workdir, "haproxy", [haproxy, "-db", "-f", str(HAPROXY_CONFIG)], lb_env)
        stack.callback(_end, balancer)
        lb = f"http://127.0.0.1:{lb_port}"
        _wait_up(balancer, lb + "/healthz", workdir, "haproxy")

        receiver = Receiver()
        receiver_base = stack.enter_context(serve_in_thread(receiver.app))
        topology = Topology(workdir, lb, replicas, database_url, operator, receiver, receiver_base + "/hook", worker)

        # The operator puts the model server in the loop; each replica predicts with it within CACHE_TTL_S.
        model = {
            "name": MODEL_NAME,
            "backend": "http",
            "config": {
                "url": f"http://127.0.0.1:{model_port}",
                "headers": {"Authorization": f"Bearer {MODEL_SERVER_TOKEN}"},
                "timeout_s": 10,
            },
        }
        result = _post(lb, SET_TARGETS, operator, input={"taskCode": "toy", "models": [model]})["setTargetModels"]
        assert result["__typename"] == "TargetModelsSet", result
        for replica in replicas:

            def predicts_with_the_model_server(base: str = replica.base) -> bool:
                created = _post(base, CREATE, operator, input=_text_example("good warm-up"))["createExample"]
                assert created["__typename"] == "ExampleCreated", (created, topology.logs())
                return [m["model"] for m in created["example"]["modelPredictions"]] == [MODEL_NAME]

            wait_until(predicts_with_the_model_server, within=30, every=0.5, what=f"{replica.name} to use the model")
        yield topology


def _register(base: str, prefix: str) -> tuple[str, str]:
    """A new account through ``base``: (username, token)."""
    username = f"{prefix}_{uuid.uuid4().hex[:8]}"
    account = {"username": username, "email": f"{username}@example.org", "password": "correct horse replica"}
    result = _post(base, REGISTER, input=account)["register"]
    assert result["__typename"] == "AuthPayload", result
    return username, result["token"]


# --------------------------------------------------------------------------- limits


def test_limits_are_shared_by_the_replicas(topology: Topology):
    """Calls alternate between the replicas; the one past the limit is refused whichever replica receives it."""
    a, b = (r.base for r in topology.replicas)
    problems = []

    username, token = _register(topology.lb, "limited")
    for i in range(LOGINS_PER_MINUTE):
        tried = _post((a, b)[i % 2], LOGIN, input={"username": username, "password": "wrong"})["login"]
        assert tried["__typename"] == "InvalidCredentials", tried
    for base in (a, b):
        tried = _post(base, LOGIN, input={"username": username, "password": "correct horse replica"})["login"]
        if tried["__typename"] != "RateLimited":
            problems.append(f"login attempt {LOGINS_PER_MINUTE + 1} on {base}: {tried['__typename']}")

    for i in range(EXAMPLES_PER_MINUTE):
        created = _post((a, b)[i % 2], CREATE, token, input=_text_example(f"limited {i}"))["createExample"]
        assert created["__typename"] == "ExampleCreated", created
    for base in (a, b):
        created = _post(base, CREATE, token, input=_text_example("one too many"))["createExample"]
        if created["__typename"] != "RateLimited":
            problems.append(f"example {EXAMPLES_PER_MINUTE + 1} on {base}: {created['__typename']}")
    assert not problems, problems


# --------------------------------------------------------------------------- events and jobs


async def test_events_reach_subscribers_of_either_replica_and_the_worker_delivers_webhooks(topology: Topology):
    from dynaforge.services.webhooks import verify

    a, b = (r.base for r in topology.replicas)
    _, watcher = _register(topology.lb, "watcher")
    _, writer = _register(topology.lb, "writer")
    hook = _post(
        topology.lb,
        CREATE_HOOK,
        watcher,
        input={"taskCode": "toy", "url": topology.receiver_url, "events": ["EXAMPLE_CREATED"]},
    )["createWebhook"]
    assert hook["__typename"] == "WebhookSecret", hook

    places = {"api1": a, "api2": b, "balancer": topology.lb}
    seen: dict[str, set[int]] = {name: set() for name in places}

    async def listen(name: str, base: str) -> None:
        transport = WebsocketsTransport(
            url=base.replace("http://", "ws://") + "/graphql",
            init_payload={"authorization": f"Bearer {watcher}"},
            subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
        )
        async with Client(transport=transport) as session:
            async for result in session.subscribe(CREATED):
                seen[name].add(parse_id(result["exampleCreated"]["id"], "id", "Example"))

    # The replicas queue a delivery per example on the Redis broker; only `dynaforge worker` consumes it, and it
    # signs with the secret key the replica that made the webhook derived its secret from.
    def delivered() -> set[int]:
        ids = set()
        for headers, body in list(topology.receiver.calls):
            assert verify(hook["secret"], headers, body), (headers, body)
            ids.add(json.loads(body)["data"]["id"])
        return ids

    async with httpx.AsyncClient(timeout=60) as http:

        async def create(base: str, text: str) -> int:
            response = await http.post(
                base + "/graphql",
                json={"query": CREATE, "variables": {"input": _text_example(text)}},
                headers={"Authorization": f"Bearer {writer}"},
            )
            created = response.json()["data"]["createExample"]
            assert created["__typename"] == "ExampleCreated", created
            return parse_id(created["example"]["id"], "id", "Example")

        listeners = [asyncio.create_task(listen(name, base)) for name, base in places.items()]
        try:
            # Ready when a probe example reaches all three subscriptions, and probes written on each replica reach
            # the webhook (a replica reads a task's webhooks again within CACHE_TTL_S of a change on another).
            probes: dict[str, set[int]] = {a: set(), b: set()}

            def ready() -> bool:
                return all(seen.values()) and all(ids & delivered() for ids in probes.values())

            async def probe() -> bool:
                for base in (a, b):
                    probes[base].add(await create(base, "probe"))
                with contextlib.suppress(AssertionError):
                    await eventually(ready, within=1.0, every=0.05)
                for task in listeners:
                    if task.done():
                        task.result()  # raises what ended the subscription
                return ready()

            await eventually(probe, within=30, every=0.1, what="the subscriptions and the webhook to receive events")
            written = [await create((a, b)[i % 2], f"event {i}") for i in range(6)]
            await eventually(
                lambda: all(set(written) <= ids for ids in seen.values()),
                within=20,
                what="every subscriber to receive every example, whichever replica wrote it",
            )
        finally:
            for task in listeners:
                task.cancel()
            await asyncio.gather(*listeners, return_exceptions=True)

    await eventually(
        lambda: set(written) <= delivered(), within=30, every=0.1, what="the worker to deliver the webhooks"
    )
    paused = _post(topology.lb, UPDATE_HOOK, watcher, input={"id": hook["webhook"]["id"], "active": False})
    assert paused["updateWebhook"]["__typename"] == "WebhookUpdated", paused


# --------------------------------------------------------------------------- a replica killed under load


@dataclass
class Load:
    acknowledged: dict[int, str] = field(default_factory=dict)  # example id -> its text
    lost: int = 0  # createExample calls that got no answer
    after_kill: int = 0
    failed: list[tuple[float, str]] = field(default_factory=list)  # (started, what) of requests that got no answer
    unexpected: list[str] = field(default_factory=list)
    reads: int = 0
    killed_at: float | None = None


async def test_a_replica_killed_under_load_loses_no_acknowledged_example(topology: Topology):
    survivor, victim = topology.replicas
    writers = [_register(topology.lb, f"writer{i}")[1] for i in range(WRITERS)]
    load = Load()
    writing = True

    async def request(http: httpx.AsyncClient, token: str, query: str, variables: dict) -> dict | None:
        """The answer's data, or None for a request that got no answer (recorded with when it started)."""
        started = time.monotonic()
        try:
            response = await http.post(
                "/graphql",
                json={"query": query, "variables": variables},
                headers={"Authorization": f"Bearer {token}"},
            )
        except httpx.HTTPError as exc:
            load.failed.append((started, f"transport {type(exc).__name__}"))
            return None
        if response.status_code in (502, 503, 504):  # the balancer: the replica died with the request
            load.failed.append((started, f"HTTP {response.status_code}"))
            return None
        body = response.json()
        if response.status_code != 200 or "errors" in body:
            load.unexpected.append(f"{response.status_code} {body}")
            return None
        return body["data"]

    async def write(i: int, token: str) -> None:
        async with httpx.AsyncClient(base_url=topology.lb, timeout=60) as http:
            for n in range(EACH):
                text = f"good load w{i} n{n}"
                data = await request(http, token, CREATE, {"input": _text_example(text)})
                if data is None:
                    load.lost += 1
                    continue
                created = data["createExample"]
                if created["__typename"] in ("ExampleCreated", "PredictionPending"):
                    load.acknowledged[parse_id(created["example"]["id"], "id", "Example")] = text
                    load.after_kill += load.killed_at is not None
                else:
                    load.unexpected.append(str(created))

    async def read() -> None:
        async with httpx.AsyncClient(base_url=topology.lb, timeout=60) as http:
            n = 0
            while writing:
                if await request(http, topology.operator, READS[n % len(READS)], {}) is not None:
                    load.reads += 1
                n += 1

    async def kill() -> None:
        await eventually(lambda: len(load.acknowledged) >= KILL_AFTER, within=60, what=f"{KILL_AFTER} examples")
        os.killpg(victim.proc.pid, signal.SIGKILL)  # the replica and its model worker, as a machine dies
        load.killed_at = time.monotonic()

    async def writers_then_stop() -> None:
        nonlocal writing
        try:
            await asyncio.gather(*(write(i, t) for i, t in enumerate(writers)))
        finally:
            writing = False

    began = time.monotonic()
    await asyncio.gather(writers_then_stop(), kill(), *(read() for _ in range(READERS)))
    took = time.monotonic() - began
    victim.proc.wait(timeout=10)

    assert not load.unexpected, (load.unexpected[:5], topology.logs())
    assert load.killed_at is not None
    late = [(round(t - load.killed_at, 2), what) for t, what in load.failed if t > load.killed_at + FAILOVER_S]
    assert not late, f"requests failed well after the kill (s after it): {late}"
    assert load.after_kill >= WRITERS, "the balancer did not send the load to the surviving replica"
    assert len(load.acknowledged) + load.lost == WRITERS * EACH
    # Both replicas took the load before the kill, and the balancer's health checks (GET /healthz) took the dead
    # one out.
    log = topology.workdir / "haproxy.out"
    served = {r.name for r in topology.replicas if f"dynaforge_api/{r.name} " in log.read_text()}
    assert served == {"api1", "api2"}, served
    wait_until(lambda: f"{victim.name} is DOWN" in log.read_text(), within=10, what="HAProxy to mark the replica down")

    import asyncpg

    connection = await asyncpg.connect(topology.database_url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        rows = await connection.fetch("SELECT id, fields FROM examples WHERE id = ANY($1)", list(load.acknowledged))
    finally:
        await connection.close()
    stored = {row["id"]: json.loads(row["fields"]) if isinstance(row["fields"], str) else row["fields"] for row in rows}
    missing = sorted(set(load.acknowledged) - set(stored))
    assert not missing, f"{len(missing)} acknowledged examples are not in the database: {missing[:10]}"
    assert all(stored[i]["text"] == text for i, text in load.acknowledged.items())

    # The survivor, the balancer and the worker are still serving.
    assert survivor.proc.poll() is None and topology.worker.poll() is None
    assert _answers(topology.lb + "/healthz", '"status":"ok"')
    print(
        f"{len(load.acknowledged)} examples acknowledged ({load.after_kill} after the kill), {load.reads} reads, "
        f"{len(load.failed)} requests in flight failed ({sorted({w for _, w in load.failed})}), {took:.1f} s"
    )
