"""``python -m bench [ID ...]``: start the server under test once and run the chosen benchmarks (all by default).

Prints a header naming the machine, then one line per target (a benchmark may print several, P6 prints P6 and P6q;
LOAD prints an informational line marked INFO). Exits with 1 when any target failed or could not be measured, 0
when every one passed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import traceback
from types import ModuleType

from bench import (
    adversaries,
    e1_demo_boards,
    g1_reply_stream,
    g2_deferred_verdicts,
    load_mix,
    p1_create_example,
    p2_reads_contention,
    p3_concurrent_annotators,
    p4_evaluation,
    p5_examples_page,
    p6_leaderboard,
    p7_subscriptions,
    p8_memory,
    retrain,
    w_web,
)
from bench.common import (
    Context,
    Result,
    client,
    default_threads,
    machine_header,
    prepare,
    proc_status_kb,
    reset_peak_rss,
    serve,
)

BENCHMARKS: dict[str, ModuleType] = {
    m.ID: m
    for m in (
        p1_create_example,
        p2_reads_contention,
        p3_concurrent_annotators,
        p4_evaluation,
        p5_examples_page,
        p6_leaderboard,
        p7_subscriptions,
        g1_reply_stream,
        g2_deferred_verdicts,
        load_mix,
        p8_memory,
        w_web,
        retrain,
        adversaries,
        e1_demo_boards,
    )  # P8 after the server's targets: its peak covers their traffic; WEB runs a demo server of its own
}
BENCHMARK_TIMEOUT_S = 120.0  # a wedged server must not hang the run (a benchmark may set its own TIMEOUT_S)


async def _serverless(ids: list[str], threads: int) -> bool:
    """The chosen benchmarks when none needs the shared server (``NEEDS_SERVER = False``): no server starts."""
    passed = True
    for bench_id in ids:
        module = BENCHMARKS[bench_id]
        try:
            outcome = await asyncio.wait_for(module.run(None), getattr(module, "TIMEOUT_S", BENCHMARK_TIMEOUT_S))
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            outcome = Result(bench_id, f"could not be measured ({type(exc).__name__}: {exc})", "see above", False)
        for result in outcome if isinstance(outcome, list) else [outcome]:
            print(result.line(), flush=True)
            passed = passed and (result.passed or result.info)
    return passed


async def _run(ids: list[str], threads: int) -> bool:
    if not any(getattr(BENCHMARKS[i], "NEEDS_SERVER", True) for i in ids):
        return await _serverless(ids, threads)
    with serve(threads) as server:
        async with client() as http:
            started = time.perf_counter()
            await prepare(http, server)
            print(
                f"# server ready (model loaded, {len(server.annotator_tokens)} annotators registered) "
                f"in {time.perf_counter() - started:.1f}s; API pid {server.pid}, worker pid {server.worker_pid()}",
                flush=True,
            )
            setup_peak = proc_status_kb(server.pid, "VmHWM")
            ctx = Context(server, http, threads, setup_peak, reset_peak_rss(server.pid))
            passed = True
            for bench_id in ids:
                try:
                    module = BENCHMARKS[bench_id]
                    timeout = getattr(module, "TIMEOUT_S", BENCHMARK_TIMEOUT_S)
                    outcome = await asyncio.wait_for(module.run(ctx), timeout)
                except Exception as exc:  # report and go on with the next target
                    traceback.print_exc(file=sys.stderr)
                    reason = "timed out" if isinstance(exc, asyncio.TimeoutError) else f"{type(exc).__name__}: {exc}"
                    outcome = Result(
                        bench_id,
                        f"could not be measured ({reason})",
                        "see above",
                        False,
                        info=getattr(BENCHMARKS[bench_id], "INFORMATIONAL", False),
                    )
                for result in outcome if isinstance(outcome, list) else [outcome]:
                    print(result.line(), flush=True)
                    passed = passed and (result.passed or result.info)
            return passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "ids", nargs="*", metavar="ID", help=f"targets to run, of {', '.join(BENCHMARKS)} (default: all)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=int(os.environ.get("BENCH_THREADS", "0")) or None,
        help="torch intra-op threads for the worker and the bare model (default: the cores less one, as the server)",
    )
    args = parser.parse_args(argv)
    ids = [i.upper() for i in args.ids] or list(BENCHMARKS)
    unknown = [i for i in ids if i not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    ids = [i for i in BENCHMARKS if i in ids]  # the order matters: P8 measures after the traffic of the others
    threads = args.threads or default_threads()
    print(machine_header(threads), flush=True)
    return 0 if asyncio.run(_run(ids, threads)) else 1


if __name__ == "__main__":
    sys.exit(main())
