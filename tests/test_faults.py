"""Faults under load, on loopback and bounded: PostgreSQL restarted during a burst of createExample.

A real ``dynaforge serve`` on a fresh PostgreSQL database takes createExample from eight writers at once; a few
seconds in, the PostgreSQL cluster is restarted (``pg_ctlcluster ... restart``). Afterwards:

* every example the server acknowledged (a ``ExampleCreated`` answer) is in the database, with its text;
* every request that failed got a typed, retryable answer (``SERVICE_UNAVAILABLE`` in the GraphQL errors, or HTTP
  503 when even the token could not be checked), never the masked "Unexpected error";
* the same server process answers again within seconds, without being restarted.

It restarts the shared cluster, so it needs ``pg_ctlcluster`` and the rights to use it (root here and in CI);
elsewhere it skips saying so (with ``CI=true`` it fails).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest
from support import IN_CI, cli, database, runner_pids, serve, toy_redis_env

from dynaforge.api.node import parse_id

pytestmark = pytest.mark.faults

CREATE = """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename
  ... on ExampleCreated { example { id fields } } ... on Error { message } } }"""
WRITERS = 8
BURST_S = 14.0
RESTART_AFTER_S = 3.0


def _cluster() -> list[str]:
    tool = shutil.which("pg_ctlcluster")
    versions = sorted(os.listdir("/etc/postgresql")) if os.path.isdir("/etc/postgresql") else []
    if tool is None or not versions or os.geteuid() != 0:
        reason = "restarting PostgreSQL needs pg_ctlcluster, /etc/postgresql and root"
        if IN_CI:
            pytest.fail(reason + " — CI requires it")
        pytest.skip(reason)
    return [tool, "--skip-systemctl-redirect", versions[0], "main"]


@pytest.mark.postgres
@pytest.mark.serial
async def test_postgresql_restarted_during_a_burst_of_create_example(tmp_path: Path):
    cluster = _cluster()
    with database("postgresql", tmp_path) as database_url:
        env = toy_redis_env(tmp_path, database_url, f"dynaforge-fault-{uuid.uuid4().hex[:8]}:")
        env.pop("DYNAFORGE_EVENTS_URL")  # events stay in the process: this test is about the database
        env["DYNAFORGE_EXAMPLES_PER_MINUTE"] = "100000"
        cli(env, tmp_path, "db", "upgrade")
        tokens = []
        for i in range(WRITERS):
            cli(
                env,
                tmp_path,
                "users",
                "create",
                "--username",
                f"writer{i}",
                "--email",
                f"writer{i}@example.org",
                "--password",
                "long enough pw",
            )
            tokens.append(
                cli(env, tmp_path, "tokens", "create", "--username", f"writer{i}").stdout.strip().splitlines()[-1]
            )
        with serve(env, tmp_path, "faults") as base:
            acknowledged: dict[int, str] = {}
            refused: list[str] = []
            unexpected: list[str] = []
            started = time.monotonic()

            async def writer(i: int, http: httpx.AsyncClient) -> None:
                n = 0
                while time.monotonic() - started < BURST_S:
                    text = f"good w{i} n{n}"
                    n += 1
                    try:
                        response = await http.post(
                            "/graphql",
                            headers={"Authorization": f"Bearer {tokens[i]}"},
                            json={
                                "query": CREATE,
                                "variables": {"input": {"taskCode": "toy", "fields": {"text": text, "label": "bad"}}},
                            },
                        )
                    except httpx.HTTPError as exc:  # a connection the server closed: no answer, nothing acknowledged
                        refused.append(f"transport {type(exc).__name__}")
                        continue
                    if response.status_code == 503:
                        refused.append("503")
                        continue
                    body = response.json()
                    result = (body.get("data") or {}).get("createExample")
                    if result and result["__typename"] == "ExampleCreated":
                        acknowledged[parse_id(result["example"]["id"], "id", "Example")] = text
                    elif body.get("errors") and all(
                        e.get("extensions", {}).get("code") == "SERVICE_UNAVAILABLE" for e in body["errors"]
                    ):
                        refused.append("SERVICE_UNAVAILABLE")
                    else:
                        unexpected.append(f"{response.status_code} {body}")

            async def restart() -> float:
                await asyncio.sleep(RESTART_AFTER_S)
                began = time.monotonic()
                done = await asyncio.to_thread(
                    subprocess.run, [*cluster, "restart"], capture_output=True, text=True, timeout=60
                )
                assert done.returncode == 0, done.stderr
                return time.monotonic() - began

            async with httpx.AsyncClient(base_url=base, timeout=30) as http:
                outcome = await asyncio.gather(restart(), *(writer(i, http) for i in range(WRITERS)))
                restart_s = outcome[0]
                # the same process answers again, without a restart
                recovered = None
                for _ in range(150):
                    response = await http.post(
                        "/graphql",
                        headers={"Authorization": f"Bearer {tokens[0]}"},
                        json={
                            "query": CREATE,
                            "variables": {
                                "input": {"taskCode": "toy", "fields": {"text": "good after", "label": "bad"}}
                            },
                        },
                    )
                    if (
                        response.status_code == 200
                        and (response.json().get("data") or {}).get("createExample", {}).get("__typename")
                        == "ExampleCreated"
                    ):
                        recovered = response.json()["data"]["createExample"]["example"]["id"]
                        break
                    await asyncio.sleep(0.2)

        import asyncpg

        dsn = database_url.replace("postgresql+asyncpg://", "postgresql://")
        for _ in range(50):
            try:
                connection = await asyncpg.connect(dsn)
                break
            except Exception:  # noqa: BLE001 - the cluster may still be starting
                await asyncio.sleep(0.2)
        try:
            stored = {row["id"]: row["fields"] for row in await connection.fetch("SELECT id, fields FROM examples")}
        finally:
            await connection.close()
    import json

    assert not unexpected, unexpected[:5]
    assert recovered is not None, "the server did not answer createExample again after PostgreSQL came back"
    assert len(acknowledged) > WRITERS, "the burst acknowledged too few examples to mean anything"
    missing = {i: t for i, t in acknowledged.items() if i not in stored}
    assert not missing, f"{len(missing)} acknowledged examples are missing: {list(missing.items())[:5]}"
    wrong = {
        i
        for i, t in acknowledged.items()
        if (stored[i] if isinstance(stored[i], dict) else json.loads(stored[i]))["text"] != t
    }
    assert not wrong
    print(
        f"acknowledged {len(acknowledged)}, refused {len(refused)} ({sorted(set(refused))}), "
        f"restart took {restart_s:.1f} s"
    )


# --------------------------------------------------------------------------- the model worker and an evaluation job
# killed during a burst, on one served process

ACK = """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename
  ... on ExampleCreated { example { id } } ... on PredictionPending { example { id } } ... on Error { message } } }"""


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
async def test_model_worker_and_evaluation_job_killed_during_a_burst(kind, tmp_path: Path):
    """Writers create examples for several seconds; meanwhile the model worker is killed (its examples are stored
    pending and predicted when it is back) and a running evaluation job is killed (dramatiq delivers it again and it
    resumes from its stored chunks). Nothing acknowledged is lost, nothing stays pending, the evaluation ends DONE."""
    import signal

    with database(kind, tmp_path) as database_url:
        env = toy_redis_env(tmp_path, database_url, f"dynaforge-fault-{uuid.uuid4().hex[:8]}:")
        for key in ("DYNAFORGE_EVENTS_URL", "DYNAFORGE_INFERENCE"):
            env.pop(key)  # the model worker process (serve's default), events in the process
        env.update(
            DYNAFORGE_EXAMPLES_PER_MINUTE="100000",
            DYNAFORGE_EVAL_CHUNK_SIZE="2",
            DYNAFORGE_PENDING_RETRY_S="0.5",
            DYNAFORGE_INFERENCE_TIMEOUT_S="2",
        )
        cli(env, tmp_path, "db", "upgrade")
        names = ["operator"] + [f"writer{i}" for i in range(6)]
        for name in names:
            cli(
                env,
                tmp_path,
                "users",
                "create",
                "--username",
                name,
                "--email",
                f"{name}@example.org",
                "--password",
                "long enough pw",
                *(["--admin"] if name == "operator" else []),
            )
        tokens = {
            n: cli(env, tmp_path, "tokens", "create", "--username", n).stdout.strip().splitlines()[-1] for n in names
        }
        with serve(env, tmp_path, "faults2") as base:
            async with httpx.AsyncClient(base_url=base, timeout=60) as http:

                async def call(token: str, query: str, **variables):
                    response = await http.post(
                        "/graphql",
                        headers={"Authorization": f"Bearer {token}"},
                        json={"query": query, "variables": variables},
                    )
                    return response.json()

                operator = tokens["operator"]
                for i in range(60):  # accepted by the operator, they become r1-test (6 items: 3 chunks of 2)
                    made = await call(  # written by another: nobody validates their own
                        tokens["writer0"],
                        ACK,
                        input={"taskCode": "toy", "fields": {"text": f"good {i}", "label": "good"}},
                    )
                    example_id = made["data"]["createExample"]["example"]["id"]
                    voted = await call(
                        operator,
                        "mutation($id: ID!) { validateExample(input: {id: $id, label: CORRECT}) { __typename } }",
                        id=example_id,
                    )
                    assert voted["data"]["validateExample"]["__typename"] == "ValidationRecorded", voted
                built = await call(
                    operator,
                    'mutation { createRoundDatasets(input: {taskCode: "toy", round: 1}) { __typename } }',
                )
                assert built["data"]["createRoundDatasets"]["__typename"] == "DatasetsCreated", built

                acknowledged: dict[int, str] = {}
                unexpected: list[str] = []
                started = time.monotonic()

                async def writer(name: str) -> None:
                    n = 0
                    while time.monotonic() - started < 10.0:
                        text = f"{name} line {n}"
                        n += 1
                        body = await call(
                            tokens[name], ACK, input={"taskCode": "toy", "fields": {"text": text, "label": "bad"}}
                        )
                        result = (body.get("data") or {}).get("createExample") or {}
                        if result.get("__typename") in ("ExampleCreated", "PredictionPending"):
                            acknowledged[parse_id(result["example"]["id"], "id", "Example")] = text
                        else:
                            unexpected.append(str(body))

                async def faults() -> tuple[int, str]:
                    await asyncio.sleep(1.5)
                    worker = httpx.get(base + "/healthz", timeout=10).json()["inference"]["pid"]
                    os.kill(worker, signal.SIGKILL)
                    submitted = await call(
                        operator,
                        """mutation { submitModel(input: {taskCode: "toy", name: "slow",
                        backend: "python", config: {callable: "eval_models:slow_toy"}, published: true}) {
                        __typename ... on ModelSubmitted { model { id } } } }""",
                    )
                    model_id = submitted["data"]["submitModel"]["model"]["id"]
                    for _ in range(400):  # kill the job's process once it has finished a chunk
                        state = await call(
                            operator,
                            "query($m: ID!) { model(id: $m) { evaluations { nodes { progress } } } }",
                            m=model_id,
                        )
                        if state["data"]["model"]["evaluations"]["nodes"][0]["progress"] > 0 and runner_pids():
                            break
                        await asyncio.sleep(0.05)
                    killed = runner_pids()
                    for pid in killed:
                        os.kill(pid, signal.SIGKILL)
                    return model_id, f"killed runner(s) {killed}"

                outcome = await asyncio.gather(faults(), *(writer(f"writer{i}") for i in range(6)))
                model_id = outcome[0][0]
                final = None
                for _ in range(240):  # pending examples get predicted; the evaluation resumes and finishes
                    state = await call(
                        operator,
                        "query($m: ID!) { model(id: $m) { status evaluations { nodes { status progress } } } }",
                        m=model_id,
                    )
                    final = state["data"]["model"]
                    pending = await call(
                        operator,
                        '{ examples(taskCode: "toy", first: 1, status: PENDING_PREDICTION) { edges { node { id } } } }',
                    )
                    if final["status"] == "DONE" and not pending["data"]["examples"]["edges"]:
                        break
                    await asyncio.sleep(0.5)

        import asyncpg

        connection = (
            await asyncpg.connect(database_url.replace("postgresql+asyncpg://", "postgresql://"))
            if kind == "postgresql"
            else None
        )
        if connection is not None:
            try:
                rows = {r["id"]: r for r in await connection.fetch("SELECT id, status FROM examples")}
                attempts = await connection.fetchval(
                    "SELECT attempts FROM evaluations WHERE model_id = $1", parse_id(model_id, "id", "Model")
                )
                chunks = await connection.fetchval("SELECT count(*) FROM evaluation_chunks")
            finally:
                await connection.close()
        else:
            import sqlite3

            db = sqlite3.connect(database_url.split("///", 1)[1])
            try:
                rows = {i: {"id": i, "status": s} for i, s in db.execute("SELECT id, status FROM examples")}
                attempts = db.execute(
                    "SELECT attempts FROM evaluations WHERE model_id = ?", (parse_id(model_id, "id", "Model"),)
                ).fetchone()[0]
                chunks = db.execute("SELECT count(*) FROM evaluation_chunks").fetchone()[0]
            finally:
                db.close()
    assert not unexpected, unexpected[:3]
    assert len(acknowledged) > 20
    missing = [i for i in acknowledged if i not in rows]
    assert not missing, f"{len(missing)} acknowledged examples are missing"
    assert not [i for i in acknowledged if rows[i]["status"] == "PENDING_PREDICTION"], "examples were left pending"
    assert final == {"status": "DONE", "evaluations": {"nodes": [{"status": "DONE", "progress": 1.0}]}}, final
    assert attempts >= 2 and chunks == 3  # resumed, never a chunk twice


def test_only_the_database_layers_connection_errors_count_as_the_database_being_down():
    """A remote model server refusing a connection is not the database: it must not be reported as one."""
    import sqlalchemy.exc

    from dynaforge.errors import database_unreachable

    assert not database_unreachable(ConnectionRefusedError("a model server"))
    assert not database_unreachable(ValueError("bad"))
    try:
        try:
            raise ConnectionRefusedError("refused")
        except ConnectionRefusedError as cause:
            raise sqlalchemy.exc.DBAPIError("SELECT 1", {}, cause) from cause
    except sqlalchemy.exc.DBAPIError as wrapped:
        assert database_unreachable(wrapped)
