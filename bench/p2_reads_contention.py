"""P2: createExample throughput while GraphQL reads saturate the server.

Three kinds of closed-loop phase, each measured for a fixed time after a short warm-up:

* writes alone: ANNOTATORS annotators send createExample, each the next one when the previous returned;
* reads alone: READERS readers send a read query (the tasks with their current round's counters) as fast as the
  server answers;
* mixed: both at once.

The phases run as W R M M R W, so that drift on a shared machine falls on both sides alike; phases of one kind are
pooled. Targets: writes under reads >= 40% of writes alone, and read p99 under the mix <= 3 x read p99 alone.
The CPU each process used during the mixed phases is printed to show where the time went (the benchmark's own
client shares the machine too).
"""

from __future__ import annotations

import asyncio

from bench.common import (
    Context,
    CpuMeter,
    Phase,
    Result,
    annotate,
    closed_loop,
    mean_shares,
    percentile,
    pooled_latencies,
    pooled_throughput,
    reader,
)

ID = "P2"
THROUGHPUT_TARGET = 0.40
READ_P99_TARGET = 3.0
ANNOTATORS = 4
READERS = 8
WARMUP_S = 0.5
MEASURE_S = 4.0


async def run(ctx: Context) -> Result:
    write, read = annotate(ctx.http, ctx.server), reader(ctx.http, ctx.server)
    phases: dict[str, list[Phase]] = {"writes": [], "reads": [], "mixed writes": [], "mixed reads": []}
    meters: list[CpuMeter] = []
    worker_pid = ctx.server.worker_pid()

    async def writes_alone() -> None:
        phases["writes"].append(await closed_loop(ANNOTATORS, write, warmup_s=WARMUP_S, measure_s=MEASURE_S))

    async def reads_alone() -> None:
        phases["reads"].append(await closed_loop(READERS, read, warmup_s=WARMUP_S, measure_s=MEASURE_S))

    async def mixed() -> None:
        with CpuMeter(ctx.server.pid, worker_pid) as meter:
            writes, reads = await asyncio.gather(
                closed_loop(ANNOTATORS, write, warmup_s=WARMUP_S, measure_s=MEASURE_S),
                closed_loop(READERS, read, warmup_s=WARMUP_S, measure_s=MEASURE_S),
            )
        meters.append(meter)
        phases["mixed writes"].append(writes)
        phases["mixed reads"].append(reads)

    for step in (writes_alone, reads_alone, mixed, mixed, reads_alone, writes_alone):
        await step()

    alone, under = pooled_throughput(phases["writes"]), pooled_throughput(phases["mixed writes"])
    reads_alone_p99 = percentile(pooled_latencies(phases["reads"]), 99)
    mixed_reads = pooled_latencies(phases["mixed reads"])
    mixed_p99 = percentile(mixed_reads, 99)
    share, slowdown = under / alone, mixed_p99 / reads_alone_p99
    failures = sum(p.failures() for kind in ("writes", "mixed writes") for p in phases[kind])
    figures = (
        f"createExample {alone:.1f}/s alone vs {under:.1f}/s under reads: {share:.0%} ({ANNOTATORS} annotators); "
        f"read p99 {reads_alone_p99:.1f} ms alone vs {mixed_p99:.1f} ms mixed: {slowdown:.2f}x "
        f"(p50 {percentile(pooled_latencies(phases['reads']), 50):.1f} vs {percentile(mixed_reads, 50):.1f} ms); "
        f"reads {pooled_throughput(phases['reads']):.0f}/s alone, {pooled_throughput(phases['mixed reads']):.0f}/s "
        f"mixed ({READERS} readers); mixed cpu {mean_shares(meters)}"
        + f"; 2 x {MEASURE_S:g} s per kind"
        + (f"; {failures} writes not ExampleCreated" if failures else "")
    )
    target = f"writes under reads >= {THROUGHPUT_TARGET:.0%} of alone and read p99 mixed <= {READ_P99_TARGET:g}x alone"
    return Result(ID, figures, target, share >= THROUGHPUT_TARGET and slowdown <= READ_P99_TARGET)
