"""P5: a page of 50 examples, against a plain Starlette JSON endpoint serving the same rows; SQL statements per
page; a page 100k rows deep against the first page.

The system under test is a second ``dynaforge serve`` (``--no-warm-models``: no prediction is asked for, so no
model worker starts) over its own throwaway SQLite database, into which SEEDED examples of the sentiment task are
inserted directly (SQLAlchemy core, in batches) once the server has synced the task and opened its round 1. The
caller is the admin, who sees every example. The query asks what a list of examples shows:
``edges { cursor node { id fields prediction { label probabilities { label probability } } fooled status createdAt
round { number } } } pageInfo { ... }``
(the page reads each row's round in its own query, so the nested ``round`` object costs no query per row).

The baseline is a plain Starlette app (this module, run with ``--baseline-serve``) under uvicorn on loopback in its
own process, as the server is: ``GET /examples?task=&first=&after=`` reads the same rows from the same file with
one plain SQL query on a stdlib ``sqlite3`` connection (examples joined to their round), decodes the JSON columns
and returns the same JSON document as the GraphQL answer (checked equal before measuring).

(a) Throughput: closed loops of CALLERS callers, each on its own bare HTTP/1.1 keep-alive connection sending
prepared requests (``RawConnection``: far lighter than ``httpx``, so that the baseline's rate is the server's and
not the client's), asking for pages of 50 at a fixed list of keyset positions spread over the table (the first page
and POSITIONS - 1 cursors; the same positions for both sides); phases of WARMUP_S + MEASURE_S in the order baseline,
GraphQL, lean, lean, GraphQL, baseline (ABCCBA), pooled per side, where "lean" is the same GraphQL page without
``round { number }``: a diagnostic of what the nested object costs per row, printed but not part of the target. A call
succeeds on status 200 with a page and no GraphQL error.
Printed too: the CPU share of the serving process and of this benchmark process (whether the client was the limit),
and the serving process's CPU per request (CPU seconds over the phases / calls), whose ratio does not depend on how
much of a core the server got on a shared machine.
(b) SQL statements per page at page sizes 10, 50, 100 and 200, counted in this process (``InProcessApi``: the same
app built with ``create_app`` over the same file, called through ``httpx.ASGITransport``, every statement the driver
executes counted on both engines). The served maximum page size is 100 (``page_max_size``); the counting app is
built with ``page_max_size=200`` so that 200 can be asked for. Counted with the token and task caches warm (the
request before each count fills them; ``cache_ttl_s`` is 2 s); the first request of the fresh app (caches cold)
is printed too. Queries are the statements that are not transaction control (BEGIN ...), which are printed beside.
(c) Depth: one caller, pages of 50 from the start and after a cursor 100k rows in, alternating in rounds of
DEPTH_ROUND calls (first then deep, deep then first, ...). For scale, the same two pages through plain SQL in
this process, and the OFFSET 100000 form that keyset paging avoids.

Targets (same run): GraphQL requests/s >= 0.12 x the baseline's; queries per page the same at every size and
<= 3; the deep page's p50 <= 1.5 x the first page's.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import random
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.common import (
    ADMIN,
    STATEMENTS,
    TASK,
    Context,
    CpuMeter,
    InProcessApi,
    Phase,
    RawConnection,
    Result,
    Server,
    _free_port,
    _wait_healthy,
    client,
    closed_loop,
    default_threads,
    graphql,
    ms,
    percentile,
    pooled_latencies,
    pooled_throughput,
    serve,
    sqlite_engine,
)

ID = "P5"
RATIO_TARGET = 0.12  # PERFORMANCE.md: in three consecutive runs
QUERIES_TARGET = 3
DEPTH_TARGET = 1.5
SEEDED = 110_000
DEEP = 100_000  # the deep page starts this many rows from the newest
PAGE = 50
COUNT_SIZES = (10, 50, 100, 200)
CALLERS = 4
POSITIONS = 64  # keyset positions the throughput callers cycle through
WARMUP_S = 1.0
MEASURE_S = 4.0
DEPTH_WARMUP = 10
DEPTH_ROUND = 10
DEPTH_MIN_ROUNDS = 4
DEPTH_MAX_ROUNDS = 20
DEPTH_BUDGET_S = 10.0
BATCH = 5_000
SEED = 20240501
ROOT = Path(__file__).resolve().parent.parent

PAGE_QUERY = """query Page($code: String!, $first: Int, $after: String) {
  task(code: $code) { id examples(first: $first, after: $after) {
    edges { cursor node { id fields prediction { label probabilities { label probability } } fooled status createdAt
      round { number } } }
    pageInfo { hasNextPage endCursor }
  } }
}"""
LEAN_QUERY = PAGE_QUERY.replace(" round { number }", "")  # a diagnostic: the same page without the DataLoader field


def typed_prediction(stored: dict) -> dict:
    """The server's typed ``Prediction`` (label, probabilities most likely first) of a stored one, for the baseline."""
    probabilities = sorted((stored.get("probabilities") or {}).items(), key=lambda kv: -kv[1])
    return {
        "label": stored.get("label"),
        "probabilities": [{"label": k, "probability": float(v)} for k, v in probabilities] if probabilities else None,
    }


