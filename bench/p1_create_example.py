"""P1: one annotator's createExample against a bare ``predict()`` of the same model on the same statement, on SQLite
(the run's server) and on PostgreSQL (a second ``dynaforge serve`` of its own over a throwaway database on the local
PostgreSQL server, ``BENCH_POSTGRES``); one line each, ``P1`` and ``P1pg``.

The bare model is the sentiment plugin's ``load()`` in this process, with the worker's torch thread count. Rounds
alternate (bare then served, then served then bare, ...), each side over the same statements, after a warm-up of
both, so that drift on a shared machine hits both sides alike. Rounds go on up to MAX_ROUNDS or until BUDGET_S has
passed (at least two). Between sides the benchmark pauses briefly so that the idle side's OpenMP threads stop
spinning before the other side is timed.

Figures: served p50 / bare p50 (target <= 1.15) and the non-model work p50 (target <= 3 ms), where non-model work
is each call's latency minus the model time the example itself reports (``modelPredictions[].latency_ms``, the
worker's forward pass); served p50 - bare p50 is printed too, as a cross-check that needs no server figure.
For diagnosis: the CPU the API process and the worker spent per createExample, the round trip of ``/healthz``
(a plain Starlette JSON route) from this client, the floor that HTTP and the client itself put under any call, and
(on the P1 line) the floor the process split puts under it: the same model in a model worker called straight from
this process, against the bare model, in alternating rounds (``process_split_floor``).

The served calls go through ``RawConnection`` (one keep-alive connection, the requests prepared beforehand), not
httpx: httpx spends about 0.5 ms of CPU per call in this process, and that time would be counted as the server's.
"""

from __future__ import annotations

import asyncio
import time

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
RATIO_TARGET = 1.15
NON_MODEL_TARGET_MS = 3.0
PER_ROUND = 10
WARMUP_ROUNDS = 1
MIN_ROUNDS = 2  # one of each order
MAX_ROUNDS = 16
BUDGET_S = 40.0  # no new round starts after this (a loaded machine makes every call slow)
FLOOR_ROUNDS = 8  # rounds of the process-split diagnostic (process_split_floor)
SETTLE_S = 0.3  # lets the idle side's OpenMP threads stop spinning before the other side is timed


async def run(ctx: Context) -> list[Result]:
    results = [await measure(ctx, ctx.server, ID)]
    try:
        floor = await process_split_floor(ctx)
    except Exception as exc:  # a diagnostic: say why it is missing, never fail the target for it
        floor = f"the process split alone could not be measured ({type(exc).__name__}: {exc})"
    results[0] = Result(results[0].id, f"{results[0].figures}; {floor}", results[0].target, results[0].passed)
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


async def process_split_floor(ctx: Context) -> str:
    """The bare model against the same model in a model worker called straight from this process (no HTTP, no
    GraphQL, no database), in alternating rounds as above: what the process split alone (torch stays out of the API
    process, P8) puts under createExample on this machine. A diagnostic printed with P1, not a target."""
    from dynaforge.inference.remote import WorkerInferenceClient
    from dynaforge.tasks.base import ModelSpec

    model = bare_model(ctx)
    spec = ModelSpec(name="floor", backend="python", config={"factory": "dynaforge_sentiment.model:load"})
    worker = WorkerInferenceClient(threads=ctx.threads, plugins_allowlist=TASK)
    bare: list[float] = []
    direct: list[float] = []
    try:
        await worker.start()
        await worker.warm_up(spec)
        for r in range(WARMUP_ROUNDS + FLOOR_ROUNDS):
            picks = [(r * PER_ROUND + i) % len(STATEMENTS) for i in range(PER_ROUND)]
            for side in ("bare", "direct") if r % 2 == 0 else ("direct", "bare"):
                await asyncio.sleep(SETTLE_S)
                for n in picks:
                    model_input = [{"statement": STATEMENTS[n][0]}]
                    started = time.perf_counter_ns()
                    if side == "bare":
                        model.predict(model_input)
                    else:
                        await worker.predict(spec, model_input)
                    if r >= WARMUP_ROUNDS:
                        (bare if side == "bare" else direct).append(ms(time.perf_counter_ns() - started))
    finally:
        await worker.close()
    ratio = percentile(direct, 50) / percentile(bare, 50)
    return (
        f"the process split alone (a model worker called from the benchmark, no HTTP, GraphQL or database): p50 "
        f"{percentile(direct, 50):.2f} ms vs bare {percentile(bare, 50):.2f} ms, ratio {ratio:.3f} "
        f"(n={len(direct)} + {len(bare)})"
    )


async def measure(ctx: Context, server: Server, result_id: str) -> Result:
    model = bare_model(ctx)
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
        await served_round(statements(r), [], [], [])
        await floor_round(PER_ROUND, [])

    bare: list[float] = []
    served: list[float] = []
    non_model: list[float] = []
    floor: list[float] = []
    failures: list[str] = []
    cpu = {"api": 0.0, "worker": 0.0}
    deadline = time.monotonic() + BUDGET_S
    rounds = 0
    while rounds < MAX_ROUNDS and (rounds < MIN_ROUNDS or time.monotonic() < deadline):
        picks = statements(WARMUP_ROUNDS + rounds)
        for side in ("bare", "served") if rounds % 2 == 0 else ("served", "bare"):
            await asyncio.sleep(SETTLE_S)
            if side == "bare":
                bare_round(picks, bare)
                continue
            with CpuMeter(server.pid, worker_pid) as meter:
                await served_round(picks, served, non_model, failures)
            for name in cpu:
                cpu[name] += meter.seconds.get(name, 0.0)
            await floor_round(PER_ROUND, floor)  # after the meter: only createExample calls are metered
        rounds += 1

    await connection.close()
    served_p50, bare_p50 = percentile(served, 50), percentile(bare, 50)
    ratio = served_p50 / bare_p50
    non_model_p50 = percentile(non_model, 50)
    calls = max(1, len(served) + len(failures))
    passed = ratio <= RATIO_TARGET and non_model_p50 <= NON_MODEL_TARGET_MS and not failures
    figures = (
        f"{server.database}: createExample p50 {served_p50:.2f} ms (p95 {percentile(served, 95):.2f}) "
        f"vs bare predict() p50 "
        f"{bare_p50:.2f} ms (p95 {percentile(bare, 95):.2f}): ratio {ratio:.3f}; non-model work p50 "
        f"{non_model_p50:.2f} ms (served p50 - bare p50 = {served_p50 - bare_p50:.2f} ms); "
        f"cpu per createExample: api {cpu['api'] * 1000 / calls:.2f} ms, worker {cpu['worker'] * 1000 / calls:.2f} ms; "
        f"/healthz round trip p50 {percentile(floor, 50):.2f} ms; "
        f"n={len(served)} served, {len(bare)} bare in {rounds} alternating rounds"
        + (f"; {len(failures)} calls not CreatedExample ({', '.join(sorted(set(failures)))})" if failures else "")
    )
    return Result(
        result_id, figures, f"ratio <= {RATIO_TARGET} and non-model p50 <= {NON_MODEL_TARGET_MS:g} ms", passed
    )
