"""Faults under load, on loopback and bounded: PostgreSQL restarted during a burst of createExample.

A real ``dynaforge serve`` on a fresh PostgreSQL database takes createExample from eight writers at once; a few
seconds in, the PostgreSQL cluster is restarted (``pg_ctlcluster ... restart``). Afterwards:

* every example the server acknowledged (a ``CreatedExample`` answer) is in the database, with its text;
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

from conftest import IN_CI
from test_e2e import _cli, _database
from test_events_redis import _serve, _toy_env

pytestmark = pytest.mark.postgres

CREATE = """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename
  ... on CreatedExample { example { id fields } } ... on Error { message } } }"""
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


async def test_postgresql_restarted_during_a_burst_of_create_example(tmp_path: Path):
    cluster = _cluster()
    with _database("postgresql", tmp_path) as database_url:
        env = _toy_env(tmp_path, database_url, f"dynaforge-fault-{uuid.uuid4().hex[:8]}:")
        env.pop("DYNAFORGE_EVENTS_URL")  # events stay in the process: this test is about the database
        env["DYNAFORGE_EXAMPLES_PER_MINUTE"] = "100000"
        _cli(env, tmp_path, "db", "upgrade")
        tokens = []
        for i in range(WRITERS):
            _cli(env, tmp_path, "users", "create", "--username", f"writer{i}", "--email", f"writer{i}@example.org",
                 "--password", "long enough pw")
            tokens.append(_cli(env, tmp_path, "tokens", "create", "--username", f"writer{i}").stdout.strip().splitlines()[-1])
        with _serve(env, tmp_path, "faults") as base:
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
                        response = await http.post("/graphql", headers={"Authorization": f"Bearer {tokens[i]}"}, json={
                            "query": CREATE, "variables": {"input": {"taskCode": "toy", "fields": {"text": text, "label": "bad"}}}})
                    except httpx.HTTPError as exc:  # a connection the server closed: no answer, nothing acknowledged
                        refused.append(f"transport {type(exc).__name__}")
                        continue
                    if response.status_code == 503:
                        refused.append("503")
                        continue
                    body = response.json()
                    result = (body.get("data") or {}).get("createExample")
                    if result and result["__typename"] == "CreatedExample":
                        acknowledged[int(result["example"]["id"])] = text
                    elif body.get("errors") and all(e.get("extensions", {}).get("code") == "SERVICE_UNAVAILABLE"
                                                    for e in body["errors"]):
                        refused.append("SERVICE_UNAVAILABLE")
                    else:
                        unexpected.append(f"{response.status_code} {body}")

            async def restart() -> float:
                await asyncio.sleep(RESTART_AFTER_S)
                began = time.monotonic()
                done = await asyncio.to_thread(subprocess.run, [*cluster, "restart"],
                                               capture_output=True, text=True, timeout=60)
                assert done.returncode == 0, done.stderr
                return time.monotonic() - began

            async with httpx.AsyncClient(base_url=base, timeout=30) as http:
                outcome = await asyncio.gather(restart(), *(writer(i, http) for i in range(WRITERS)))
                restart_s = outcome[0]
                # the same process answers again, without a restart
                recovered = None
                for _ in range(150):
                    response = await http.post("/graphql", headers={"Authorization": f"Bearer {tokens[0]}"}, json={
                        "query": CREATE, "variables": {"input": {"taskCode": "toy", "fields": {"text": "good after", "label": "bad"}}}})
                    if response.status_code == 200 and (response.json().get("data") or {}).get("createExample", {}).get("__typename") == "CreatedExample":
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
    wrong = {i for i, t in acknowledged.items()
             if (stored[i] if isinstance(stored[i], dict) else json.loads(stored[i]))["text"] != t}
    assert not wrong
    print(f"acknowledged {len(acknowledged)}, refused {len(refused)} ({sorted(set(refused))}), "
          f"restart took {restart_s:.1f} s")