def global_id(example_id: int) -> str:
    """The server's global id of an example (``dynaforge.api.node.global_id``), rebuilt for the baseline."""
    return base64.urlsafe_b64encode(f"Example:{example_id}".encode()).rstrip(b"=").decode()


def cursor(example_id: int) -> str:
    """The server's cursor format (``dynaforge.services.examples.encode_cursor``), rebuilt for the baseline."""
    return base64.urlsafe_b64encode(f"example:{example_id}".encode()).decode()


def cursor_id(value: str) -> int:
    return int(base64.urlsafe_b64decode(value.encode()).decode().split(":", 1)[1])


# --------------------------------------------------------------------------- seeding


def seed_examples(server: Server, count: int = SEEDED) -> tuple[int, int]:
    """Insert ``count`` sentiment examples by the admin in round 1, shaped like served ones; returns (min, max) id."""
    from sqlalchemy import func, select

    from dynaforge.db.models import Example, ExampleStatus, Round, TaskRow, User

    rng = random.Random(SEED)
    labels = ("positive", "negative", "neutral")
    statuses = (ExampleStatus.CREATED,) * 6 + (ExampleStatus.ACCEPTED, ExampleStatus.REJECTED, ExampleStatus.FLAGGED)
    engine = sqlite_engine(server)
    try:
        with engine.begin() as conn:
            task_id = conn.scalar(select(TaskRow.id).where(TaskRow.code == TASK))
            round_id = conn.scalar(select(Round.id).where(Round.task_id == task_id, Round.number == 1))
            user_id = conn.scalar(select(User.id).where(User.username == ADMIN))
            if task_id is None or round_id is None or user_id is None:
                raise RuntimeError("the served process has not synced the sentiment task and its round 1")
            start = datetime.now(UTC) - timedelta(seconds=3 * count)
            table = Example.__table__
            for first in range(0, count, BATCH):
                rows = []
                for n in range(first, min(count, first + BATCH)):
                    statement, label = STATEMENTS[n % len(STATEMENTS)]
                    raw = [rng.random() for _ in labels]
                    probabilities = {name: round(v / sum(raw), 6) for name, v in zip(labels, raw, strict=False)}
                    predicted = max(probabilities, key=probabilities.get)
                    prediction = {"label": predicted, "probabilities": probabilities}
                    fooled = predicted != label
                    latency = round(rng.uniform(6.0, 14.0), 3)
                    created = start + timedelta(seconds=3 * n)
                    rows.append(
                        {
                            "task_id": task_id,
                            "round_id": round_id,
                            "context_id": None,
                            "user_id": user_id,
                            "fields": {"statement": statement, "label": label},
                            "prediction": prediction,
                            "model_predictions": [
                                {
                                    "model": "minilm-sentiment",
                                    "prediction": prediction,
                                    "latency_ms": latency,
                                    "fooled": fooled,
                                }
                            ],
                            "fooled": fooled,
                            "status": statuses[n % len(statuses)],
                            "tag": None,
                            "time_taken_ms": rng.randint(5_000, 120_000),
                            "inference_ms": latency,
                            "validations_correct": 0,
                            "validations_incorrect": 0,
                            "validations_flagged": 0,
                            "validations_total": 0,
                            "created_at": created,
                            "updated_at": created,
                        }
                    )
                conn.execute(table.insert(), rows)
            low, high = conn.execute(
                select(func.min(Example.id), func.max(Example.id)).where(Example.task_id == task_id)
            ).one()
    finally:
        engine.dispose()
    return int(low), int(high)


