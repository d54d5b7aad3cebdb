"""Training candidate models on the platform's own data, comparing them with the rounds' targets, promoting them.

``trainCandidateModel`` (a task's owners and admins) stores a :class:`TrainingJob` and sends it to the job system:
the job (:mod:`dynaforge.training`) runs the task's training recipe in a confined process of its own on the data
sets named (the rows they froze, gold as validated) and, when asked, the task's base data
(``DYNAFORGE_TRAINING_DATA_DIR/<task>``). The trained weights go into the model store by digest; the candidate is
registered (:mod:`dynaforge.services.registry`) with its recipe, hyper-parameters, seed, data and metrics, its parent
being the round's target when the job was asked for, and it is submitted for evaluation on every scoring set like any
model, as an unpublished model of the owner who asked. The parent is evaluated too, once, so the two compare.

:func:`round_model_matrix` is the comparison: every registered model with evaluations against every round's test
set (its principal metric and fooling rate, each with an interval). ``openNextRound(candidate: ID)`` promotes one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from dynaforge.db.models import (
    Dataset,
    DatasetAccess,
    Evaluation,
    EvaluationStatus,
    ModelRow,
    RegisteredModel,
    Round,
    TrainingJob,
    TrainingStatus,
    as_utc,
    utcnow,
)
from dynaforge.errors import Conflict, FieldError, Forbidden, InvalidInput, NotFound, QuotaExceeded
from dynaforge.services import announce, cursors, registry
from dynaforge.services import datasets as dataset_service
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human, require_user
from dynaforge.services.evaluation_jobs import queue
from dynaforge.services.job_queue import BrokerUnavailable
from dynaforge.services.platform import Platform
from dynaforge.settings import Settings
from dynaforge.tasks.base import Task, TrainingRecipe

log = logging.getLogger(__name__)

MAX_DATASETS = 20
MAX_SEED = 2**31 - 1


def base_data_dir(settings: Settings, task: Task) -> Path | None:
    """The folder of the task's base data for training jobs, or None when none is configured or it is missing."""
    root = settings.training_data_dir
    if root is None:
        return None
    folder = root / task.code
    return folder if folder.is_dir() else None


async def _owner_view(p: Platform, actor: Actor, code: str, verb: str) -> task_service.TaskView:
    actor = require_user(actor)
    view = await task_service.get_task(p, actor, code)
    async with p.db.session() as s:
        if not await task_service.is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {code} and admins can {verb}")
    return view


def recipe_or_error(task: Task, name: str | None) -> TrainingRecipe:
    recipe = task.training_recipe(name)
    if recipe is None:
        have = ", ".join(r.name for r in task.training_recipes)
        message = (
            f"task {task.code} has no training recipe {name!r}; it has {have}"
            if have
            else f"task {task.code} declares no training recipe, so candidates cannot be trained on the platform"
        )
        raise InvalidInput.from_errors([FieldError("recipe", "choice", message)])
    return recipe


