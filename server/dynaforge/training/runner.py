"""One training job, from the job actor's thread: data in, confined recipe process, candidate out.

Steps, each safe to repeat (a worker killed at any point and started again runs the job from the beginning: a recipe
is deterministic for a seed, its weights are stored by digest, and a job registers one candidate at most):

1. the job is marked RUNNING (a cancelled or finished job is left alone);
2. the data sets' items (the field values they froze, gold as validated) are written to a JSON-lines file in a
   private working folder under the data directory;
3. :mod:`dynaforge.training.child` runs the recipe in a process of its own session, confined, with no database URL
   or secret; its progress lines become ``trainingProgress`` events and the job's ``progress``/``stage``. The job is
   polled for cancellation every second and stopped (its process group killed) when cancelled or past
   ``TRAINING_TIMEOUT_S``;
4. the weights go into the model store by digest; in one transaction the candidate is registered, becomes an
   unpublished model of the owner who asked with an evaluation queued on every scoring set, the parent gets its own
   evaluated model if it has none yet, and the job is SUCCEEDED. The evaluations are sent after the commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlmodel import col

from dynaforge.db.engine import Database
from dynaforge.db.models import (
    Dataset,
    DatasetItem,
    RegisteredModel,
    RegisteredModelOrigin,
    Round,
    TaskRow,
    TrainingJob,
    TrainingStatus,
    utcnow,
)
from dynaforge.model_artifacts import ArtifactStore
from dynaforge.plugins import Plugins
from dynaforge.sandbox import scrubbed_environment
from dynaforge.services import registry
from dynaforge.services.announce import update_payload, update_topic
from dynaforge.services.training import base_data_dir, mark, submit_for_evaluation
from dynaforge.settings import Settings
from dynaforge.tasks.training import examples_digest
from dynaforge.training.child import FAILED, MEMORY_ENV, PROGRESS_FD

log = logging.getLogger(__name__)

POLL_S = 1.0


def lineage_name(model: str, rounds: list[int], other_sets: int, *, base: bool, job_id: int) -> str:
    """A trained candidate's name, which says where it comes from: the recipe's model, what it was trained on (the
    task's base data, the rounds whose data sets it read, other sets) and its job, e.g. ``minilm-nli (retrained on
    base+r1+r2, job 7)``. Promoted, it names the round's target in ``modelPredictions[].model``, so a round's
    predictions never pass for the shipped model's."""
    parts = (["base"] if base else []) + [f"r{n}" for n in rounds]
    if other_sets:
        parts.append(f"{other_sets} other set{'s' if other_sets > 1 else ''}")
    return f"{model} (retrained on {'+'.join(parts) or 'nothing'}, job {job_id})"[:100]


class TrainingKilled(RuntimeError):
    """The recipe's process died from a signal (the OOM killer, an operator): the job is delivered again."""


def progress_topic(job_id: int) -> str:
    return f"trainingProgress:{job_id}"


class _Settled(Exception):
    def __init__(self, status: str, error: str | None = None, log_tail: str | None = None):
        super().__init__(status)
        self.status, self.error, self.log_tail = status, error, log_tail


