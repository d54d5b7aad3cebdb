"""P8: the API process's resident memory while serving, and that it never imported torch.

The API process is the ``dynaforge serve`` process itself (not its model-worker child). Its peak resident set
(``VmHWM``) is reset once the server is ready and the annotators are registered (``/proc/<pid>/clear_refs``), so
that the peak read here covers exactly the serving traffic: every benchmark that ran before (P1-P3 and LOAD in a full
run) and a short mixed load of annotators and readers run here while RSS is also sampled. The peak over start-up and the
registrations (Argon2 password hashing) is printed for information. Where the peak cannot be reset, the decisive
figure is the largest sampled RSS during this benchmark's own load.

Torch is absent when none of its files (libtorch*.so, torch/_C) is mapped into the process (``/proc/<pid>/maps``);
the worker, which must have torch mapped, is checked the same way so that the probe is known to work. The worker's
RSS is printed for information.

The second half of P8 (evaluation reports peak RSS above a pre-model baseline) is a property of every evaluation:
the job's own process reads its RSS before loading the model and samples the peak while it predicts
(``dynaforge.services.evaluation_runner``, stored as ``Evaluation.memory_mb`` and tested in tests/test_jobs.py). It is
not re-measured here and does not decide PASS or FAIL.
"""

from __future__ import annotations

import asyncio

from bench.common import Context, Result, annotate, closed_loop, maps_torch, proc_status_kb, reader

ID = "P8"
RSS_TARGET_MB = 150.0
LOAD_S = 2.0
ANNOTATORS = 4
READERS = 4
SAMPLE_S = 0.1


def _mb(kb: int) -> float:
    return kb / 1024


async def run(ctx: Context) -> Result:
    pid = ctx.server.pid
    worker_pid = ctx.server.worker_pid()
    samples: list[int] = []
    done = asyncio.Event()

    async def sample() -> None:
        while not done.is_set():
            samples.append(proc_status_kb(pid, "VmRSS"))
            await asyncio.sleep(SAMPLE_S)

    sampler = asyncio.create_task(sample())
    try:
        await asyncio.gather(
            closed_loop(ANNOTATORS, annotate(ctx.http, ctx.server), warmup_s=0, measure_s=LOAD_S),
            closed_loop(READERS, reader(ctx.http, ctx.server), warmup_s=0, measure_s=LOAD_S),
        )
    finally:
        done.set()
        await sampler

    rss_now = proc_status_kb(pid, "VmRSS")
    peak = proc_status_kb(pid, "VmHWM") if ctx.peak_reset else max(samples)
    api_torch = maps_torch(pid)
    if worker_pid is not None:
        worker = (
            f"worker RSS {_mb(proc_status_kb(worker_pid, 'VmRSS')):.0f} MB "
            f"(torch mapped: {'yes' if maps_torch(worker_pid) else 'NO: the probe may be broken'})"
        )
    else:
        worker = "worker not running"
    peak_kind = "peak over all serving traffic (VmHWM)" if ctx.peak_reset else "sampled peak under load"
    figures = (
        f"API process RSS {_mb(peak):.1f} MB {peak_kind}, {_mb(rss_now):.1f} MB now, "
        f"{_mb(max(samples)):.1f} MB max sampled under load; torch in API process: {'YES' if api_torch else 'no'}; "
        f"{worker}; start-up and registrations peak {_mb(ctx.setup_peak_kb):.0f} MB (not serving traffic); "
        f"evaluation peak RSS above baseline: reported per evaluation (memoryMb), not re-measured here"
    )
    target = f"API serving peak RSS <= {RSS_TARGET_MB:g} MB without torch"
    return Result(ID, figures, target, _mb(peak) <= RSS_TARGET_MB and not api_torch)