async def train_candidate(
    p: Platform,
    actor: Actor,
    *,
    task_code: str,
    dataset_ids: list[int],
    recipe: str | None = None,
    hyperparameters: dict[str, Any] | None = None,
    seed: int = 0,
    include_base_data: bool = False,
    tune_on: int | None = None,
) -> TrainingJob:
    """Queue a training job (owners and admins); the typed errors say what to change. Nothing is stored unless
    every check passes.

    ``tune_on``: a development set of the task (a round's dev split, say) on which the job chooses the recipe's
    tunable hyper-parameters (``TrainingRecipe.tuning``) that ``hyperparameters`` leaves out: one training per
    combination, the most accurate on that set kept. Never a scoring set, a test split or a set trained on."""
    actor = require_human(actor)
    view = await _owner_view(p, actor, task_code, "train candidate models")
    chosen = recipe_or_error(view.task, recipe)
    values, errors = chosen.check_hyperparameters(dict(hyperparameters or {}))
    grid: list[dict[str, Any]] = []
    if tune_on is not None:
        grid = chosen.tuning_grid(given=(hyperparameters or {}).keys())
        if not chosen.tuning:
            errors.append(
                FieldError("tuneOn", "unavailable", f"recipe {chosen.name} declares no hyper-parameter to tune")
            )
        elif grid == [{}]:
            errors.append(
                FieldError(
                    "tuneOn",
                    "nothing_to_tune",
                    f"every hyper-parameter recipe {chosen.name} tunes ({', '.join(chosen.tuning)}) is given; leave "
                    "one out to tune it, or drop tuneOn",
                )
            )
    if not 0 <= seed <= MAX_SEED:
        errors.append(FieldError("seed", "range", f"must be between 0 and {MAX_SEED}"))
    ids = list(dict.fromkeys(dataset_ids))
    if len(ids) > MAX_DATASETS:
        errors.append(FieldError("datasets", "count", f"give at most {MAX_DATASETS} data sets"))
    if include_base_data:
        if not chosen.base_data:
            errors.append(FieldError("includeBaseData", "unavailable", f"recipe {chosen.name} uses no base data"))
        elif base_data_dir(p.settings, view.task) is None:
            errors.append(
                FieldError(
                    "includeBaseData",
                    "unavailable",
                    f"no base data for {task_code} on this server: the operator puts {chosen.base_data} in "
                    f"DYNAFORGE_TRAINING_DATA_DIR/{task_code}/",
                )
            )
    if not ids and not include_base_data:
        errors.append(FieldError("datasets", "required", "name at least one data set (or include the base data)"))
    if errors:
        raise InvalidInput.from_errors(errors)
    async with p.db.write() as s:
        found = {
            d.id: d
            for d in await s.scalars(select(Dataset).where(col(Dataset.id).in_(ids)))
            if d.task_id == view.row.id
        }
        missing = [i for i in ids if i not in found]
        if missing:
            raise InvalidInput.from_errors(
                [FieldError("datasets", "not_found", f"task {task_code} has no data set {i}") for i in missing]
            )
        empty = [found[i].name for i in ids if found[i].size == 0]
        if empty:
            raise InvalidInput.from_errors(
                [FieldError("datasets", "empty", f"data set {name} has no items") for name in empty]
            )
        if tune_on is not None:
            await _check_tuning_set(s, view.row.id, task_code, tune_on, ids)
        since = utcnow() - timedelta(days=1)
        recent, oldest = (
            await s.execute(
                select(func.count(), func.min(col(TrainingJob.created_at))).where(
                    col(TrainingJob.task_id) == view.row.id, col(TrainingJob.created_at) >= since
                )
            )
        ).one()
        if int(recent or 0) >= p.settings.training_jobs_per_day:
            frees = None if oldest is None else as_utc(oldest) + timedelta(days=1)
            raise QuotaExceeded(
                f"{task_code} has started {p.settings.training_jobs_per_day} training jobs in the last 24 hours "
                "(DYNAFORGE_TRAINING_JOBS_PER_DAY); try again later",
                quota="TRAINING_JOBS_PER_DAY",
                limit=p.settings.training_jobs_per_day,
                retry_after_s=None if frees is None else max(0.0, (frees - utcnow()).total_seconds()),
            )
        current = await task_service.current_round(s, view.row.id)
        parent = (current.target_registry_ids or [None])[0] if current is not None else None
        job = TrainingJob(
            task_id=view.row.id,
            user_id=actor.person_id,
            recipe=chosen.name,
            hyperparameters=values,
            seed=seed,
            dataset_ids=ids,
            include_base_data=include_base_data,
            tuning_dataset_id=tune_on,
            tuning_grid=grid,
            parent_id=parent,
        )
        s.add(job)
        await s.flush()
    send(p, job.id)
    await announce.updated(p, "trainingJobUpdated", job.task_id, [job.id])
    return job


async def _check_tuning_set(s: Any, task_id: int, task_code: str, dataset_id: int, trained_on: list[int]) -> None:
    """Refuse a development set that is not the task's, is empty, is trained on, or is one models are (or will
    be) scored on: tuning on it would let the job see what its candidate is ranked by."""
    dataset = await s.get(Dataset, dataset_id)
    if dataset is None or dataset.task_id != task_id:
        raise InvalidInput.from_errors(
            [FieldError("tuneOn", "not_found", f"task {task_code} has no data set {dataset_id}")]
        )
    why = None
    if dataset.size == 0:
        why = "has no items"
    elif dataset_id in trained_on:
        why = "is one of the data sets trained on; tune on a set the job does not train on (the round's dev split)"
    elif dataset.access == DatasetAccess.SCORING or dataset.split == "test":
        why = "is a scoring or test set, which candidates are ranked on; tune on the round's dev split instead"
    if why is not None:
        raise InvalidInput.from_errors([FieldError("tuneOn", "unsuitable", f"data set {dataset.name} {why}")])


