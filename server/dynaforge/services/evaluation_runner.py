"""Run evaluations (a model on a data set) to the end, resumably:
``python -m dynaforge.services.evaluation_runner ID...``.

The evaluations of one job are run one after the other, each model loaded once for all of its evaluations (a set and
its perturbed copies), so that a model's start-up is paid once, not once per set.

The job runs in a process of its own (started by the ``evaluate`` actor), so that the API never imports torch. The
model it evaluates runs in a second, confined process (:mod:`dynaforge.evaluation.predictor`): no secrets and no
database URL in its environment (this process reads the items and writes the results), resource limits, no network
when its backend needs none, stopped with the job. A crashing model takes nothing else down, and memory is measured
cleanly: the model's process reports its resident size before the model loads and its peak (``VmHWM``).

Steps, each safe to repeat (a worker killed at any point and started again leaves the rows a clean run leaves):

1. a finished evaluation is left alone; otherwise it is marked RUNNING (attempts + 1);
2. the data set's items are read chunk by chunk (``EVAL_CHUNK_SIZE`` items, in position order); a chunk whose
   outputs are already stored is skipped; the others are predicted in batches of similar length (sorted by the
   model's ``length()`` or the input's characters, so short inputs are not padded to long ones) and stored with an
   insert that does nothing if another run stored the chunk first; progress is written after each chunk;
3. from every chunk's outputs: the task's metrics, a bootstrap interval of each of them (seeded by the data
   set's id, so every model is resampled alike), per-slice metrics and gaps, throughput (items per second of
   prediction, model loading excluded) and peak memory above the baseline; written once, with a compare-and-set on
   the status;
4. the model's robustness and fairness are brought up to date: for each scoring set whose perturbed copies are done,
   the share of variants predicted like their original (Dynabench's consistency), averaged over robustness and over
   fairness perturbations, plus the copies' own task metrics; then the model's status is rolled up;
5. the plugins' ``evaluation_finished`` hook is called by the run whose compare-and-set moved the evaluation to DONE
   or FAILED, after that commit, in the process that ran it (:meth:`Runner.announce_finished`): once per finished
   evaluation, never for a repeated delivery that finds it done.

Progress events (start, each chunk, done, failed) go to ``Runner.progress``; in the child process, to the pipe named
by ``DYNAFORGE_PROGRESS_FD``, which the job actor relays to the event bus as ``evaluationProgress:{model id}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import col

from dynaforge import media
from dynaforge.db.engine import Database, rowcount
from dynaforge.db.models import (
    Dataset,
    DatasetAccess,
    DatasetItem,
    Evaluation,
    EvaluationChunk,
    Example,
    ModelRow,
    ModelStatus,
    TaskRow,
    utcnow,
)
from dynaforge.db.models import (
    EvaluationStatus as E,
)
from dynaforge.evaluation import scoring
from dynaforge.evaluation.hardware import hardware
from dynaforge.evaluation.predictor import (
    Limits,
    LocalModel,
    LogTail,
    ModelError,
    ModelProcess,
    ModelProcessLost,
)
from dynaforge.evaluation.variants import copy_gold
from dynaforge.model_artifacts import ArtifactStore
from dynaforge.plugins import Plugins
from dynaforge.sandbox import scrubbed_environment
from dynaforge.services import announce, visibility
from dynaforge.services.outputs import Outputs, read_outputs
from dynaforge.services.task_loading import load_if_declared
from dynaforge.settings import Settings
from dynaforge.tasks.base import Task

log = logging.getLogger("dynaforge.evaluation")

FAIRNESS = "fairness"
#: The environment variable naming the file descriptor the child writes progress events to, one JSON per line.
PROGRESS_FD = "DYNAFORGE_PROGRESS_FD"
#: The runner's exit status when the model's process was killed from outside: the job actor delivers it again.
LOST = 75


class Runner:
    def __init__(
        self, settings: Settings, plugins: Plugins | None = None, db: Database | None = None, *, isolate: bool = False
    ):
        """``isolate``: run the model in a confined process of its own (:class:`ModelProcess`), as evaluation jobs
        do; otherwise in this process (:class:`LocalModel`: tests whose plugins exist only in the test process)."""
        self.settings = settings
        self.isolate = isolate
        self.plugins = plugins or Plugins(allowlist=settings.plugin_allowlist())
        self._own_db = db is None
        self.db = db or Database(settings.database_url)
        #: Called with each progress event (see :meth:`report`); the child process writes them to its progress pipe.
        self.progress: Callable[[dict[str, Any]], None] | None = None
        #: The end of this process's log, recorded with a failure (the child process sets it).
        self.log_tail: LogTail | None = None

    def report(
        self, evaluation: Evaluation, dataset: Dataset, status: str, progress: float, error: str | None = None
    ) -> None:
        """An ``evaluationProgress`` event: when a run starts, after each chunk, and when it is done or failed."""
        if self.progress is None:
            return
        try:
            self.progress(
                {
                    "evaluation_id": evaluation.id,
                    "model_id": evaluation.model_id,
                    "task_id": dataset.task_id,
                    "dataset_id": dataset.id,
                    "dataset_name": dataset.name,
                    "status": status,
                    "progress": progress,
                    "error": error,
                }
            )
        except Exception:  # noqa: BLE001 - progress is news, never a reason to fail the job
            log.warning("could not report the progress of evaluation %s", evaluation.id, exc_info=True)

    async def close(self) -> None:
        if self._own_db:
            await self.db.dispose()

    async def _job(self, evaluation_id: int) -> _Job:
        """The evaluation, its model, its data set and its task's code; LookupError when one of them is gone."""
        async with self.db.session() as s:
            evaluation = await s.get(Evaluation, evaluation_id)
            if evaluation is None:
                raise LookupError(f"no evaluation {evaluation_id}")
            model = await s.get(ModelRow, evaluation.model_id)
            dataset = await s.get(Dataset, evaluation.dataset_id)
            if model is None or dataset is None:
                raise LookupError(f"evaluation {evaluation_id}'s model or data set was deleted")
            code = await s.scalar(select(col(TaskRow.code)).where(col(TaskRow.id) == dataset.task_id))
        if code is None:
            raise LookupError(f"evaluation {evaluation_id}'s task was deleted")
        await load_if_declared(self.db, self.plugins, code)  # a task declared since this worker started
        return _Job(evaluation, model, dataset, code)

    def _task(self, code: str) -> Task:
        task = self.plugins.task(code)
        if task is None:
            raise LookupError(f"task {code!r} is not installed in this worker")
        return task

    async def score_uploaded(self, evaluation_id: int, outputs: list[dict[str, Any]]) -> None:
        """An evaluation of uploaded predictions: the outputs are stored as its chunks and scored like a model's
        (on a scoring set, its public part shown and its private part held: see :meth:`_finish`); nothing is
        measured for speed or memory (throughput and memory stay empty on the board)."""
        job = await self._job(evaluation_id)
        size = self.settings.eval_chunk_size
        for chunk in range(max(1, math.ceil(len(outputs) / size))):
            part = outputs[chunk * size : (chunk + 1) * size]
            await self._store_chunk(evaluation_id, chunk, len(part), part, 0.0)
        finished = await self._finish(evaluation_id, self._task(job.task_code), job.dataset, None)
        async with self.db.write() as s:
            await s.execute(update(Evaluation).where(col(Evaluation.id) == evaluation_id).values(throughput=None))
        await self.refresh_model(job.evaluation.model_id)
        if finished:
            await self.announce_finished(evaluation_id)

    # ------------------------------------------------------------------ the job
    async def run(self, evaluation_id: int, *, stop_after_chunks: int | None = None) -> str:
        """Run (or resume) an evaluation; returns its final status. ``stop_after_chunks`` stops early (tests of
        resumption)."""
        models: dict[int, LocalModel | ModelProcess] = {}
        try:
            return await self._run_one(evaluation_id, models, stop_after_chunks=stop_after_chunks)
        finally:
            await self._close_models(models)

    async def run_many(self, evaluation_ids: list[int]) -> dict[int, str]:
        """Run (or resume) evaluations one after the other, each model loaded once for all of its evaluations (a
        set and its perturbed copies: loading is most of the time on small sets). An evaluation that fails is
        recorded FAILED (:meth:`fail`) and the others go on; a model that crashed is loaded again for the next.
        Returns each evaluation's final status. :class:`ModelProcessLost` (the model's process killed from
        outside) stops the lot unrecorded, for the job to deliver it again: what is done stays done."""
        models: dict[int, LocalModel | ModelProcess] = {}
        statuses: dict[int, str] = {}

        def log_lines() -> str:
            return "\n".join(self.log_tail.lines) if self.log_tail is not None else ""

        try:
            for evaluation_id in evaluation_ids:
                try:
                    statuses[evaluation_id] = await self._run_one(evaluation_id, models)
                except ModelProcessLost:
                    raise
                except LookupError as exc:  # deleted meanwhile: nothing to record
                    log.warning("evaluation %s skipped: %s", evaluation_id, exc)
                    statuses[evaluation_id] = "GONE"
                except ModelError as exc:  # the model's own failure, in words for the submitter
                    log.warning("evaluation %s failed: %s", evaluation_id, exc)
                    await self._drop_models(models)  # a model that crashed is loaded afresh for the next
                    await self.fail(evaluation_id, str(exc), log_lines())
                    statuses[evaluation_id] = E.FAILED
                except Exception as exc:  # recorded for the submitter
                    log.exception("evaluation %s failed", evaluation_id)
                    await self.fail(evaluation_id, f"{type(exc).__name__}: {exc}", log_lines())
                    statuses[evaluation_id] = E.FAILED
        finally:
            await self._close_models(models)
        return statuses

    async def _close_models(self, models: dict[int, LocalModel | ModelProcess]) -> None:
        for process in models.values():
            await asyncio.to_thread(process.close)
        models.clear()

    async def _drop_models(self, models: dict[int, LocalModel | ModelProcess]) -> None:
        try:
            await self._close_models(models)
        except Exception:  # noqa: BLE001 - a crashed model's process may not close cleanly; it is gone either way
            log.warning("a crashed model's process did not close cleanly", exc_info=True)
            models.clear()

    async def _run_one(
        self,
        evaluation_id: int,
        models: dict[int, LocalModel | ModelProcess],
        *,
        stop_after_chunks: int | None = None,
    ) -> str:
        """One evaluation, with its model taken from ``models`` (by model id) or loaded into it when a chunk needs
        predicting; the caller closes what ``models`` holds."""
        job = await self._job(evaluation_id)
        if job.evaluation.status == E.DONE:
            return E.DONE
        evaluation, model, dataset, task = job.evaluation, job.model, job.dataset, self._task(job.task_code)
        async with self.db.write() as s:
            await s.execute(
                update(Evaluation)
                .where(col(Evaluation.id) == evaluation_id, col(Evaluation.status) != E.DONE)
                .values(status=E.RUNNING, attempts=col(Evaluation.attempts) + 1, started_at=utcnow(), error=None)
            )
            await s.execute(
                update(ModelRow)
                .where(col(ModelRow.id) == model.id, col(ModelRow.status) == ModelStatus.SUBMITTED)
                .values(status=ModelStatus.EVALUATING)
            )
        size = self.settings.eval_chunk_size
        chunks = max(1, math.ceil(dataset.size / size))
        async with self.db.session() as s:
            done = set(
                await s.scalars(
                    select(col(EvaluationChunk.chunk)).where(col(EvaluationChunk.evaluation_id) == evaluation_id)
                )
            )
        self.report(evaluation, dataset, E.RUNNING, round(len(done) / chunks, 4))
        ran = 0
        for chunk in range(chunks):
            if chunk in done:
                continue
            if stop_after_chunks is not None and ran >= stop_after_chunks:
                return E.RUNNING
            model_process = models.get(model.id)
            if model_process is None:
                model_process = models[model.id] = await asyncio.to_thread(self.open_model, model)
            items = await self._items(dataset.id, chunk * size, size)
            inputs = [task.build_model_input(*task.split_fields(item.fields)) for item in items]
            if task.image_fields:  # the model reads the pictures, as target models do
                inputs = await asyncio.to_thread(self._with_pictures, task, inputs)
            outputs, seconds = await asyncio.to_thread(model_process.predict, inputs)
            await self._store_chunk(evaluation_id, chunk, len(items), outputs, seconds)
            ran += 1
            progress = round(min(1.0, (len(done) + ran) / chunks), 4)
            async with self.db.write() as s:
                await s.execute(
                    update(Evaluation)
                    .where(col(Evaluation.id) == evaluation_id, col(Evaluation.status) != E.DONE)
                    .values(progress=progress)
                )
            self.report(evaluation, dataset, E.RUNNING, progress)
        loaded = models.get(model.id)
        memory_mb = loaded.memory_mb() if loaded is not None else None
        finished = await self._finish(evaluation_id, task, dataset, memory_mb)
        await self.refresh_model(model.id)
        self.report(evaluation, dataset, E.DONE, 1.0)
        if finished:
            await self.announce_finished(evaluation_id)
        return E.DONE

    def _with_pictures(self, task: Task, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        store = media.MediaStore.under(self.settings.data_dir)
        names = [f.name for f in task.image_fields]
        return [media.with_pictures(store, item, names) for item in inputs]

    def limits(self, backend_name: str, config: dict[str, Any]) -> Limits:
        """The confinement of a model's process: the settings' limits, and no network unless its backend needs it."""
        backend = self.plugins.registry.backends.get(backend_name)
        cores = os.cpu_count() or 1
        return Limits(
            memory_mb=self.settings.eval_memory_limit_mb,
            cpu_s=self.settings.eval_cpu_limit_s or math.ceil(self.settings.eval_timeout_s * cores),
            open_files=self.settings.eval_open_files,
            network=not self.settings.eval_isolate_network or backend is None or backend.needs_network(config),
        )

    def open_model(self, model: ModelRow) -> LocalModel | ModelProcess:
        """The model, loaded and ready to predict: in a confined process when :attr:`isolate`, else here."""
        if model.backend is None:
            raise LookupError(f"model {model.id} has uploaded predictions, not a backend to run")
        config = model.config or {}
        if not self.isolate:
            return LocalModel(self.plugins.registry.backends[model.backend], config)
        # Uploaded artifacts into the local cache, here: the model's process gets no credentials and no network.
        backend = self.plugins.registry.backends.get(model.backend)
        ArtifactStore.from_settings(self.settings).materialise(backend, config)
        limits = self.limits(model.backend, config)
        started = time.perf_counter()
        process = ModelProcess(
            model.backend,
            config,
            limits,
            environment=scrubbed_environment(),
            timeout_s=self.settings.eval_timeout_s,
        )
        log.info(
            "model %s loaded in %.1f s in process %s (network: %s)",
            model.id,
            time.perf_counter() - started,
            process.process.pid,
            process.network,
        )
        return process

    async def _items(self, dataset_id: int, start: int, size: int) -> list[DatasetItem]:
        async with self.db.session() as s:
            return list(
                await s.scalars(
                    select(DatasetItem)
                    .where(
                        col(DatasetItem.dataset_id) == dataset_id,
                        col(DatasetItem.position) >= start,
                        col(DatasetItem.position) < start + size,
                    )
                    .order_by(col(DatasetItem.position))
                )
            )

    async def _store_chunk(self, evaluation_id: int, chunk: int, size: int, outputs: list, seconds: float) -> None:
        async with self.db.write() as s:
            insert = postgresql.insert if self.db.dialect == "postgresql" else sqlite.insert
            await s.execute(
                insert(EvaluationChunk)
                .values(
                    evaluation_id=evaluation_id,
                    chunk=chunk,
                    size=size,
                    outputs=outputs,
                    seconds=seconds,
                    created_at=utcnow(),
                )
                .on_conflict_do_nothing(index_elements=["evaluation_id", "chunk"])
            )

    async def predictions(
        self, evaluation_id: int, task: Task, dataset_id: int
    ) -> tuple[list[DatasetItem], list[dict[str, Any] | None], float]:
        """The data set's items, the task's reading of every stored output (None: unusable), and the seconds spent
        predicting (:meth:`read_outputs` without the reasons)."""
        read = await self.read_outputs(evaluation_id, task, dataset_id)
        return read.items, read.predictions, read.seconds

    async def read_outputs(self, evaluation_id: int, task: Task, dataset_id: int) -> Outputs:
        """:func:`dynaforge.services.outputs.read_outputs` on this runner's database."""
        return await read_outputs(self.db, evaluation_id, task, dataset_id)

    def _figures(
        self,
        task: Task,
        golds: list[dict[str, Any]],
        predictions: list[dict[str, Any] | None],
        seed: int,
        *,
        withheld: bool = False,
        written_fooling: list[bool] | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The task's metrics on these items, and the details beside them: item counts, intervals, slices.
        ``withheld`` (a model whose outputs are mostly unusable): no figure that depends on the gold, only the
        counts, so that a model answering one item and refusing the rest learns nothing of that item's gold.
        ``written_fooling`` (one flag per item): whether the item's example fooled the round's target when it was
        written; the fooling rate on those items alone is ``details["still_fooled"]``."""
        details: dict[str, Any] = {"n": len(golds), "unusable_outputs": sum(p is None for p in predictions)}
        if withheld:
            return {}, {**details, "mostly_unusable": True}
        registry = self.plugins.registry.metrics
        metrics = scoring.score(task, None, golds, predictions, metrics=registry)
        if covered := scoring.coverage(task, None, golds, predictions, metrics=registry):
            details["coverage"] = covered  # which items a metric that needs more than targets scored, and why not
        if golds:
            details["intervals"] = self._intervals(task, list(metrics), golds, predictions, seed)
            details["fooling"] = scoring.fooling_rate(task, golds, predictions)
            if written_fooling is not None and any(written_fooling):
                kept = [i for i, flag in enumerate(written_fooling) if flag]
                details["still_fooled"] = scoring.fooling_rate(
                    task, [golds[i] for i in kept], [predictions[i] for i in kept]
                )
        slices = [self.plugins.registry.slices[n] for n in task.fairness_slices if n in self.plugins.registry.slices]
        if slices and golds:
            per_slice = scoring.slice_metrics(task, slices, golds, predictions, golds, metrics=registry)
            details["slices"] = per_slice
            details["slice_gaps"] = scoring.slice_gaps(metrics, per_slice, metrics=registry)
        return metrics, details

    async def written_fooling(self, items: list[DatasetItem]) -> list[bool] | None:
        """One flag per item: whether the example it was copied from fooled the round's target when it was written
        (``Example.fooled``; an item of an upload has no example: False). None when no item comes from an
        example."""
        ids = [i.example_id for i in items if i.example_id is not None]
        if not ids:
            return None
        fooled: set[int] = set()
        async with self.db.session() as s:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                fooled |= set(
                    await s.scalars(
                        select(col(Example.id)).where(col(Example.id).in_(chunk), col(Example.fooled).is_(True))
                    )
                )
        return [i.example_id in fooled for i in items]

    async def public_part(self, dataset: Dataset, items: list[DatasetItem]) -> list[bool] | None:
        """One flag per item of a scoring set (or of a perturbed copy of one): whether it is in the set's public
        part (:func:`visibility.public_part`, the copy's items by their original's position); None for other sets,
        and when the set's share (its own ``public_share``, else ``SCORING_PUBLIC_SHARE``) is 1 (every item
        public)."""
        if dataset.access != DatasetAccess.SCORING or not items:
            return None
        root = dataset
        if dataset.parent_id is not None:
            async with self.db.session() as s:
                parent = await s.get(Dataset, dataset.parent_id)
            if parent is None:  # deleted meanwhile (its copies go with it)
                raise LookupError(f"data set {dataset.id}'s original was deleted")
            root = parent
        share = visibility.public_share(root, self.settings.scoring_public_share)
        if share >= 1:
            return None
        positions = [i.position if dataset.parent_id is None else int(i.original_position or 0) for i in items]
        return visibility.public_part(root, share, positions)

    async def _finish(self, evaluation_id: int, task: Task, dataset: Dataset, memory_mb: float | None) -> bool:
        """Score the stored outputs and mark the evaluation DONE; False when another run had already done it.

        On a scoring set (:meth:`public_part`) the public part's figures are the evaluation's, and the private
        part's go into ``details["held"]``, which nobody but the task's owners reads until it is released
        (:func:`dynaforge.services.visibility.held_released`). A perturbed copy whose perturbation does not keep the
        gold (:func:`~dynaforge.evaluation.variants.copy_gold`) gets no figure against it, only its counts: it
        counts for consistency with its original (:meth:`refresh_model`)."""
        read = await self.read_outputs(evaluation_id, task, dataset.id)
        items, predictions, seconds = read.items, read.predictions, read.seconds
        golds = [i.fields for i in items]
        unusable = sum(p is None for p in predictions)
        effect = copy_gold(dataset, self.plugins.registry)
        public = await self.public_part(dataset, items) if effect == "kept" else None
        withheld = bool(predictions) and unusable > len(predictions) * self.settings.eval_max_unusable_share
        metrics: dict[str, Any]
        details: dict[str, Any]
        written = await self.written_fooling(items) if effect == "kept" else None
        if effect != "kept":
            metrics, details = {}, {"n": len(golds), "unusable_outputs": unusable, "gold": effect}
        elif public is None:
            metrics, details = self._figures(
                task, golds, predictions, dataset.id, withheld=withheld, written_fooling=written
            )
        else:
            parts = {
                flag: (
                    [g for g, p in zip(golds, public, strict=True) if p is flag],
                    [o for o, p in zip(predictions, public, strict=True) if p is flag],
                    None if written is None else [w for w, p in zip(written, public, strict=True) if p is flag],
                )
                for flag in (True, False)
            }
            golds_, predictions_, written_ = parts[True]
            metrics, details = self._figures(
                task, golds_, predictions_, dataset.id, withheld=withheld, written_fooling=written_
            )
            details["part"] = "public"
            if parts[False][0]:
                golds_, predictions_, written_ = parts[False]
                held_metrics, held_details = self._figures(
                    task, golds_, predictions_, dataset.id, withheld=withheld, written_fooling=written_
                )
                details["held"] = {"metrics": held_metrics, "details": held_details}
        if read.reasons:
            details["unusable_reasons"] = [
                {"reason": reason, "count": count} for reason, count in read.reasons.most_common(UNUSABLE_REASONS)
            ]
        if memory_mb is not None:  # the model ran here (uploaded predictions ran nowhere)
            details["hardware"] = hardware()
        throughput = len(golds) / seconds if seconds > 0 else None
        generation = scoring.generation_figures(read.raw, seconds) if memory_mb is not None else None
        if generation is not None:  # measured where the model ran, never taken from uploaded predictions
            details["generation"] = generation
        async with self.db.write() as s:
            result = await s.execute(
                update(Evaluation)
                .where(col(Evaluation.id) == evaluation_id, col(Evaluation.status) != E.DONE)
                .values(
                    status=E.DONE,
                    progress=1.0,
                    metrics=metrics,
                    details=details,
                    throughput=throughput,
                    memory_mb=memory_mb,
                    finished_at=utcnow(),
                    error=None,
                )
            )
        return rowcount(result) == 1

    def _intervals(
        self,
        task: Task,
        names: list[str],
        golds: list[dict[str, Any]],
        predictions: list[dict[str, Any] | None],
        seed: int,
    ) -> dict[str, list[float]]:
        """A bootstrap interval for each metric the task computed, every one drawn from the same seed (the data
        set's id, so every model and every metric is resampled alike). A plugin metric whose recomputation fails on
        a resample gets no interval rather than failing the evaluation; the principal metric's failure is raised."""
        intervals: dict[str, list[float]] = {}
        for name in names:
            try:
                interval = scoring.metric_interval(
                    task,
                    name,
                    golds,
                    predictions,
                    metrics=self.plugins.registry.metrics,
                    seed=seed,
                    resamples=self.settings.eval_bootstrap_resamples,
                )
            except Exception:
                if name == task.principal_metric:
                    raise
                log.warning("no interval for metric %s of task %s", name, task.code, exc_info=True)
                continue
            intervals[name] = [interval.low, interval.high]
        return intervals

    # ------------------------------------------------------------------ the model's figures
    async def refresh_model(self, model_id: int) -> None:
        """Robustness and fairness on each scoring set whose copies are all done, then the model's status."""
        async with self.db.session() as s:
            rows = (
                await s.execute(
                    select(Evaluation, Dataset)
                    .join(Dataset, col(Dataset.id) == col(Evaluation.dataset_id))
                    .where(col(Evaluation.model_id) == model_id)
                )
            ).all()
            model = await s.get(ModelRow, model_id)
            code = (
                None
                if model is None
                else await s.scalar(select(col(TaskRow.code)).where(col(TaskRow.id) == model.task_id))
            )
        task = None if code is None else self.plugins.task(code)
        by_dataset = {d.id: (e, d) for e, d in rows}
        kinds = {p.name: p.kind for p in self.plugins.registry.perturbations.values()}
        for evaluation, dataset in by_dataset.values():
            if dataset.parent_id is not None or evaluation.status != E.DONE or task is None:
                continue
            copies = [(e, d) for e, d in by_dataset.values() if d.parent_id == dataset.id]
            if not copies or any(e.status != E.DONE for e, _ in copies):
                continue
            _, originals, _ = await self.predictions(evaluation.id, task, dataset.id)
            same = scoring.output_agreement(task)

            figures: dict[str, list[float]] = {"robustness": [], FAIRNESS: []}
            per_copy = {}
            for copy_eval, copy in copies:
                items, predicted, _ = await self.predictions(copy_eval.id, task, copy.id)
                positions = [i.original_position for i in items]
                result = scoring.consistency(
                    dict(enumerate(originals)),
                    list(zip(positions, predicted, strict=True)),
                    same=same,
                )
                kind = copy.perturbation_kind or kinds.get(copy.perturbation or "", "robustness")
                figures[FAIRNESS if kind == FAIRNESS else "robustness"].append(result.score)
                effect = copy_gold(copy, self.plugins.registry)  # a copy whose gold may not hold: no figures on it
                figures_on = copy_eval.metrics if effect == "kept" else {}
                per_copy[copy.perturbation] = {"kind": kind, "consistency": result.score, "gold": effect, **figures_on}
            metrics = {k: v for k, v in evaluation.metrics.items() if k not in figures}
            for name, values in figures.items():
                if values:
                    metrics[name] = sum(values) / len(values)
            details = {**evaluation.details, "perturbations": per_copy}
            async with self.db.write() as s:
                await s.execute(
                    update(Evaluation)
                    .where(col(Evaluation.id) == evaluation.id)
                    .values(metrics=metrics, details=details)
                )
        async with self.db.session() as s:
            statuses = set(await s.scalars(select(col(Evaluation.status)).where(col(Evaluation.model_id) == model_id)))
        status = (
            ModelStatus.FAILED
            if E.FAILED in statuses
            else ModelStatus.DONE
            if statuses <= {E.DONE}
            else ModelStatus.EVALUATING
        )
        async with self.db.write() as s:
            await s.execute(update(ModelRow).where(col(ModelRow.id) == model_id).values(status=status))

    async def fail(self, evaluation_id: int, error: str, log_tail: str) -> None:
        """Record a failure (a done evaluation stays done). A failed one gets the newer error and log."""
        values = {"status": E.FAILED, "error": error[-4000:], "log_tail": log_tail[-20000:], "finished_at": utcnow()}
        async with self.db.write() as s:
            # Compare-and-set: only the run that moves it to FAILED announces the end (once per finished run).
            moved = await s.execute(
                update(Evaluation)
                .where(col(Evaluation.id) == evaluation_id, col(Evaluation.status).not_in([E.DONE, E.FAILED]))
                .values(**values)
            )
            if rowcount(moved) != 1:
                await s.execute(
                    update(Evaluation)
                    .where(col(Evaluation.id) == evaluation_id, col(Evaluation.status) != E.DONE)
                    .values(**values)
                )
            evaluation = await s.get(Evaluation, evaluation_id)
            dataset = None if evaluation is None else await s.get(Dataset, evaluation.dataset_id)
        if evaluation is not None and dataset is not None:
            await self.refresh_model(evaluation.model_id)
            self.report(evaluation, dataset, E.FAILED, evaluation.progress, error[-4000:])
            if rowcount(moved) == 1:
                await self.announce_finished(evaluation_id)

    async def announce_finished(self, evaluation_id: int) -> None:
        """The ``evaluation_finished`` hook, after the commit that made it DONE or FAILED, in this process (whose
        plugins are loaded with the server's allowlist): the job's child process for a model, the job's worker when
        the child ran out of time, the API process for uploaded predictions. Never raises."""
        try:
            job = await self._job(evaluation_id)
            payload = announce.evaluation_payload(job.evaluation, job.task_code, job.dataset.name)
        except Exception:  # noqa: BLE001 - the result is stored; only the news is lost
            log.exception("evaluation %s finished but could not be announced", evaluation_id)
            return
        await announce.evaluation_finished(self.plugins, payload)


#: How many reasons for unusable outputs an evaluation keeps (the most frequent first).
UNUSABLE_REASONS = 5


@dataclass(frozen=True)
class _Job:
    evaluation: Evaluation
    model: ModelRow
    dataset: Dataset
    task_code: str


async def _main(evaluation_ids: list[int], stop_after_chunks: int | None) -> int:
    settings = Settings()
    runner = Runner(settings, isolate=True)
    if (fd := os.environ.get(PROGRESS_FD)) is not None:
        pipe = os.fdopen(int(fd), "w", buffering=1, encoding="utf-8")

        def to_pipe(event: dict[str, Any]) -> None:
            pipe.write(json.dumps(event) + "\n")
            pipe.flush()

        runner.progress = to_pipe
    runner.log_tail = LogTail(200, "%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger().addHandler(runner.log_tail)
    try:
        if stop_after_chunks is not None:  # tests of resumption: one evaluation, stopped early
            [evaluation_id] = evaluation_ids
            statuses = {evaluation_id: await runner.run(evaluation_id, stop_after_chunks=stop_after_chunks)}
        else:
            statuses = await runner.run_many(evaluation_ids)
        log.info("evaluations: %s", statuses)
        return 1 if E.FAILED in statuses.values() else 0
    except ModelProcessLost:
        # Killed from outside, not by its own fault for sure: nothing is recorded, the job is delivered again and
        # resumes from the stored chunks.
        log.exception("evaluations %s: the model's process was lost", evaluation_ids)
        return LOST
    finally:
        await runner.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("evaluation_ids", type=int, nargs="+", metavar="evaluation_id")
    parser.add_argument("--stop-after-chunks", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return asyncio.run(_main(args.evaluation_ids, args.stop_after_chunks))


if __name__ == "__main__":
    sys.exit(main())
