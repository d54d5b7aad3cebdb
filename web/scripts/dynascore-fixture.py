"""Writes web/tests/dynascore-fixture.json: boards the server's Dynascore computes (dynaforge.evaluation.dynascore),
with every figure as Python's repr, for the web app's unit test to compare its own computation against bit for bit.

Run from the repository root: .venv/bin/python web/scripts/dynascore-fixture.py > web/tests/dynascore-fixture.json
"""

import json

from dynaforge.evaluation.dynascore import MetricSpec, ModelScores, compute_board

METRICS = [
    MetricSpec("accuracy", "higher"),
    MetricSpec("macro_f1", "higher"),
    MetricSpec("error", "lower"),
    MetricSpec("throughput", "higher"),
    MetricSpec("memory", "memory"),
    MetricSpec("robustness", "higher"),
]


def m(i, a, b):
    return ModelScores(str(i), {k: v for k, v in (("set-a", a), ("set-b", b)) if v is not None})


MODELS = [
    m(
        3,
        dict(accuracy=0.81, macro_f1=0.77, error=0.19, throughput=120.5, memory=1.25, robustness=0.9),
        dict(accuracy=0.62, macro_f1=0.60, error=0.38, throughput=118.0, memory=1.25, robustness=0.85),
    ),
    m(
        12,
        dict(accuracy=0.9, macro_f1=0.71, error=0.1, throughput=40.0, memory=3.5, robustness=0.7),
        dict(accuracy=0.7, macro_f1=0.66, error=0.3, throughput=41.0, memory=3.5, robustness=0.72),
    ),
    m(
        7,
        dict(accuracy=0.75, macro_f1=0.74, error=0.25, throughput=300.0, memory=0.5, robustness=0.95),
        dict(accuracy=0.55, macro_f1=0.5, error=0.45, throughput=290.0, memory=0.5, robustness=0.93),
    ),
    m(
        20,
        dict(accuracy=0.9, macro_f1=0.8, error=0.1, throughput=None, memory=None, robustness=None),
        dict(accuracy=0.71, macro_f1=0.7, error=0.29),
    ),
    m(5, dict(accuracy=0.5, macro_f1=0.4, error=0.5, throughput=10.0, memory=8.0, robustness=0.5), None),
    m(
        9,
        dict(accuracy=0.75, macro_f1=0.74, error=0.25, throughput=300.0, memory=0.5, robustness=0.95),
        dict(accuracy=0.55, macro_f1=0.5, error=0.45, throughput=290.0, memory=0.5, robustness=0.93),
    ),
]
CASES = [
    ("defaults", None, {"set-a": 1.0, "set-b": 1.0}),
    (
        "custom",
        {"accuracy": 1.5, "macro_f1": 3.0, "error": 0.5, "throughput": 2.0, "memory": 0.0, "robustness": 1.0},
        {"set-b": 2.5, "set-a": 1.0},
    ),
    ("one set, no speed", {"throughput": 0.0, "memory": 0.0, "robustness": 0.0}, {"set-a": 1.0, "set-b": 0.0}),
    ("set b only", {"accuracy": 0.0, "macro_f1": 1.0}, {"set-b": 1.0}),
]
out = {
    "models": [{"key": x.model_id, "scores": x.scores} for x in MODELS],
    "axes": [{"name": s.name, "direction": s.direction} for s in METRICS],
    "cases": [],
}
for name, mw, dw in CASES:
    b = compute_board(
        MODELS, METRICS, principal="accuracy", metric_weights=mw, dataset_weights=dw, memory_budget_gb=16.0
    )
    out["cases"].append(
        {
            "name": name,
            "metricWeights": mw,
            "datasetWeights": list(dw.items()),
            "rows": [
                {
                    "key": r.model_id,
                    "rank": r.rank,
                    "dynascore": None if r.dynascore is None else repr(r.dynascore),
                    "missing": r.missing,
                    "x": {k: (None if v is None else repr(v)) for k, v in r.x.items()},
                }
                for r in b.rows
            ],
            "amrs": {k: repr(v) for k, v in b.amrs.items()},
            "pairs": b.pairs,
            "fallback": b.amrs_fallback,
        }
    )
print(json.dumps(out, indent=1))