def send(p: Platform, job_id: int) -> None:
    """Hand a training job to the job system, if this process runs one (a broker that is down is logged: the job
    stays queued and is sent again when a server starts)."""
    if p.jobs is None:
        return
    try:
        p.jobs.train(job_id)
    except BrokerUnavailable as exc:
        log.error("training job %s stays queued: %s", job_id, exc)


async def requeue_unfinished(p: Platform, *, running_too: bool) -> int:
    """Send again the training jobs that are queued (and, with ``running_too``, those a stopped worker left
    running: a job restarts from the beginning; recipes are deterministic for a seed, and a job registers one
    candidate at most)."""
    statuses = [TrainingStatus.QUEUED, TrainingStatus.RUNNING] if running_too else [TrainingStatus.QUEUED]
    async with p.db.session() as s:
        ids = list(
            await s.scalars(
                select(col(TrainingJob.id)).where(col(TrainingJob.status).in_(statuses)).order_by(col(TrainingJob.id))
            )
        )
    for job_id in ids:
        send(p, job_id)
    return len(ids)


async def cancel_training(p: Platform, actor: Actor, job_id: int) -> TrainingJob:
    """Owners stop a training job: a queued one at once, a running one within a second or two (its process is
    killed; nothing is registered)."""
    actor = require_human(actor)
    async with p.db.write() as s:
        job = await s.get(TrainingJob, job_id)
        if job is None or not await task_service.is_owner(s, actor, job.task_id):
            raise NotFound(f"No training job {job_id} that you can see")
        if job.status in TrainingStatus.FINISHED:
            raise Conflict(f"Training job {job_id} has already finished ({job.status})")
        if job.status == TrainingStatus.QUEUED:
            job.status, job.finished_at, job.stage = TrainingStatus.CANCELLED, utcnow(), "cancelled"
        job.cancel_requested = True
        await s.flush()
    await announce.updated(p, "trainingJobUpdated", job.task_id, [job.id])
    return job


async def get_job(p: Platform, actor: Actor, job_id: int) -> TrainingJob:
    async with p.db.session() as s:
        job = await s.get(TrainingJob, job_id)
        if job is None or not await task_service.is_owner(s, actor, job.task_id):
            raise NotFound(f"No training job {job_id} that you can see")
        return job


async def progress_topic(p: Platform, actor: Actor, job_id: int) -> str:
    """The bus topic of a training job's progress, for its task's owners and admins."""
    job = await get_job(p, require_user(actor), job_id)
    return f"trainingProgress:{job.id}"


async def list_jobs(p: Platform, actor: Actor, task_code: str, page: cursors.WorkPage) -> cursors.Listing:
    """A page of a task's training jobs (owners and admins): see :class:`cursors.WorkPage`."""
    view = await _owner_view(p, actor, task_code, "see its training jobs")
    return await cursors.work_listing(p, TrainingJob, view.row.id, "trainingJob", TrainingStatus.ALL, page)


async def _targeted_ids(s: AsyncSession, task_id: int) -> set[int]:
    rounds = await s.scalars(select(col(Round.target_registry_ids)).where(col(Round.task_id) == task_id))
    return {int(i) for ids in rounds for i in (ids or []) if i is not None}


async def registered_models(p: Platform, actor: Actor, task_code: str) -> list[RegisteredModel]:
    """The task's registry, newest first: everything for owners and admins; for others, the models some round
    targeted (their weights, origin and training are what a round's page shows)."""
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        rows = list(
            await s.scalars(
                select(RegisteredModel)
                .where(col(RegisteredModel.task_id) == view.row.id)
                .order_by(col(RegisteredModel.id).desc())
            )
        )
        if await task_service.is_owner(s, actor, view.row.id):
            return rows
        targeted = await _targeted_ids(s, view.row.id)
    return [row for row in rows if row.id in targeted]


