"""LOAD: requests/s and latency under a closed-loop mix of reads and createExample (informational, no target).

Against the server under test (the runner's ``dynaforge serve``, its model worker serving the sentiment model as in
P1), CALLERS callers, each signed in as its own annotator (the accounts ``prepare`` registered), send their next
request when the previous one returned, for WARMUP_S + MEASURE_S. Each call is drawn (seeded, per caller) from MIX:
80% reads, 20% each of

* ``task``: ``task(code) { code name currentRound { number collected fooled pending } }``;
* ``examples``: the caller's own newest examples, a page of 20;
* ``leaderboard``: the task's leaderboard (on this server no model is published, so the board is empty: this reads
  the task's data sets and models and computes an empty board; P6q measures a full one);
* ``myStats``: the caller's counters per round and in total;

and 20% ``createExample`` (the statements of ``common.STATEMENTS``, a model prediction each).

Figures: throughput over the measured window (all calls, reads, createExample), p50 and p99 latency of all calls and
of each kind, failures, and the CPU shares of the API process, the model worker and this benchmark process. There
is no target: the line ends in INFO and never fails the run.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from bench.common import (
    TASK,
    Context,
    CpuMeter,
    Result,
    closed_loop,
    create_example,
    graphql,
    ms,
    percentile,
)

ID = "LOAD"
INFORMATIONAL = True  # the runner reports a failure to measure as INFO too
CALLERS = 16
WARMUP_S = 3.0
MEASURE_S = 30.0
SEED = 1606
MIX = (("task", 20), ("examples", 20), ("leaderboard", 20), ("myStats", 20), ("createExample", 20))

READS = {
    "task": "query Task($code: String!) { task(code: $code) { code name currentRound { number collected fooled "
    "pending } } }",
    "examples": "query Mine($code: String!) { task(code: $code) { id examples(first: 20, mine: true) { edges { "
    "cursor node { id fields prediction { label } fooled status createdAt round { number } } } "
    "pageInfo { hasNextPage endCursor } } } }",
    "leaderboard": "query Board($code: String!) { task(code: $code) { id leaderboard { principalMetric datasets "
    "metricWeights { name weight } rows { rank dynascore missing model { modelId name submitter { username } } "
    "metrics { name value } } } } }",
    "myStats": "query Mine($code: String!) { task(code: $code) { id viewerStats { total { collected fooled "
    "verifiedFooled foolingRate } rounds { roundNumber stats { collected fooled } } } } }",
}


@dataclass(frozen=True)
class Record:
    kind: str
    started: float
    ended: float
    latency_ms: float
    ok: bool


async def run(ctx: Context) -> Result:
    server, http = ctx.server, ctx.http
    tokens = server.annotator_tokens
    if len(tokens) < CALLERS:
        raise RuntimeError(f"{CALLERS} annotators are needed, {len(tokens)} are registered")
    kinds = [k for k, _ in MIX]
    weights = [w for _, w in MIX]
    rngs = [random.Random(SEED + caller) for caller in range(CALLERS)]
    records: list[Record] = []

    async def call(caller: int, k: int) -> tuple[int, bool]:
        kind = rngs[caller].choices(kinds, weights)[0]
        token = tokens[caller]
        began = time.perf_counter()
        latency, ok = 0, False
        try:
            if kind == "createExample":
                created = await create_example(http, server, token, caller * 11 + k)
                latency, ok = created.latency_ns, created.ok
            else:
                started = time.perf_counter_ns()
                await graphql(http, server, READS[kind], token, code=TASK)
                latency, ok = time.perf_counter_ns() - started, True
        finally:  # an exception is counted as a failure by closed_loop too
            ended = time.perf_counter()
            records.append(Record(kind, began, ended, ms(latency) if ok else (ended - began) * 1000, ok))
        return latency, ok

    with CpuMeter(server.pid, server.worker_pid()) as meter:
        phase = await closed_loop(CALLERS, call, warmup_s=WARMUP_S, measure_s=MEASURE_S)

    window = phase.window_end - phase.window_start
    done = [r for r in records if r.ok and phase.window_start <= r.ended <= phase.window_end]
    counted = [r for r in records if r.started >= phase.window_start]
    latencies = [r.latency_ms for r in counted if r.ok]
    failures = sum(1 for r in counted if not r.ok)

    def rate(kind: str | None = None, reads: bool = False) -> float:
        return (
            sum(1 for r in done if (kind is None or r.kind == kind) and (not reads or r.kind != "createExample"))
            / window
        )

    per_kind = []
    for kind in kinds:
        values = [r.latency_ms for r in counted if r.ok and r.kind == kind]
        per_kind.append(
            f"{kind} {rate(kind):.1f}/s p50 {percentile(values, 50):.1f} ms p99 {percentile(values, 99):.1f}"
        )
    shares = " ".join(f"{name} {share:.0%}" for name, share in meter.used.items())
    mix = "/".join(f"{w}" for w in weights)
    figures = (
        f"{CALLERS} closed-loop callers (own annotator accounts), mix {mix} % of "
        f"{', '.join(kinds)}, {MEASURE_S:g}s after {WARMUP_S:g}s warm-up: {rate():.1f} req/s "
        f"(reads {rate(reads=True):.1f}/s, createExample {rate('createExample'):.1f}/s); all calls p50 "
        f"{percentile(latencies, 50):.1f} ms, p99 {percentile(latencies, 99):.1f} ms; "
        + "; ".join(per_kind)
        + f"; {failures} failed or not ExampleCreated; cpu {shares}; leaderboard: no published model on this server"
    )
    return Result(ID, figures, "none (informational)", True, info=True)
