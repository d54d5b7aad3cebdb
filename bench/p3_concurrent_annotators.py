"""P3: 32 annotators at once against one at a time (the model worker's micro-batching).

"At once" is measured literally: 32 annotators (each its own account) submit one createExample each at the same
instant, a burst; the benchmark waits for all 32 answers, pauses, and repeats. Targets, against one annotator
submitting in a closed loop (phases alternate: one, bursts, bursts, one):

* throughput: 32 x bursts / the time the bursts took >= 1.5 x the one-annotator rate;
* latency: p95 of every call in the bursts <= 1.3 x the physical floor: the bare model (in this process, with the
  worker's thread count) predicting the same 32 statements as one batch, the least time 32 predictions can take
  on this machine (median of several calls, measured before and after the bursts). The earlier absolute 100 ms is
  beyond MiniLM on 2 cores, where one batch of 32 takes longer than that by itself.

For information it also runs 32 annotators in closed loops without think time (sustained saturation): there 32
calls are always in flight, so the mean latency is 32 / throughput (Little's law) whatever the batching does, and
the figure shows the server's ceiling rather than what an annotator waits. The bare model's rate on batches of
32 (in this process, with the worker's thread count) is printed for scale, and so is the worker's mean batch size
(its batching counters, read through its Unix socket; see ``worker_batch_stats``).

Each annotator is a ``RawConnection`` with its requests prepared beforehand (``raw_annotate``), not httpx: the
benchmark shares the machine's two cores with the server, and 32 httpx clients spent about a third of a core in
this process during the bursts, CPU that annotators on their own machines never take from the server.
"""

from __future__ import annotations

import asyncio
import time

from bench.common import (
    STATEMENTS,
    Context,
    CpuMeter,
    Phase,
    Result,
    bare_model,
    closed_loop,
    mean_shares,
    percentile,
    pooled_latencies,
    pooled_throughput,
    raw_annotate,
    worker_batch_stats,
)

ID = "P3"
CROWD = 32
SPEEDUP_TARGET = 1.5
FLOOR_FACTOR = 1.3
BURSTS = 10
BURST_GAP_S = 0.2
WARMUP_S = 1.0
MEASURE_S = 4.0
BARE_BATCHES = 5
SETTLE_S = 0.3


def bare_batch_ms(ctx: Context, warm_up: bool = True) -> list[float]:
    """Milliseconds of the bare model predicting CROWD statements in one call, BARE_BATCHES times: the floor of a
    burst's latency (and CROWD / it, the ceiling of batched throughput)."""
    model = bare_model(ctx)
    batch = [{"statement": STATEMENTS[i % len(STATEMENTS)][0]} for i in range(CROWD)]
    if warm_up:
        model.predict(batch)
    times = []
    for _ in range(BARE_BATCHES):
        started = time.perf_counter_ns()
        model.predict(batch)
        times.append((time.perf_counter_ns() - started) / 1e6)
    return times


async def bursts(call) -> tuple[list[float], float, int]:
    """BURSTS bursts of CROWD simultaneous calls: (latencies in ms, seconds the bursts took, failed calls)."""
    latencies: list[float] = []
    busy, failures = 0.0, 0
    await asyncio.gather(*(call(i, 9000 + i) for i in range(CROWD)))  # warm-up burst
    for b in range(BURSTS):
        await asyncio.sleep(BURST_GAP_S)
        started = time.perf_counter()
        results = await asyncio.gather(*(call(i, 10_000 + b * CROWD + i) for i in range(CROWD)), return_exceptions=True)
        busy += time.perf_counter() - started
        for result in results:
            if isinstance(result, BaseException) or not result[1]:
                failures += 1
            else:
                latencies.append(result[0] / 1e6)
    return latencies, busy, failures


async def run(ctx: Context) -> Result:
    call = raw_annotate(ctx.server, CROWD)
    worker_pid = ctx.server.worker_pid()
    singles: list[Phase] = []
    burst_latencies: list[float] = []
    burst_busy, failures = 0.0, 0
    batches = {"batches": 0, "items": 0, "forward_passes": 0}
    batch_stats_known = worker_pid is not None
    meters: list[CpuMeter] = []
    floor_samples = bare_batch_ms(ctx)
    await asyncio.sleep(SETTLE_S)  # the bare model's OpenMP threads stop spinning
    for kind in ("one", "bursts", "bursts", "one"):
        if kind == "one":
            singles.append(await closed_loop(1, call, warmup_s=WARMUP_S, measure_s=MEASURE_S))
            continue
        before = await worker_batch_stats(worker_pid) if worker_pid else None
        with CpuMeter(ctx.server.pid, worker_pid) as meter:
            latencies, busy, failed = await bursts(call)
        meters.append(meter)
        burst_latencies += latencies
        burst_busy += busy
        failures += failed
        after = await worker_batch_stats(worker_pid) if worker_pid else None
        if before is None or after is None:
            batch_stats_known = False
        else:
            for key in batches:
                batches[key] += after[key] - before[key]
    sustained = await closed_loop(CROWD, call, warmup_s=WARMUP_S, measure_s=MEASURE_S)
    await asyncio.sleep(SETTLE_S)  # the server's threads settle before the floor is measured again
    floor_samples += bare_batch_ms(ctx, warm_up=False)
    floor = percentile(floor_samples, 50)
    ceiling = CROWD / (floor / 1000)

    single = pooled_throughput(singles)
    single_latencies = pooled_latencies(singles)
    crowd = (len(burst_latencies) + failures) / burst_busy
    speedup, p95 = crowd / single, percentile(burst_latencies, 95)
    p95_target = FLOOR_FACTOR * floor
    failures += sum(p.failures() for p in singles) + sustained.failures()
    if batch_stats_known and batches["batches"]:
        batching = (
            f"worker mean batch {batches['items'] / batches['batches']:.1f} "
            f"({batches['items'] / max(1, batches['forward_passes']):.1f} per forward pass)"
        )
    else:
        batching = "worker mean batch n/a (its counters could not be read)"
    sustained_latencies = sustained.latencies_ms()
    figures = (
        f"{crowd:.1f} examples/s in bursts of {CROWD} vs {single:.1f}/s one at a time: {speedup:.2f}x; "
        f"burst calls p50 {percentile(burst_latencies, 50):.1f} ms p95 {p95:.1f} ms = {p95 / floor:.2f}x the floor "
        f"(bare predict() of the {CROWD} statements as one batch, p50 {floor:.1f} ms) "
        f"(one at a time p50 {percentile(single_latencies, 50):.1f} ms p95 {percentile(single_latencies, 95):.1f}); "
        f"{batching}; sustained {CROWD} closed loops {sustained.throughput():.1f}/s, p50 "
        f"{percentile(sustained_latencies, 50):.0f} ms; bare predict() of {CROWD} at once {ceiling:.0f} examples/s; "
        f"burst cpu {mean_shares(meters)}; {2 * BURSTS} bursts"
        + (f"; {failures} calls not ExampleCreated" if failures else "")
    )
    target = (
        f"burst throughput >= {SPEEDUP_TARGET:g}x one at a time and burst p95 <= {FLOOR_FACTOR:g}x the floor "
        f"({p95_target:.0f} ms)"
    )
    return Result(ID, figures, target, speedup >= SPEEDUP_TARGET and p95 <= p95_target and not failures)
