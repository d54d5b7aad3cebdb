"""P1: one annotator's createExample against a bare ``predict()`` of the same model on the same statement, on SQLite
(the run's server) and on PostgreSQL (a second ``dynaforge serve`` of its own over a throwaway database on the local
PostgreSQL server, ``BENCH_POSTGRES``); one line each, ``P1`` and ``P1pg``.

Three sides over the same statements: the bare model (the sentiment plugin's ``load()`` in this process, with the
worker's torch thread count); the process-split floor (the same model in a model worker of the benchmark's own,
called straight from this process: no HTTP, GraphQL or database; what keeping torch out of the API process costs,
P8); and createExample on the server. Rounds rotate the order (each side first, second and third in turn) after a
warm-up of all three, so that drift on a shared machine hits them alike; they go on up to MAX_ROUNDS or until
BUDGET_S has passed (at least one of each order). Between sides the benchmark pauses briefly so that the idle
side's OpenMP threads stop spinning before the next side is timed.

Target (PERFORMANCE.md): createExample p50 <= the floor's p50 + 3 ms. Printed for reference: the ratio to the bare
model's p50 (and the floor's), the non-model work p50 (each call's latency less the forward pass the example
reports in ``modelPredictions[].latency_ms``), the CPU the API process and the worker spent per createExample, and
the round trip of ``/healthz`` (a plain Starlette JSON route), the floor that HTTP and the client put under any
call.

The served calls go through ``RawConnection`` (one keep-alive connection, the requests prepared beforehand), not
httpx: httpx spends about 0.5 ms of CPU per call in this process, and that time would be counted as the server's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.common import (
    STATEMENTS,
    TASK,
    Context,
    CpuMeter,
    RawConnection,
    Result,
    Server,
    bare_model,
    created_from,
    ms,
    percentile,
    postgres_database,
    prepare,
    prepared_creates,
    prepared_get,
    serve,
)

ID = "P1"
ID_POSTGRES = "P1pg"
TIMEOUT_S = 300.0  # two servers: the run's (SQLite) and one of its own on PostgreSQL, which loads the model again
OVER_FLOOR_TARGET_MS = 3.0  # createExample p50 over the process-split floor's p50
PER_ROUND = 10
WARMUP_ROUNDS = 1
MIN_ROUNDS = 3  # one of each order
MAX_ROUNDS = 18
BUDGET_S = 45.0  # no new round starts after this (a loaded machine makes every call slow)
SETTLE_S = 0.3  # lets the idle side's OpenMP threads stop spinning before the other side is timed


async def run(ctx: Context) -> list[Result]:
    results = [await measure(ctx, ctx.server, ID)]
    try:
        async with postgres_database() as url:
            with serve(ctx.threads, database_url=url) as server:
                await prepare(ctx.http, server)
                results.append(await measure(ctx, server, ID_POSTGRES))
    except Exception as exc:  # no PostgreSQL here: say so, and count it as not measured
        results.append(
            Result(ID_POSTGRES, f"could not be measured on PostgreSQL ({type(exc).__name__}: {exc})", "see P1", False)
        )
    return results


async def measure(ctx: Context, server: Server, result_id: str) -> Result:
    from dynaforge.inference.remote import WorkerInferenceClient
    from dynaforge.tasks.base import ModelSpec

    model = bare_model(ctx)
    # The floor: the same model in a model worker of the benchmark's own, called straight from this process (no HTTP,
    # GraphQL or database), with the server worker's thread count.
    spec = ModelSpec(name="floor", backend="python", config={"factory": "dynaforge_sentiment.model:load"})
    worker = WorkerInferenceClient(threads=ctx.threads, plugins_allowlist=TASK)
    await worker.start()
    try:
        await worker.warm_up(spec)
        return await _measure(ctx, server, result_id, model, lambda text: worker.predict(spec, [{"statement": text}]))
    finally:
        await worker.close()


async def _measure(
    ctx: Context, server: Server, result_id: str, model: Any, direct: Callable[[str], Awaitable[Any]]
) -> Result:
    token = server.annotator_tokens[0]
    worker_pid = server.worker_pid()
    # Timed through a bare keep-alive connection with prepared requests: httpx spends about 0.5 ms of CPU per call
    # in this process, which would count as the server's non-model work.
    connection = RawConnection(server.base_url)
    requests = prepared_creates(server, token)
    health = prepared_get(server, "/healthz")

    def statements(r: int) -> list[int]:
        return [(r * PER_ROUND + i) % len(STATEMENTS) for i in range(PER_ROUND)]

    def bare_round(picks: list[int], out: list[float]) -> None:
        for n in picks:
            model_input = [{"statement": STATEMENTS[n][0]}]
            started = time.perf_counter_ns()
            model.predict(model_input)
            out.append(ms(time.perf_counter_ns() - started))

    async def direct_round(picks: list[int], out: list[float]) -> None:
        for n in picks:
            started = time.perf_counter_ns()
            await direct(STATEMENTS[n][0])
            out.append(ms(time.perf_counter_ns() - started))

    async def served_round(picks: list[int], out: list[float], non_model: list[float], failures: list[str]) -> None:
        for n in picks:
            started = time.perf_counter_ns()
            status, body = await connection.request(requests[n])
            latency = ms(time.perf_counter_ns() - started)
            created = created_from(status, body)
            if not created.ok:
                failures.append(created.kind)
                continue
            out.append(latency)
            if created.model_ms is not None:
                non_model.append(latency - created.model_ms)

    async def floor_round(count: int, out: list[float]) -> None:
        for _ in range(count):
            started = time.perf_counter_ns()
            status, _ = await connection.request(health)
            out.append(ms(time.perf_counter_ns() - started))
            if status != 200:
                raise RuntimeError(f"/healthz answered {status}")

    for r in range(WARMUP_ROUNDS):
        bare_round(statements(r), [])
        await direct_round(statements(r), [])
        await served_round(statements(r), [], [], [])
        await floor_round(PER_ROUND, [])

    bare: list[float] = []
    floor: list[float] = []
    served: list[float] = []
    non_model: list[float] = []
    health_trips: list[float] = []
    failures: list[str] = []
    cpu = {"api": 0.0, "worker": 0.0}
    deadline = time.monotonic() + BUDGET_S
    rounds = 0
    while rounds < MAX_ROUNDS and (rounds < MIN_ROUNDS or time.monotonic() < deadline):
        picks = statements(WARMUP_ROUNDS + rounds)
        for side in _ORDERS[rounds % len(_ORDERS)]:
            await asyncio.sleep(SETTLE_S)
            if side == "bare":
                bare_round(picks, bare)
            elif side == "direct":
                await direct_round(picks, floor)
            else:
                with CpuMeter(server.pid, worker_pid) as meter:
                    await served_round(picks, served, non_model, failures)
                for name in cpu:
                    cpu[name] += meter.seconds.get(name, 0.0)
                await floor_round(PER_ROUND, health_trips)  # after the meter: only createExample calls are metered
        rounds += 1

    await connection.close()
    served_p50, bare_p50, floor_p50 = percentile(served, 50), percentile(bare, 50), percentile(floor, 50)
    over_floor = served_p50 - floor_p50
    calls = max(1, len(served) + len(failures))
    passed = over_floor <= OVER_FLOOR_TARGET_MS and not failures
    figures = (
        f"{server.database}: createExample p50 {served_p50:.2f} ms (p95 {percentile(served, 95):.2f}) vs the "
        f"process-split floor (the model worker called directly) p50 {floor_p50:.2f} ms (p95 "
        f"{percentile(floor, 95):.2f}): {over_floor:+.2f} ms; vs bare predict() p50 {bare_p50:.2f} ms: ratio "
        f"{served_p50 / bare_p50:.3f} (the floor's {floor_p50 / bare_p50:.3f}); non-model work p50 "
        f"{percentile(non_model, 50):.2f} ms (latency less the forward pass); "
        f"cpu per createExample: api {cpu['api'] * 1000 / calls:.2f} ms, worker {cpu['worker'] * 1000 / calls:.2f} ms; "
        f"/healthz round trip p50 {percentile(health_trips, 50):.2f} ms; "
        f"n={len(served)} served, {len(floor)} direct, {len(bare)} bare in {rounds} rotating rounds"
        + (f"; {len(failures)} calls not ExampleCreated ({', '.join(sorted(set(failures)))})" if failures else "")
    )
    return Result(result_id, figures, f"p50 <= the floor + {OVER_FLOOR_TARGET_MS:g} ms", passed)


# Each side goes first, second and third in turn, so that drift on a shared machine hits all three alike.
_ORDERS = (
    ("bare", "direct", "served"),
    ("served", "bare", "direct"),
    ("direct", "served", "bare"),
)