# --------------------------------------------------------------------------- the baseline


BASELINE_SQL = (
    "SELECT e.id, e.fields, e.prediction, e.fooled, e.status, e.created_at, r.number "
    "FROM examples e JOIN rounds r ON r.id = e.round_id "
    "WHERE e.task_id = ? {after}ORDER BY e.id DESC LIMIT ?"
)


def baseline_app(database: str):
    """A plain Starlette JSON endpoint serving a page of examples with one SQL query (stdlib sqlite3)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, check_same_thread=False)
    tasks = dict(conn.execute("SELECT code, id FROM tasks").fetchall())
    first_sql, after_sql = BASELINE_SQL.format(after=""), BASELINE_SQL.format(after="AND e.id < ? ")

    def iso(value: str) -> str:
        return datetime.fromisoformat(value).replace(tzinfo=UTC).isoformat()

    async def examples(request: Request) -> JSONResponse:
        params = request.query_params
        first = int(params.get("first", "20"))
        after = params.get("after")
        task_id = tasks[params["task"]]
        if after:
            rows = conn.execute(after_sql, (task_id, cursor_id(after), first + 1)).fetchall()
        else:
            rows = conn.execute(first_sql, (task_id, first + 1)).fetchall()
        has_next = len(rows) > first
        rows = rows[:first]
        edges = [
            {
                "cursor": cursor(i),
                "node": {
                    "id": global_id(i),
                    "fields": json.loads(fields),
                    "prediction": typed_prediction(json.loads(prediction)) if prediction else None,
                    "fooled": None if fooled is None else bool(fooled),
                    "status": status,
                    "createdAt": iso(created),
                    "round": {"number": number},
                },
            }
            for i, fields, prediction, fooled, status, created, number in rows
        ]
        page_info = {"hasNextPage": has_next, "endCursor": cursor(rows[-1][0]) if rows else None}
        return JSONResponse({"data": {"examples": {"edges": edges, "pageInfo": page_info}}})

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    return Starlette(routes=[Route("/examples", examples), Route("/healthz", healthz)])


class Baseline:
    """The baseline app served by uvicorn in its own process on loopback."""

    def __init__(self, server: Server):
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.err = server.workdir / "baseline.err"
        with open(self.err, "wb") as err:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "bench.p5_examples_page",
                    "--baseline-serve",
                    str(server.database_path),
                    str(self.port),
                ],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        try:
            _wait_healthy(self.proc, self.base_url, self.err)
        except BaseException:
            self.close()
            raise

    @property
    def pid(self) -> int:
        return self.proc.pid

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def serve_baseline(database: str, port: int) -> None:
    import uvicorn

    uvicorn.run(baseline_app(database), host="127.0.0.1", port=port, log_level="warning", access_log=False)


# --------------------------------------------------------------------------- calls


async def graphql_page(http: httpx.AsyncClient, server: Server, first: int, after: str | None) -> dict[str, Any]:
    variables: dict[str, Any] = {"code": TASK, "first": first}
    if after is not None:
        variables["after"] = after
    return (await graphql(http, server, PAGE_QUERY, server.admin_token, **variables))["task"]["examples"]


async def baseline_page(http: httpx.AsyncClient, baseline: Baseline, first: int, after: str | None) -> dict[str, Any]:
    params = {"task": TASK, "first": str(first)}
    if after is not None:
        params["after"] = after
    response = await http.get(baseline.base_url + "/examples", params=params)
    response.raise_for_status()
    return response.json()["data"]["examples"]


async def timed(fetch, http: httpx.AsyncClient, side: Any, first: int, after: str | None) -> tuple[int, bool]:
    """One page through ``fetch``; (latency in ns, whether it came back full)."""
    started = time.perf_counter_ns()
    page = await fetch(http, side, first, after)
    return time.perf_counter_ns() - started, len(page["edges"]) == first


# --------------------------------------------------------------------------- the benchmark


def graphql_request(server: Server, after: str | None, query: str = PAGE_QUERY) -> bytes:
    variables: dict[str, Any] = {"code": TASK, "first": PAGE}
    if after is not None:
        variables["after"] = after
    body = json.dumps({"query": query, "variables": variables}).encode()
    host = server.base_url.removeprefix("http://")
    return (
        f"POST /graphql HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {server.admin_token}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def baseline_request(baseline: Baseline, after: str | None) -> bytes:
    query = f"task={TASK}&first={PAGE}" + (f"&after={after}" if after is not None else "")
    host = baseline.base_url.removeprefix("http://")
    return f"GET /examples?{query} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()


async def throughput(server: Server, baseline: Baseline, positions: list[str | None]) -> dict[str, Any]:
    requests = {
        "graphql": [graphql_request(server, a) for a in positions],
        "lean": [graphql_request(server, a, LEAN_QUERY) for a in positions],
        "baseline": [baseline_request(baseline, a) for a in positions],
    }
    urls = {"graphql": server.base_url, "lean": server.base_url, "baseline": baseline.base_url}

    async def phase(side: str) -> Phase:
        connections = [RawConnection(urls[side]) for _ in range(CALLERS)]
        prepared = requests[side]

        async def call(caller: int, k: int) -> tuple[int, bool]:
            started = time.perf_counter_ns()
            status, body = await connections[caller].request(prepared[(caller * 17 + k) % len(prepared)])
            return time.perf_counter_ns() - started, (
                status == 200 and b'"hasNextPage"' in body and b'"errors":' not in body
            )

        try:
            return await closed_loop(CALLERS, call, warmup_s=WARMUP_S, measure_s=MEASURE_S)
        finally:
            for connection in connections:
                await connection.close()

    phases: dict[str, list[Phase]] = {"baseline": [], "graphql": [], "lean": []}
    meters: dict[str, list[CpuMeter]] = {"baseline": [], "graphql": [], "lean": []}
    for side in ("baseline", "graphql", "lean", "lean", "graphql", "baseline"):
        pid = baseline.pid if side == "baseline" else server.pid
        await asyncio.sleep(0.2)
        with CpuMeter(pid, None) as meter:
            phases[side].append(await phase(side))
        meters[side].append(meter)
    out: dict[str, Any] = {}
    for side, ps in phases.items():
        ms_ = meters[side]
        out[side] = {
            "rps": pooled_throughput(ps),
            "p50": percentile(pooled_latencies(ps), 50),
            "p95": percentile(pooled_latencies(ps), 95),
            "failures": sum(p.failures() for p in ps),
            "server_cpu": sum(m.used["api"] for m in ms_) / len(ms_),
            "bench_cpu": sum(m.used["bench"] for m in ms_) / len(ms_),
            # the serving process's CPU per request over the whole phases (warm-up included, as are its calls)
            "cpu_ms": 1000 * sum(m.seconds["api"] for m in ms_) / max(1, sum(len(p.calls) for p in ps)),
        }
    return out


async def count_statements(server: Server) -> tuple[dict[int, Any], Any]:
    """Statements per page at each size (caches warm), and those of the fresh app's first request (caches cold)."""
    counts: dict[int, Any] = {}
    async with InProcessApi(server, page_max_size=max(COUNT_SIZES)) as api:
        cold, _ = await api.statements(PAGE_QUERY, server.admin_token, code=TASK, first=PAGE)
        for size in COUNT_SIZES:
            await api.statements(PAGE_QUERY, server.admin_token, code=TASK, first=size)  # fills the caches
            counted, data = await api.statements(PAGE_QUERY, server.admin_token, code=TASK, first=size)
            if len(data["task"]["examples"]["edges"]) != size:
                raise RuntimeError(f"asked for {size} examples, got {len(data['task']['examples']['edges'])}")
            counts[size] = counted
    return counts, cold


