"""The process that runs one training recipe: ``python -m dynaforge.training.child JOB_FILE``.

``JOB_FILE`` is a JSON object written by :mod:`dynaforge.training.runner`: ``task``, ``recipe``,
``hyperparameters``, ``seed``, ``examples`` (a JSON-lines file of the examples' field values), ``sources``,
``base_dir`` (or null), ``out_dir``, ``result`` (where to write the metrics, or the error) and ``tune`` (null, or
the development set's JSON-lines file ``dev``, its record ``source`` and the ``grid`` of hyper-parameters to try:
:func:`dynaforge.tasks.training.tune_recipe`). The process confines
itself first (no core files, no new privileges, killed with its parent, ``RLIMIT_DATA`` from
``DYNAFORGE_TRAINING_MEMORY_LIMIT_MB``, no network where the kernel allows it), then imports the plugins. It has no
database URL and no secret: the runner reads the data and registers what it wrote. Progress goes, one JSON object per
line, to the file descriptor in ``DYNAFORGE_PROGRESS_FD``.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from dynaforge.evaluation.predictor import Limits, confine

PROGRESS_FD = "DYNAFORGE_PROGRESS_FD"
MEMORY_ENV = "DYNAFORGE_TRAINING_MEMORY_LIMIT_MB"
#: The exit status of a recipe that failed (its error is in the result file).
FAILED = 3


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m dynaforge.training.child JOB_FILE", file=sys.stderr)
        return 2
    job = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    network = confine(Limits(memory_mb=int(os.environ.get(MEMORY_ENV, "0") or 0), network=False))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    fd = os.environ.get(PROGRESS_FD)
    pipe = os.fdopen(int(fd), "w", encoding="utf-8", buffering=1) if fd else None

    def report(fraction: float, stage: str) -> None:
        if pipe is None:
            return
        fraction = min(1.0, max(0.0, float(fraction)))
        pipe.write(json.dumps({"progress": fraction, "stage": str(stage)[:100]}) + "\n")

    result = Path(job["result"])
    try:
        metrics = _train(job, report)
    except MemoryError:
        limit = os.environ.get(MEMORY_ENV, "0")
        _write(result, {"error": f"the recipe ran out of memory (TRAINING_MEMORY_LIMIT_MB is {limit})"})
        return FAILED
    except Exception as exc:  # noqa: BLE001 - any failure of the recipe is the job's result
        tail = "".join(traceback.format_exception(exc))[-8000:]
        _write(result, {"error": f"{type(exc).__name__}: {exc}"[:3000], "log_tail": tail, "network": network})
        return FAILED
    _write(result, {"metrics": metrics, "network": network})
    return 0


def _train(job: dict[str, Any], report: Any) -> dict[str, Any]:
    from dynaforge.plugins import Plugins
    from dynaforge.tasks.training import TrainingData, read_examples_jsonl, run_recipe, tune_recipe

    allowlist = job.get("plugins")
    plugins = Plugins(allowlist=None if allowlist is None else set(allowlist))
    task = plugins.task(job["task"])
    if task is None:
        raise RuntimeError(f"task {job['task']} is not installed in the training job's environment")
    recipe = task.training_recipe(job["recipe"])
    if recipe is None:
        raise RuntimeError(f"task {job['task']} has no training recipe {job['recipe']!r} any more")
    data = TrainingData(
        examples=tuple(read_examples_jsonl(job["examples"])),
        sources=tuple(job.get("sources") or ()),
        base_dir=Path(job["base_dir"]) if job.get("base_dir") else None,
    )
    tune = job.get("tune")
    if tune:
        return tune_recipe(
            recipe,
            task,
            data,
            read_examples_jsonl(tune["dev"]),
            job["out_dir"],
            grid=tune["grid"],
            seed=int(job["seed"]),
            hyperparameters=job.get("hyperparameters") or {},
            dev_source=tune.get("source"),
            report=report,
        )
    return run_recipe(
        recipe,
        data,
        job["out_dir"],
        seed=int(job["seed"]),
        hyperparameters=job.get("hyperparameters") or {},
        report=report,
    )


def _write(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, default=str), encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
