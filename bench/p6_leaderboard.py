"""P6: the Dynascore computation for a leaderboard of 200 models over 10 data sets, and how it grows with the board.

What it measures: :func:`dynaforge.evaluation.dynascore.compute` itself, in this process (pure Python, as the API
process runs it when a leaderboard is asked for), on seeded random scores: 200 models × 10 data sets × 5 metrics
(accuracy as the principal metric, throughput, memory, robustness, fairness; default weights 4/1/1/1/1, equal
data-set weights), and the same shape with 400 models. The leaderboard *query* path (reading the scores from the
evaluation tables, GraphQL) comes with those tables and is not measured here; the server under test is not used.

Method: the two boards are built once; after a warm-up of both, rounds alternate 200 then 400, then 400 then 200
(ABBA), ROUND_CALLS calls of each per round, until MAX_ROUNDS or BUDGET_S, so that drift on a shared machine hits
both sizes alike. Each call is timed with ``perf_counter_ns``; the garbage collector stays on, as in the server.

Targets (same run): p95 at 200 models ≤ 50 ms; p50 at 400 models ≤ 2.2 × p50 at 200 models (the work is
O(M·D·K + M log M), so about 2× is expected). Printed too: the p50 and p95 of both sizes, the p95 ratio, and the
calls measured.
"""

from __future__ import annotations

import random
import time

from dynaforge.evaluation.dynascore import MetricSpec, ModelScores, compute

from bench.common import Context, Result, ms, percentile

ID = "P6"
P95_TARGET_MS = 50.0
RATIO_TARGET = 2.2
MODELS = 200
DATASETS = 10
SEED = 20210601
WARMUP_CALLS = 10
ROUND_CALLS = 10
MIN_ROUNDS = 4  # two of each order
MAX_ROUNDS = 40
BUDGET_S = 15.0  # no new round starts after this

METRICS = (
    MetricSpec("accuracy", "higher"),
    MetricSpec("throughput", "higher"),
    MetricSpec("memory", "memory"),
    MetricSpec("robustness", "higher"),
    MetricSpec("fairness", "higher"),
)


def board(models: int, datasets: int = DATASETS, seed: int = SEED) -> list[ModelScores]:
    """Seeded random scores in plausible ranges: accuracy 0.3-0.95, 5-500 examples/s, 0.5-12 GB, shares 0.2-1."""
    rng = random.Random(seed)
    return [
        ModelScores(f"model-{i:04d}", {
            f"dataset-{d:02d}": {
                "accuracy": rng.uniform(0.3, 0.95),
                "throughput": rng.uniform(5.0, 500.0),
                "memory": rng.uniform(0.5, 12.0),
                "robustness": rng.uniform(0.2, 1.0),
                "fairness": rng.uniform(0.2, 1.0),
            }
            for d in range(datasets)
        })
        for i in range(models)
    ]


def _time(models: list[ModelScores], calls: int, out: list[float]) -> None:
    for _ in range(calls):
        started = time.perf_counter_ns()
        compute(models, METRICS, principal="accuracy")
        out.append(ms(time.perf_counter_ns() - started))


def measure() -> Result:
    """The whole benchmark, synchronous (it needs neither the server nor the event loop)."""
    small, large = board(MODELS), board(2 * MODELS)
    rows = compute(small, METRICS, principal="accuracy")
    if len(rows) != MODELS or any(row.dynascore is None for row in rows):
        raise RuntimeError("the Dynascore board is incomplete: every seeded model should have a Dynascore")
    _time(small, WARMUP_CALLS, [])
    _time(large, WARMUP_CALLS, [])

    times: dict[int, list[float]] = {MODELS: [], 2 * MODELS: []}
    started = time.perf_counter()
    rounds = 0
    while rounds < MIN_ROUNDS or (rounds < MAX_ROUNDS and time.perf_counter() - started < BUDGET_S):
        order = (small, large) if rounds % 2 == 0 else (large, small)
        for models in order:
            _time(models, ROUND_CALLS, times[len(models)])
        rounds += 1

    t200, t400 = times[MODELS], times[2 * MODELS]
    p50_200, p95_200 = percentile(t200, 50), percentile(t200, 95)
    p50_400, p95_400 = percentile(t400, 50), percentile(t400, 95)
    ratio = p50_400 / p50_200
    figures = (
        f"Dynascore computation (compute(), pure Python, in the benchmark process; the leaderboard query path comes "
        f"with the evaluation tables) for {MODELS} models x {DATASETS} data sets x {len(METRICS)} metrics: "
        f"p50 {p50_200:.2f} ms, p95 {p95_200:.2f} ms; {2 * MODELS} models: p50 {p50_400:.2f} ms, "
        f"p95 {p95_400:.2f} ms; 400/200 ratio p50 {ratio:.2f}, p95 {p95_400 / p95_200:.2f} "
        f"({len(t200)} + {len(t400)} calls, {rounds} alternating rounds)"
    )
    target = (f"p95 at {MODELS} models <= {P95_TARGET_MS:g} ms; "
              f"p50 at {2 * MODELS} <= {RATIO_TARGET:g} x p50 at {MODELS}")
    return Result(ID, figures, target, p95_200 <= P95_TARGET_MS and ratio <= RATIO_TARGET)


async def run(ctx: Context) -> Result:
    """The runner's entry point; the server under test in ``ctx`` is not needed (see the module docstring)."""
    del ctx
    return measure()


if __name__ == "__main__":
    print(measure().line())