async def depth(http: httpx.AsyncClient, server: Server, deep_cursor: str) -> tuple[list[float], list[float], int]:
    first: list[float] = []
    deep: list[float] = []

    async def run_side(after: str | None, calls: int, out: list[float] | None) -> None:
        for _ in range(calls):
            latency, ok = await timed(graphql_page, http, server, PAGE, after)
            if not ok:
                raise RuntimeError("a page came back short")
            if out is not None:
                out.append(ms(latency))

    await run_side(None, DEPTH_WARMUP, None)
    await run_side(deep_cursor, DEPTH_WARMUP, None)
    started = time.perf_counter()
    rounds = 0
    while rounds < DEPTH_MIN_ROUNDS or (rounds < DEPTH_MAX_ROUNDS and time.perf_counter() - started < DEPTH_BUDGET_S):
        order = ((None, first), (deep_cursor, deep)) if rounds % 2 == 0 else ((deep_cursor, deep), (None, first))
        for after, out in order:
            await run_side(after, DEPTH_ROUND, out)
        rounds += 1
    return first, deep, rounds


def plain_sql_scale(server: Server, deep_id: int) -> dict[str, float]:
    """The first page, the keyset page after ``deep_id`` and the OFFSET form, through plain SQL in this process."""
    conn = sqlite3.connect(f"file:{server.database_path}?mode=ro", uri=True)
    try:
        task_id = conn.execute("SELECT id FROM tasks WHERE code = ?", (TASK,)).fetchone()[0]
        forms = {
            "first": (BASELINE_SQL.format(after=""), (task_id, PAGE + 1)),
            "keyset": (BASELINE_SQL.format(after="AND e.id < ? "), (task_id, deep_id, PAGE + 1)),
            "offset": (BASELINE_SQL.format(after="") + " OFFSET ?", (task_id, PAGE + 1, DEEP)),
        }
        out = {}
        for name, (sql, params) in forms.items():
            conn.execute(sql, params).fetchall()
            times = []
            for _ in range(5):
                started = time.perf_counter_ns()
                conn.execute(sql, params).fetchall()
                times.append(ms(time.perf_counter_ns() - started))
            out[name] = percentile(times, 50)
        return out
    finally:
        conn.close()


