"""E1: the demo's boards, as a newcomer running ``make run`` sees them fill.

Starts ``dynaforge demo`` of its own (a fresh ``--data-dir`` in a temporary folder, on a free loopback port, every
installed task) as a subprocess, waits until ``/healthz`` answers, and from then on reads each task's models and
leaderboard over GraphQL once a second, as the web app's board page would. A board is complete when every model it
lists (the round's target models, evaluated by the demo) has every evaluation finished: its demo scoring set and
each perturbed copy. Prints:

* **E1** the seconds from the server being ready to the last board complete (each task's own time beside it),
  target ≤ 90 s on a quiet 2-core machine; a board that never completes within ``TIMEOUT_S``, or an evaluation that
  FAILED, fails it;
* **E1i** the widest 95% interval on a board's principal metric, as a half-width: target ≤ 0.05 (the demo's scoring
  sets are large enough to tell models apart).

The figure includes what the demo does on its own: loading each target model once for all of its sets (not once per
set), and every evaluation's bootstrap intervals.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import Context, Result

ID = "E1"
TARGET_S = 90.0
HALF_WIDTH = 0.05
TIMEOUT_S = 600.0
START_TIMEOUT_S = 240.0  # the demo migrates, seeds every task and builds its sets before it listens

TASKS = "{ tasks { code principalMetric } }"
DATASETS = """query($code: String!) { task(code: $code) { id datasets { nodes { name } } } }"""
#: Principal metrics on a 0-100 scale (sacrebleu's): their interval is compared with the target over 100.
PERCENT_METRICS = frozenset({"chrf", "chrf_pp", "bleu", "ter"})
MODELS = """query($code: String!) { task(code: $code) { id models(first: 100) { nodes { name status
  evaluations { nodes { status dataset { name } } } } } } }"""
BOARD = """query($code: String!) { task(code: $code) { id leaderboard { datasets
  rows { model { name } metrics { name value interval { low high } } } } } }"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _dynaforge() -> str:
    beside = Path(sys.executable).with_name("dynaforge")
    return str(beside) if beside.exists() else (shutil.which("dynaforge") or "dynaforge")


async def _post(http: httpx.AsyncClient, query: str, **variables: Any) -> dict[str, Any]:
    body = (await http.post("/graphql", json={"query": query, "variables": variables})).json()
    if body.get("errors"):
        raise RuntimeError(f"the demo answered {body['errors'][0].get('message')}")
    return body["data"]


async def _complete(http: httpx.AsyncClient, code: str) -> tuple[bool, int]:
    """Whether the task's board is complete (every listed model's evaluations finished), and how many FAILED."""
    models = (await _post(http, MODELS, code=code))["task"]["models"]["nodes"]
    if not models:
        return False, 0
    statuses = [e["status"] for m in models for e in m["evaluations"]["nodes"]]
    failed = statuses.count("FAILED")
    return bool(statuses) and all(s in ("DONE", "FAILED") for s in statuses), failed


async def _half_width(http: httpx.AsyncClient, code: str, principal: str) -> float | None:
    """The widest 95% interval on the principal metric over the board's rows, as a half-width."""
    board = (await _post(http, BOARD, code=code))["task"]["leaderboard"]
    widths = [
        (m["interval"]["high"] - m["interval"]["low"]) / 2
        for row in board["rows"]
        for m in row["metrics"]
        if m["name"] == principal and m["interval"] is not None
    ]
    return max(widths) if widths else None


async def measure() -> list[Result]:
    folder = Path(tempfile.mkdtemp(prefix="dynaforge-e1-"))
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("DYNAFORGE_DATABASE_URL", None)
    log = open(folder / "demo.log", "wb")  # noqa: SIM115, ASYNC230 - once, before the server starts; closed after it
    process = await asyncio.create_subprocess_exec(
        _dynaforge(), "demo", "--data-dir", str(folder / "data"), "--port", str(port),
        env=env, cwd=folder, stdout=log, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:
                if process.returncode is not None:
                    raise RuntimeError(f"the demo exited with {process.returncode} (see {folder / 'demo.log'})")
                try:
                    if (await http.get("/healthz")).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the demo did not answer /healthz within {START_TIMEOUT_S:g} s")
                await asyncio.sleep(0.2)
            ready = time.monotonic()
            listed = {t["code"]: t["principalMetric"] for t in (await _post(http, TASKS))["tasks"]}
            tasks = {}
            for code, principal in listed.items():  # a task without a demo scoring set has no demo board
                names = {d["name"] for d in (await _post(http, DATASETS, code=code))["task"]["datasets"]["nodes"]}
                if "demo-scoring" in names:
                    tasks[code] = principal
            done_at: dict[str, float] = {}
            failed: dict[str, int] = {}
            while len(done_at) < len(tasks) and time.monotonic() - ready < TIMEOUT_S:
                for code in tasks:
                    if code in done_at:
                        continue
                    complete, failed[code] = await _complete(http, code)
                    if complete:
                        done_at[code] = time.monotonic() - ready
                await asyncio.sleep(1.0)
            widths = {code: await _half_width(http, code, principal) for code, principal in tasks.items()}
            widths = {  # on a 0-1 scale, whatever the metric's own
                code: None if w is None else w / 100 if tasks[code] in PERCENT_METRICS else w
                for code, w in widths.items()
            }
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 30)
            except TimeoutError:
                process.kill()
                await process.wait()
        log.close()
    missing = sorted(set(tasks) - set(done_at))
    each = ", ".join(f"{code} {done_at[code]:.0f} s" for code in sorted(done_at))
    last = max(done_at.values(), default=float("inf"))
    figures = f"every board complete {last:.0f} s after the demo was ready ({each})"
    if missing:
        figures = f"boards not complete after {TIMEOUT_S:.0f} s: {', '.join(missing)} ({each})"
    if any(failed.values()):
        figures += f"; FAILED evaluations: {', '.join(f'{c} {n}' for c, n in sorted(failed.items()) if n)}"
    ok = not missing and not any(failed.values()) and last <= TARGET_S
    measured = {code: w for code, w in widths.items() if w is not None}
    widest = max(measured.values(), default=None)
    interval_figures = (
        "no board has an interval on its principal metric"
        if widest is None
        else f"widest 95% interval ±{widest:.3f} ("
        + ", ".join(f"{code} ±{w:.3f}" for code, w in sorted(measured.items()))
        + ")"
    )
    without = sorted(set(tasks) - set(measured))
    if without and widest is not None:
        interval_figures += f"; none on {', '.join(without)}"
    return [
        Result(ID, figures, f"<= {TARGET_S:.0f} s on a quiet 2-core machine, none FAILED", ok),
        Result(
            "E1i",
            interval_figures,
            f"<= ±{HALF_WIDTH} on every board's principal metric",
            widest is not None and widest <= HALF_WIDTH and not without,
        ),
    ]


async def run(ctx: Context) -> list[Result]:
    """Its own demo server (the run's server stays as it is); ``ctx`` is not used."""
    try:
        return await measure()
    except Exception as exc:  # noqa: BLE001 - a benchmark that cannot measure says why and fails
        return [Result(ID, f"could not be measured: {exc}", f"<= {TARGET_S:.0f} s", False)]


if __name__ == "__main__":  # `python -m bench.e1_demo_boards`: E1 alone, without the shared server
    for result in asyncio.run(measure()):
        print(result.line())