async def registered_listing(p: Platform, actor: Actor, task_code: str, page: cursors.WorkPage) -> cursors.Listing:
    """A page of the task's registry, newest first unless ``page.oldest_first``, under the rules of
    :func:`registered_models` (everything for owners and admins, the models some round targeted for others)."""
    view = await task_service.get_task(p, actor, task_code)
    statement = select(RegisteredModel).where(col(RegisteredModel.task_id) == view.row.id)
    async with p.db.session() as s:
        if not await task_service.is_owner(s, actor, view.row.id):
            statement = statement.where(col(RegisteredModel.id).in_(sorted(await _targeted_ids(s, view.row.id))))
    return await cursors.id_listing(p, statement, RegisteredModel, "registeredModel", page)


async def get_registered(p: Platform, actor: Actor, entry_id: int) -> RegisteredModel:
    async with p.db.session() as s:
        row = await s.get(RegisteredModel, entry_id)
        if row is not None and (
            await task_service.is_owner(s, actor, row.task_id) or row.id in await _targeted_ids(s, row.task_id)
        ):
            return row
    raise NotFound(f"No registered model {entry_id} that you can see")


async def registered_many(p: Platform, actor: Actor, ids: list[int]) -> dict[int, RegisteredModel]:
    """Registry entries by id, those ``actor`` may see (a round's targets: everyone who sees the round)."""
    async with p.db.session() as s:
        rows = await registry.entries(s, ids)
        owned: dict[int, bool] = {}
        targeted: dict[int, set[int]] = {}
        out = {}
        for entry_id, row in rows.items():
            if row.task_id not in owned:
                owned[row.task_id] = await task_service.is_owner(s, actor, row.task_id)
            if not owned[row.task_id] and row.task_id not in targeted:
                targeted[row.task_id] = await _targeted_ids(s, row.task_id)
            if owned[row.task_id] or row.id in targeted[row.task_id]:
                out[entry_id] = row
    return out


# --------------------------------------------------------------------------- the job's side (no actor: trusted)


async def submit_for_evaluation(
    s: AsyncSession, entry: RegisteredModel, *, user_id: int, name: str, description: str, published: bool = False
) -> list[int]:
    """Make ``entry`` an unpublished model of ``user_id`` with an evaluation queued on every scoring set (once:
    an entry that has its model already gets none). Returns the queued evaluations' ids, to send after commit."""
    if entry.model_id is not None:
        return []
    model = ModelRow(
        task_id=entry.task_id,
        user_id=user_id,
        name=name[:100],
        backend=entry.backend,
        config=entry.config,
        card={"description": description[:5000]},
        published=published,
    )
    s.add(model)
    await s.flush()
    entry.model_id = model.id
    evaluations = [
        Evaluation(model_id=model.id, dataset_id=d) for d in await dataset_service.scoring_dataset_ids(s, entry.task_id)
    ]
    s.add_all(evaluations)
    await s.flush()
    return [e.id for e in evaluations]


async def evaluate_round_targets(
    p: Platform, actor: Actor, task_code: str, *, published: bool = False
) -> list[ModelRow]:
    """Owners put the current round's targets on the matrix: each registry entry of the round without a model yet
    becomes a model of ``actor`` (unpublished unless ``published``) with an evaluation queued on every scoring set.
    Returns the models made (none when every target has one)."""
    actor = require_human(actor)
    view = await _owner_view(p, actor, task_code, "evaluate its round's targets")
    queued: list[list[int]] = []  # a job per model
    made: list[ModelRow] = []
    async with p.db.write() as s:
        current = await task_service.current_round(s, view.row.id)
        ids = [int(i) for i in (current.target_registry_ids or []) if i is not None] if current is not None else []
        for entry in (await registry.entries(s, ids)).values():
            if entry.model_id is not None:
                continue
            queued.append(
                await submit_for_evaluation(
                    s,
                    entry,
                    user_id=actor.person_id,
                    name=entry.name,
                    description=f"Round {current.number}'s target model ({entry.origin.lower()})" if current else "",
                    published=published,
                )
            )
            model = await s.get(ModelRow, entry.model_id)
            assert model is not None
            made.append(model)
    await queue(p, view.row.id, queued)
    p.caches.boards.pop(view.row.id)
    return made