async def measure(threads: int) -> Result:
    """The whole benchmark: its own server over its own seeded database, and the baseline beside it."""
    with serve(threads, warm_models=False) as server:
        started = time.perf_counter()
        low, high = await asyncio.to_thread(seed_examples, server)
        seed_s = time.perf_counter() - started
        deep_cursor = cursor(high - DEEP + 1)  # the page after it starts DEEP rows from the newest
        rng = random.Random(SEED)
        positions: list[str | None] = [None] + [cursor(rng.randint(low + PAGE + 1, high)) for _ in range(POSITIONS - 1)]
        baseline = Baseline(server)
        try:
            async with client(CALLERS + 2) as http:
                for after in (None, deep_cursor, positions[1]):  # both sides serve the same document
                    ours, theirs = (
                        await graphql_page(http, server, PAGE, after),
                        await baseline_page(http, baseline, PAGE, after),
                    )
                    if ours != theirs:
                        raise RuntimeError(f"the baseline does not serve the same page as GraphQL (after={after})")
                rates = await throughput(server, baseline, positions)
                first, deep, rounds = await depth(http, server, deep_cursor)
        finally:
            baseline.close()
        counts, cold = await count_statements(server)
        scale = plain_sql_scale(server, high - DEEP + 1)

    g, b, lean = rates["graphql"], rates["baseline"], rates["lean"]
    ratio = g["rps"] / b["rps"]
    queries = {size: len(c.queries) for size, c in counts.items()}
    same = len(set(queries.values())) == 1
    first_p50, deep_p50 = percentile(first, 50), percentile(deep, 50)
    depth_ratio = deep_p50 / first_p50
    failures = g["failures"] + b["failures"] + lean["failures"]
    passed = (
        ratio >= RATIO_TARGET
        and same
        and max(queries.values()) <= QUERIES_TARGET
        and depth_ratio <= DEPTH_TARGET
        and not failures
    )
    figures = (
        f"examples page of {PAGE} over {SEEDED} seeded examples ({seed_s:.1f}s to seed), {CALLERS} callers: "
        f"GraphQL {g['rps']:.0f} req/s (p50 {g['p50']:.2f} ms, p95 {g['p95']:.2f}; server cpu {g['server_cpu']:.0%}, "
        f"{g['cpu_ms']:.2f} ms cpu per request; bench cpu {g['bench_cpu']:.0%}) vs plain Starlette JSON "
        f"{b['rps']:.0f} req/s (p50 {b['p50']:.2f} ms, p95 {b['p95']:.2f}; server cpu {b['server_cpu']:.0%}, "
        f"{b['cpu_ms']:.2f} ms cpu per request; bench cpu {b['bench_cpu']:.0%}): ratio {ratio:.3f} "
        f"(cpu per request ratio {b['cpu_ms'] / g['cpu_ms']:.3f}); without round {{ number }} (diagnostic) GraphQL "
        f"{lean['rps']:.0f} req/s, {lean['cpu_ms']:.2f} ms cpu per request; "
        f"SQL per page (warm caches) "
        + ", ".join(f"{size}: {c.summary()}" for size, c in counts.items())
        + f"; first request of a fresh process (caches cold): {cold.summary()}; "
        f"depth: first page p50 {first_p50:.2f} ms (p95 {percentile(first, 95):.2f}), after {DEEP} rows p50 "
        f"{deep_p50:.2f} ms (p95 {percentile(deep, 95):.2f}): ratio {depth_ratio:.2f} "
        f"({len(first)} + {len(deep)} calls, {rounds} alternating rounds); plain SQL here: first {scale['first']:.2f} "
        f"ms, keyset after {DEEP} {scale['keyset']:.2f} ms, OFFSET {DEEP} {scale['offset']:.2f} ms"
        + (f"; {failures} failed calls" if failures else "")
    )
    target = (
        f"req/s >= {RATIO_TARGET:g} x baseline; queries per page equal at every size and <= {QUERIES_TARGET}; "
        f"page after {DEEP} rows p50 <= {DEPTH_TARGET:g} x first page p50"
    )
    return Result(ID, figures, target, passed)


async def run(ctx: Context) -> Result:
    """The runner's entry point; P5 runs its own server over its own seeded database (see the module docstring)."""
    return await measure(ctx.threads)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.p5_examples_page", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--baseline-serve",
        nargs=2,
        metavar=("DATABASE", "PORT"),
        help="serve the baseline app (what the benchmark starts in its own process)",
    )
    args = parser.parse_args()
    if args.baseline_serve:
        serve_baseline(args.baseline_serve[0], int(args.baseline_serve[1]))
        return
    print(asyncio.run(measure(default_threads())).line())


if __name__ == "__main__":
    main()