class JobRun:
    """One delivery of a training job."""

    def __init__(
        self,
        settings: Settings,
        job_id: int,
        *,
        enqueue: Callable[[list[int]], None] | None = None,
        publish: Callable[[str, dict[str, Any]], None] | None = None,
        plugins: Plugins | None = None,
    ) -> None:
        self.settings = settings
        self.job_id = job_id
        self.enqueue = enqueue
        self.publish = publish
        self.plugins = plugins or Plugins(allowlist=settings.plugin_allowlist())
        self.latest: dict[str, Any] = {}
        self.task_id: int | None = None  # the job's task, once read

    def event(self, *, stored: bool = True, **values: Any) -> None:
        """``trainingProgress`` of the job; with ``stored`` (the change is in the database), ``trainingJobUpdated``
        of its task too (its subscribers read the job: progress is stored about every second, see :meth:`_train`)."""
        self.announce(progress_topic(self.job_id), {"job_id": self.job_id, **values})
        if stored and self.task_id is not None:
            self.announce(update_topic("trainingJobUpdated", self.task_id), update_payload(self.task_id, [self.job_id]))

    def announce(self, topic: str, payload: dict[str, Any]) -> None:
        if self.publish is None:
            return
        try:
            self.publish(topic, payload)
        except Exception:  # noqa: BLE001 - a lost progress event never fails the job
            log.warning("could not publish %s", topic, exc_info=True)

    async def run(self) -> None:
        db = Database(self.settings.database_url)
        try:
            await self._run(db)
        finally:
            await db.dispose()

    async def _run(self, db: Database) -> None:
        async with db.write() as s:
            job = await s.get(TrainingJob, self.job_id)
            if job is None or job.status in TrainingStatus.FINISHED:
                return
            self.task_id = job.task_id
            cancelled = job.cancel_requested
            if cancelled:
                await mark(s, job.id, status=TrainingStatus.CANCELLED, finished_at=utcnow(), stage="cancelled")
            else:
                task_row = await s.get(TaskRow, job.task_id)
                await mark(
                    s,
                    job.id,
                    status=TrainingStatus.RUNNING,
                    started_at=utcnow(),
                    attempts=job.attempts + 1,
                    progress=0.0,
                    stage="reading data",
                    error=None,
                )
                items = await self._data(s, job)
                dev = await self._dev(s, job)
        if cancelled:
            self.event(status=TrainingStatus.CANCELLED, progress=job.progress, stage="cancelled")
            return
        self.event(status=TrainingStatus.RUNNING, progress=0.0, stage="reading data")
        assert task_row is not None
        task = self.plugins.task(task_row.code)
        try:
            if task is None:
                raise _Settled(TrainingStatus.FAILED, f"task {task_row.code} is not installed where the job ran")
            recipe = task.training_recipe(job.recipe)
            if recipe is None:
                raise _Settled(TrainingStatus.FAILED, f"task {task.code} has no training recipe {job.recipe!r}")
            base = base_data_dir(self.settings, task) if job.include_base_data else None
            if job.include_base_data and base is None:
                raise _Settled(
                    TrainingStatus.FAILED,
                    f"the base data of {task.code} is not on this worker (DYNAFORGE_TRAINING_DATA_DIR/{task.code})",
                )
            work_root = self.settings.data_dir.absolute() / "training"
            work_root.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(prefix=f"job-{job.id}-", dir=work_root))
            try:
                examples, sources = items
                if job.tuning_dataset_id is not None and dev is None:
                    raise _Settled(TrainingStatus.FAILED, "the data set to tune on (tuneOn) was deleted; start again")
                metrics = await self._train(job, task.code, base, examples, sources, work, db, dev)
                await self._register(db, job, task.code, work / "out", metrics, examples, sources, base)
            finally:
                shutil.rmtree(work, ignore_errors=True)
        except _Settled as settled:
            async with db.write() as s:
                await mark(
                    s,
                    job.id,
                    status=settled.status,
                    error=settled.error,
                    log_tail=settled.log_tail,
                    finished_at=utcnow(),
                    stage=settled.status.lower(),
                )
            self.event(
                status=settled.status,
                progress=self.latest.get("progress", 0.0),
                stage=settled.status.lower(),
                error=settled.error,
            )

    async def _data(self, s: Any, job: TrainingJob) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        examples: list[dict[str, Any]] = []
        sources = []
        datasets = {d.id: d for d in await s.scalars(select(Dataset).where(col(Dataset.id).in_(job.dataset_ids)))}
        for dataset_id in job.dataset_ids:
            dataset = datasets.get(dataset_id)
            if dataset is None:
                continue  # deleted since: the record says which were used
            rows, source = await _read_set(s, dataset)
            examples.extend(rows)
            sources.append(source)
        return examples, sources

    async def _dev(self, s: Any, job: TrainingJob) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
        """The development set's items and record, when the job tunes (None: it does not, or the set is gone)."""
        if job.tuning_dataset_id is None:
            return None
        dataset = await s.get(Dataset, job.tuning_dataset_id)
        return None if dataset is None else await _read_set(s, dataset)

    async def _train(
        self,
        job: TrainingJob,
        task_code: str,
        base: Path | None,
        examples: list[dict[str, Any]],
        sources: list[dict[str, Any]],
        work: Path,
        db: Database,
        dev: tuple[list[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        child, read_end = self._spawn(job, task_code, base, examples, sources, work, dev)
        relay = threading.Thread(target=self._relay, args=(read_end,), name=f"training-{job.id}", daemon=True)
        relay.start()
        stderr: list[bytes] = []
        drain = threading.Thread(
            target=lambda: stderr.append(child.stderr.read() if child.stderr else b""), daemon=True
        )
        drain.start()
        deadline = time.monotonic() + self.settings.training_timeout_s
        stored = -1.0
        try:
            while True:
                try:
                    status = await asyncio.to_thread(child.wait, POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                async with db.session() as s:  # a read: the write lock is taken only for news
                    current = await s.get(TrainingJob, job.id)
                    cancelled = current is None or current.cancel_requested
                progress = self.latest.get("progress")
                if not cancelled and progress is not None and progress != stored:
                    async with db.write() as s:
                        await mark(s, job.id, progress=progress, stage=self.latest.get("stage", ""))
                    stored = progress
                    self.announce(
                        update_topic("trainingJobUpdated", job.task_id), update_payload(job.task_id, [job.id])
                    )
                if cancelled:
                    _kill(child)
                    raise _Settled(TrainingStatus.CANCELLED)
                if time.monotonic() > deadline:
                    _kill(child)
                    raise _Settled(
                        TrainingStatus.FAILED,
                        f"the training ran past TRAINING_TIMEOUT_S ({self.settings.training_timeout_s:g} s) and was "
                        "stopped; train on fewer data or raise the limit",
                    )
        finally:
            relay.join(timeout=5)
            drain.join(timeout=5)
        tail = b"".join(stderr).decode("utf-8", "replace")[-8000:]
        if status < 0:
            raise TrainingKilled(f"training job {job.id}: the recipe's process was killed (signal {-status})")
        try:
            result = json.loads((work / "result.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            result = {"error": f"the recipe's process ended with status {status} and no result"}
        if status != 0 or "error" in result:
            raise _Settled(
                TrainingStatus.FAILED,
                str(result.get("error") or f"status {status}")[:3000],
                (result.get("log_tail") or tail)[-8000:] or None,
            )
        assert status != FAILED
        return dict(result.get("metrics") or {})

    def _spawn(
        self,
        job: TrainingJob,
        task_code: str,
        base: Path | None,
        examples: list[dict[str, Any]],
        sources: list[dict[str, Any]],
        work: Path,
        dev: tuple[list[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> tuple[subprocess.Popen[bytes], int]:
        """Write the job's data and start the recipe's process (in a session of its own); returns it and the read
        end of its progress pipe. Blocking, and short."""
        allowlist = self.settings.plugin_allowlist()
        data_file = work / "examples.jsonl"
        with open(data_file, "w", encoding="utf-8") as fh:
            for example in examples:
                fh.write(json.dumps(example, ensure_ascii=False) + "\n")
        tune = None
        if dev is not None:
            dev_file = work / "dev.jsonl"
            with open(dev_file, "w", encoding="utf-8") as fh:
                for example in dev[0]:
                    fh.write(json.dumps(example, ensure_ascii=False) + "\n")
            tune = {"dev": str(dev_file), "source": dev[1], "grid": list(job.tuning_grid or [{}])}
        spec = {
            "tune": tune,
            "task": task_code,
            "recipe": job.recipe,
            "hyperparameters": job.hyperparameters,
            "seed": job.seed,
            "examples": str(data_file),
            "sources": sources,
            "base_dir": str(base) if base is not None else None,
            "out_dir": str(work / "out"),
            "result": str(work / "result.json"),
            "plugins": None if allowlist is None else sorted(allowlist),
        }
        (work / "job.json").write_text(json.dumps(spec), encoding="utf-8")
        env = scrubbed_environment(keep={PROGRESS_FD})
        env["DYNAFORGE_DATA_DIR"] = str(self.settings.data_dir.absolute())
        env[MEMORY_ENV] = str(self.settings.training_memory_limit_mb)
        if self.settings.load_plugins is not None:
            env["DYNAFORGE_LOAD_PLUGINS"] = self.settings.load_plugins
        read_end, write_end = os.pipe()
        env[PROGRESS_FD] = str(write_end)
        try:
            child = subprocess.Popen(
                [sys.executable, "-m", "dynaforge.training.child", str(work / "job.json")],
                env=env,
                pass_fds=(write_end,),
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        finally:
            os.close(write_end)
        return child, read_end

    def _relay(self, read_end: int) -> None:
        with os.fdopen(read_end, "r", encoding="utf-8") as pipe:
            for line in pipe:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(event, dict):
                    continue
                self.latest = {"progress": float(event.get("progress", 0.0)), "stage": str(event.get("stage", ""))}
                self.event(status=TrainingStatus.RUNNING, stored=False, **self.latest)

    async def _register(
        self,
        db: Database,
        job: TrainingJob,
        task_code: str,
        out: Path,
        metrics: dict[str, Any],
        examples: list[dict[str, Any]],
        sources: list[dict[str, Any]],
        base: Path | None,
    ) -> None:
        stored = await asyncio.to_thread(ArtifactStore.from_settings(self.settings).add_folder, out)
        task = self.plugins.task(task_code)
        assert task is not None
        recipe = task.training_recipe(job.recipe)
        assert recipe is not None
        spec = recipe.model_spec(stored.digest)
        queued: list[int] = []
        async with db.session() as s:
            rounds = sorted(
                set(
                    await s.scalars(
                        select(col(Round.number))
                        .join(Dataset, col(Dataset.round_id) == col(Round.id))
                        .where(col(Dataset.id).in_([source["id"] for source in sources]))
                    )
                )
            )
            from_rounds = await s.scalar(
                select(func.count())
                .select_from(Dataset)
                .where(col(Dataset.id).in_([source["id"] for source in sources]), col(Dataset.round_id).is_not(None))
            )
        name = lineage_name(
            spec.name, rounds, len(sources) - int(from_rounds or 0), base=base is not None, job_id=job.id
        )
        async with db.write() as s:
            current = await s.get(TrainingJob, job.id)
            if current is None or current.status in TrainingStatus.FINISHED:
                return
            if current.cancel_requested:
                raise _Settled(TrainingStatus.CANCELLED)
            entry = await s.scalar(select(RegisteredModel).where(col(RegisteredModel.training_job_id) == job.id))
            if entry is None:
                entry = RegisteredModel(
                    task_id=job.task_id,
                    name=name,
                    backend=spec.backend,
                    config=spec.config,
                    spec_sha256=registry.spec_sha256(spec.backend, spec.config),
                    weights=stored.digest,
                    origin=RegisteredModelOrigin.TRAINED,
                    recipe=job.recipe,
                    # a tuning job's chosen values
                    hyperparameters={**job.hyperparameters, **((metrics.get("tuning") or {}).get("chosen") or {})},
                    seed=job.seed,
                    training_data={
                        "datasets": sources,
                        "examples": len(examples),
                        "examples_sha256": examples_digest(examples),
                        "base_data": base is not None,
                    },
                    metrics=metrics,
                    parent_id=job.parent_id,
                    training_job_id=job.id,
                    created_by=job.user_id,
                )
                s.add(entry)
                await s.flush()
            owner = job.user_id
            if owner is not None:
                queued += await submit_for_evaluation(
                    s,
                    entry,
                    user_id=owner,
                    name=f"{name} candidate",
                    description=f"Trained on the platform by training job {job.id} (recipe {job.recipe}, seed "
                    f"{job.seed}); a candidate target model, not yet promoted",
                )
                parent = await s.get(RegisteredModel, job.parent_id) if job.parent_id is not None else None
                if parent is not None:
                    queued += await submit_for_evaluation(
                        s,
                        parent,
                        user_id=owner,
                        name=f"{parent.name} (registered model {parent.id})",
                        description="A round's target model, evaluated to compare the candidates trained from it",
                    )
            await mark(
                s,
                job.id,
                status=TrainingStatus.SUCCEEDED,
                candidate_id=entry.id,
                progress=1.0,
                stage="done",
                finished_at=utcnow(),
                error=None,
            )
        if self.enqueue is not None and queued:
            try:
                self.enqueue(queued)
            except Exception as exc:  # noqa: BLE001 - the evaluations stay queued and are sent at the next start
                log.error("evaluations %s stay queued: %s", queued, exc)
        if queued:
            self.announce(update_topic("evaluationUpdated", job.task_id), update_payload(job.task_id, queued))
        self.event(status=TrainingStatus.SUCCEEDED, progress=1.0, stage="done", candidate_id=entry.id)


async def _read_set(s: Any, dataset: Dataset) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A data set's items' field values in order, and its record for the job (id, name, size, examples' digest)."""
    rows = [
        dict(fields)
        for fields in await s.scalars(
            select(col(DatasetItem.fields))
            .where(col(DatasetItem.dataset_id) == dataset.id)
            .order_by(col(DatasetItem.position))
        )
    ]
    return rows, {"id": dataset.id, "name": dataset.name, "size": len(rows), "sha256": examples_digest(rows)}


def _kill(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def run_job(
    settings: Settings,
    job_id: int,
    *,
    enqueue: Callable[[list[int]], None] | None = None,
    publish: Callable[[str, dict[str, Any]], None] | None = None,
) -> None:
    """Run one delivery of a training job (blocking; the job actor's thread)."""
    asyncio.run(JobRun(settings, job_id, enqueue=enqueue, publish=publish).run())
