"""P3: 32 annotators at once against one at a time (the model worker's micro-batching).

Closed loops: each annotator (its own account) sends its next createExample when the previous one returned. The
phases run 1, 32, 32, 1 (each measured for a fixed time after a warm-up that lets the crowd reach a steady state);
phases of one kind are pooled. Targets: throughput with 32 >= 1.5 x one at a time, and p95 latency with 32
<= 100 ms (MiniLM, statements well under 64 tokens).

For scale, the bare model's own rate on batches of 32 (in this process, the worker's thread count) is printed: a
closed loop without think time has 32 calls in flight, so its mean latency is 32 / throughput (Little's law) and
can only reach the p95 target if the served rate comes near 32 / 0.1 s.

The worker's mean batch size over the 32-annotator phases comes from its batching counters (read before and after
through its Unix socket; see ``worker_batch_stats``), as items per batch and items per forward pass (a batch is
split into forward passes of similar length).
"""

from __future__ import annotations

import asyncio
import time

from bench.common import (
    STATEMENTS, Context, CpuMeter, Phase, Result, annotate, bare_model, closed_loop, mean_shares, percentile,
    pooled_latencies, pooled_throughput, worker_batch_stats,
)

ID = "P3"
CROWD = 32
SPEEDUP_TARGET = 1.5
P95_TARGET_MS = 100.0
WARMUP_S = 1.0
MEASURE_S = 4.0
BARE_BATCHES = 5
SETTLE_S = 0.3


def bare_batched_rate(ctx: Context) -> float:
    """Examples/s of the bare model predicting CROWD statements in one call: the ceiling batching can reach."""
    model = bare_model(ctx)
    batch = [{"statement": STATEMENTS[i % len(STATEMENTS)][0]} for i in range(CROWD)]
    model.predict(batch)  # warm-up
    started = time.perf_counter()
    for _ in range(BARE_BATCHES):
        model.predict(batch)
    return BARE_BATCHES * CROWD / (time.perf_counter() - started)


async def run(ctx: Context) -> Result:
    call = annotate(ctx.http, ctx.server)
    worker_pid = ctx.server.worker_pid()
    phases: dict[int, list[Phase]] = {1: [], CROWD: []}
    batches = {"batches": 0, "items": 0, "forward_passes": 0}
    batch_stats_known = worker_pid is not None
    meters: list[CpuMeter] = []
    ceiling = bare_batched_rate(ctx)
    await asyncio.sleep(SETTLE_S)  # the bare model's OpenMP threads stop spinning
    for callers in (1, CROWD, CROWD, 1):
        before = await worker_batch_stats(worker_pid) if callers == CROWD and worker_pid else None
        with CpuMeter(ctx.server.pid, worker_pid) as meter:
            phases[callers].append(await closed_loop(callers, call, warmup_s=WARMUP_S, measure_s=MEASURE_S))
        if callers == CROWD:
            meters.append(meter)
            after = await worker_batch_stats(worker_pid) if worker_pid else None
            if before is None or after is None:
                batch_stats_known = False
            else:
                for key in batches:
                    batches[key] += after[key] - before[key]

    single, crowd = pooled_throughput(phases[1]), pooled_throughput(phases[CROWD])
    crowd_latencies, single_latencies = pooled_latencies(phases[CROWD]), pooled_latencies(phases[1])
    speedup, p95 = crowd / single, percentile(crowd_latencies, 95)
    failures = sum(p.failures() for kind in phases.values() for p in kind)
    if batch_stats_known and batches["batches"]:
        batching = (f"worker mean batch {batches['items'] / batches['batches']:.1f} "
                    f"({batches['items'] / max(1, batches['forward_passes']):.1f} per forward pass)")
    else:
        batching = "worker mean batch n/a (its counters could not be read)"
    figures = (
        f"{crowd:.1f} examples/s with {CROWD} annotators vs {single:.1f}/s one at a time: {speedup:.2f}x; "
        f"{CROWD} annotators p50 {percentile(crowd_latencies, 50):.1f} ms p95 {p95:.1f} ms "
        f"(one at a time p50 {percentile(single_latencies, 50):.1f} ms p95 {percentile(single_latencies, 95):.1f}); "
        f"{batching}; bare predict() of {CROWD} at once {ceiling:.0f} examples/s; crowd cpu {mean_shares(meters)}"
        + f"; 2 x {MEASURE_S:g} s per kind" + (f"; {failures} calls not CreatedExample" if failures else "")
    )
    target = f"throughput >= {SPEEDUP_TARGET:g}x one at a time and p95 <= {P95_TARGET_MS:g} ms"
    return Result(ID, figures, target, speedup >= SPEEDUP_TARGET and p95 <= P95_TARGET_MS and not failures)