# --------------------------------------------------------------------------- comparing


@dataclass(frozen=True)
class MatrixCell:
    round_number: int
    dataset: Dataset
    evaluation: Evaluation | None
    metric: str
    value: float | None
    interval: tuple[float, float] | None
    fooling_rate: float | None
    fooling_interval: tuple[float, float] | None
    items: int
    #: among the items whose example fooled the round's target when written: the share that still fool this model
    still_fooled: float | None = None
    still_fooled_interval: tuple[float, float] | None = None
    still_fooled_items: int = 0


@dataclass(frozen=True)
class MatrixRow:
    entry: RegisteredModel
    cells: list[MatrixCell]
    targeted_rounds: list[int]


@dataclass(frozen=True)
class Matrix:
    metric: str
    rounds: list[Round]
    test_sets: dict[int, Dataset]  # round number -> its test set
    rows: list[MatrixRow]


async def round_model_matrix(p: Platform, actor: Actor, task_code: str) -> Matrix:
    """Every evaluated registry entry (rows) against each round's test set (columns): the principal metric, the
    fooling rate on the whole set and on the items that fooled the round's target when written ("still fooled"),
    each with an interval. Owners and admins (it shows unpromoted candidates)."""
    view = await _owner_view(p, actor, task_code, "compare its models")
    metric = view.task.principal_metric
    async with p.db.session() as s:
        rounds = list(
            await s.scalars(select(Round).where(col(Round.task_id) == view.row.id).order_by(col(Round.number)))
        )
        by_round_id = {r.id: r for r in rounds}
        sets = list(
            await s.scalars(
                select(Dataset)
                .where(
                    col(Dataset.task_id) == view.row.id,
                    col(Dataset.source) == "round",
                    col(Dataset.split) == "test",
                    col(Dataset.parent_id).is_(None),
                )
                .order_by(col(Dataset.id))
            )
        )
        test_sets: dict[int, Dataset] = {}
        for d in sets:  # the latest test set of each round
            if d.round_id in by_round_id:
                test_sets[by_round_id[d.round_id].number] = d
        entries = list(
            await s.scalars(
                select(RegisteredModel)
                .where(col(RegisteredModel.task_id) == view.row.id, col(RegisteredModel.model_id).is_not(None))
                .order_by(col(RegisteredModel.id))
            )
        )
        model_ids = [e.model_id for e in entries]
        evaluations: dict[tuple[int | None, int], Evaluation] = {
            (e.model_id, e.dataset_id): e
            for e in await s.scalars(
                select(Evaluation).where(
                    col(Evaluation.model_id).in_(model_ids),
                    col(Evaluation.dataset_id).in_([d.id for d in test_sets.values()]),
                )
            )
        }
    rows = []
    for entry in entries:
        cells = []
        for number, dataset in sorted(test_sets.items()):
            evaluation = evaluations.get((entry.model_id, dataset.id))
            done = evaluation is not None and evaluation.status == EvaluationStatus.DONE
            details = evaluation.details if done and evaluation is not None else {}
            value = evaluation.metrics.get(metric) if done and evaluation is not None else None
            interval = (details.get("intervals") or {}).get(metric)
            fooling = details.get("fooling") or {}
            still = details.get("still_fooled") or {}
            cells.append(
                MatrixCell(
                    round_number=number,
                    dataset=dataset,
                    evaluation=evaluation,
                    metric=metric,
                    value=value,
                    interval=tuple(interval) if interval else None,
                    fooling_rate=fooling.get("rate"),
                    fooling_interval=tuple(fooling["interval"]) if fooling.get("interval") else None,
                    items=int(details.get("n") or 0),
                    still_fooled=still.get("rate"),
                    still_fooled_interval=tuple(still["interval"]) if still.get("interval") else None,
                    still_fooled_items=int(still.get("n") or 0),
                )
            )
        targeted = [r.number for r in rounds if entry.id in (r.target_registry_ids or [])]
        rows.append(MatrixRow(entry, cells, targeted))
    return Matrix(metric, rounds, test_sets, rows)


async def mark(s: AsyncSession, job_id: int, **values: Any) -> None:
    await s.execute(update(TrainingJob).where(col(TrainingJob.id) == job_id).values(**values))
