"""Model submissions: a model builder puts a model on a task's leaderboard.

A submission names a registered backend and its configuration (checked without loading the model) and a model
card; it is throttled per user and task (the task setting ``submissions_per_day``, default 3 in any 24 hours, counted
as attempts that deleting a model does not give back). It
queues one evaluation per scoring data set of the task (and per perturbed copy of one); the evaluation jobs pick
them up. Submissions are private until published; an anonymous one hides its submitter from everyone but the task's
owners and admins.
"""

from __future__ import annotations

import bisect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlmodel import col

from dynaforge.db.models import (
    Dataset,
    DatasetAccess,
    DatasetItem,
    Evaluation,
    EvaluationStatus,
    ModelRow,
    Round,
    SubmissionAttempt,
    TaskRow,
    User,
    as_utc,
    utcnow,
)
from dynaforge.errors import Conflict, FieldError, Forbidden, InvalidInput, NotFound, QuotaExceeded
from dynaforge.files import Problems
from dynaforge.services import announce, cursors, visibility
from dynaforge.services import datasets as dataset_service
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human
from dynaforge.services.evaluation_jobs import enqueue, queue
from dynaforge.services.evaluation_runner import Runner
from dynaforge.services.platform import Platform
from dynaforge.tasks.base import ModelSpec, Task

CARD_FIELDS = {"parameters", "license", "paper", "description", "training_data"}


def check_card(card: dict[str, Any] | None) -> dict[str, Any]:
    """A model card: parameters (a count), license, paper (a URL), description, training_data; all optional."""
    card = dict(card or {})
    errors = [
        FieldError(f"card.{k}", "unknown", f"is not a card field; use {', '.join(sorted(CARD_FIELDS))}")
        for k in sorted(set(card) - CARD_FIELDS)
    ]
    parameters = card.get("parameters")
    if parameters is not None and (not isinstance(parameters, int) or isinstance(parameters, bool) or parameters < 0):
        errors.append(FieldError("card.parameters", "type", "must be a whole number of parameters, at least 0"))
    limits = {"license": 100, "paper": 500, "description": 5000, "training_data": 2000}
    for key, limit in limits.items():
        value = card.get(key)
        if value is not None and (not isinstance(value, str) or len(value) > limit):
            errors.append(FieldError(f"card.{key}", "max_length", f"must be text of at most {limit} characters"))
    paper = card.get("paper")
    if isinstance(paper, str) and paper and not paper.startswith(("https://", "http://")):
        errors.append(FieldError("card.paper", "url", "must be an http(s) link"))
    if errors:
        raise InvalidInput.from_errors(errors)
    return card


_KIND_WORDS = {"model": "models", "predictions": "predictions", "selection": "data selections"}


def require_kind(task: Task, kind: str) -> None:
    """InvalidInput on ``taskCode`` unless the task takes submissions of ``kind`` (:data:`SUBMISSION_KINDS`)."""
    if kind not in task.submission_kinds:
        takes = ", ".join(_KIND_WORDS[k] for k in task.submission_kinds)
        raise InvalidInput.from_errors(
            [
                FieldError(
                    "taskCode",
                    "submission_kind",
                    f"{task.code} takes no {_KIND_WORDS[kind]}: submit {takes} (Task.submissionKinds)",
                )
            ]
        )


@dataclass(frozen=True)
class Allowance:
    """A user's submissions to a task in the last 24 hours against its ``submissions_per_day``."""

    limit: int
    used: int
    next_at: datetime | None  # when the oldest counted attempt leaves the window (one more is allowed)

    @property
    def left(self) -> int:
        return max(0, self.limit - self.used)


async def _allowance(s: Any, view: task_service.TaskView, user_id: int) -> Allowance:
    since = utcnow() - timedelta(hours=24)
    used, first = (
        await s.execute(
            select(func.count(), func.min(col(SubmissionAttempt.created_at))).where(
                col(SubmissionAttempt.task_id) == view.row.id,
                col(SubmissionAttempt.user_id) == user_id,
                col(SubmissionAttempt.created_at) >= since,
            )
        )
    ).one()
    next_at = None if first is None else as_utc(first) + timedelta(hours=24)
    return Allowance(view.settings.submissions_per_day, int(used or 0), next_at)


async def allowance(p: Platform, actor: Actor, task_code: str) -> Allowance:
    """How many more models (or predictions, or selections) the signed-in user may submit to the task now."""
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        return await _allowance(s, view, actor.person_id)


async def check_throttle(s, view: task_service.TaskView, actor: Actor, task_code: str) -> None:
    """QuotaExceeded when the user made the task's ``submissions_per_day`` scored attempts (models, predictions or
    selections) in the last 24 hours; the retry time is when the oldest of them leaves the window. Run inside the
    write transaction that records the next attempt (:func:`record_attempt`). Attempts are rows of their own: deleting
    a model, hiding its submitter or its failing gives none back. The models of registry entries (training jobs'
    candidates and the parents evaluated beside them, which ``TRAINING_JOBS_PER_DAY`` bounds) are not attempts."""
    counted = await _allowance(s, view, actor.person_id)
    if counted.left == 0:
        retry = 0.0 if counted.next_at is None else max(0.0, (counted.next_at - utcnow()).total_seconds())
        raise QuotaExceeded(
            f"{task_code} takes {counted.limit} submissions per user in 24 hours, and every scored attempt counts (a "
            "deleted or failed one too); try again later",
            quota="SUBMISSIONS_PER_DAY",
            limit=counted.limit,
            retry_after_s=retry,
        )


async def add_attempt(s, view: task_service.TaskView, actor: Actor, model: ModelRow, kind: str) -> None:
    """Check the allowance (:func:`check_throttle`), then add a new submission's model and its attempt to the
    caller's write transaction; the model is flushed (it has an id). On PostgreSQL the user's row is locked first, so
    that concurrent submissions of one user (on any replica) are counted one after the other."""
    if s.get_bind().dialect.name == "postgresql":
        await s.execute(select(col(User.id)).where(col(User.id) == actor.person_id).with_for_update())
    await check_throttle(s, view, actor, view.row.code)
    s.add(model)
    await s.flush()
    s.add(SubmissionAttempt(task_id=view.row.id, user_id=actor.person_id, kind=kind, model_id=model.id))


open_backends = task_service.open_backends


async def submit_model(
    p: Platform,
    actor: Actor,
    *,
    task_code: str,
    name: str,
    backend: str,
    config: object,  # a JSON value from the client; check_target_models requires an object
    card: dict[str, Any] | None = None,
    published: bool = False,
    anonymous: bool = False,
) -> tuple[ModelRow, list[Evaluation]]:
    """Store a submission and queue its evaluations; returns the model and its queued evaluations."""
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    require_kind(view.task, "model")
    # A backend such as python names code that the evaluation worker would import and run: admins only.
    task_service.check_backend_allowed(p, actor, backend, config=config if isinstance(config, dict) else None)
    await task_service.check_outbound(p, actor, backend, config if isinstance(config, dict) else None)
    spec = task_service.check_target_models(p, [{"name": name, "backend": backend, "config": config}], "majority")[0]
    await task_service.check_artifacts(p, spec.backend, spec.config)  # an uploaded model's digest must be stored
    card = check_card(card)
    return await _store_model(p, view, actor, spec, "model", card=card, published=published, anonymous=anonymous)


async def submit_selection(
    p: Platform,
    actor: Actor,
    *,
    task_code: str,
    name: str,
    dataset_name: str,
    items: list[tuple[int, int]],
    card: dict[str, Any] | None = None,
    published: bool = False,
    anonymous: bool = False,
) -> tuple[ModelRow, list[Evaluation]]:
    """Submit data instead of a model (a task that declares :class:`~dynaforge.tasks.base.DataSelection`): at most
    ``budget`` distinct items (``(dataset id, position)``) of one of the task's training pools (a STANDARD data set).
    The model stored runs the task's fixed recipe, trained on those items' fields when an evaluation loads it, on
    every scoring set; the items are copied into it, so that deleting the pool later changes nothing. Throttled like
    any submission."""
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    require_kind(view.task, "selection")
    rules = view.task.data_selection
    assert rules is not None  # check_declaration: "selection" is declared with data_selection
    card = check_card(card)
    pool = await _named_dataset(p, actor, task_code, name, dataset_name)
    if pool.access != DatasetAccess.STANDARD or pool.parent_id is not None:
        raise InvalidInput.from_errors(
            [
                FieldError(
                    "datasetName",
                    "pool",
                    f"{dataset_name} is a {pool.access} set: select from a training pool (a STANDARD set the task's "
                    "owners uploaded, not a perturbed copy)",
                )
            ]
        )
    problems = Problems(more_field="itemIds", again="send the selection again")
    if not items:
        problems.add("itemIds", None, "count", f"select at least 1 item, at most {rules.budget}")
    elif len(items) > rules.budget:
        problems.add("itemIds", None, "budget", f"select at most {rules.budget} items; got {len(items)}")
    seen: set[tuple[int, int]] = set()
    for i, item in enumerate(items):
        if item in seen:
            problems.add(f"itemIds[{i}]", None, "repeated", "selects an item already selected")
        elif item[0] != pool.id:
            problems.add(f"itemIds[{i}]", None, "not_in_pool", f"is an item of another data set, not of {dataset_name}")
        seen.add(item)
    problems.raise_if_any()
    async with p.db.session() as s:
        rows = {
            row.position: row
            for row in await s.scalars(
                select(DatasetItem).where(
                    col(DatasetItem.dataset_id) == pool.id, col(DatasetItem.position).in_({pos for _, pos in items})
                )
            )
        }
    for i, (_, position) in enumerate(items):
        if position not in rows:
            problems.add(f"itemIds[{i}]", None, "not_in_pool", f"is not an item of {dataset_name}")
    problems.raise_if_any()
    positions = [position for _, position in items]
    spec = rules.model_spec(name.strip(), [dict(rows[position].fields) for position in positions])
    spec.config["selection"] = {"dataset": dataset_name, "positions": positions}
    return await _store_model(p, view, actor, spec, "selection", card=card, published=published, anonymous=anonymous)


async def _named_dataset(p: Platform, actor: Actor, task_code: str, name: str, dataset_name: str) -> Dataset:
    """For a submission that names a data set (predictions for it, a selection from it): InvalidInput unless its
    display ``name`` has 1 to 100 characters, NotFound unless ``actor`` can see ``dataset_name``; else that set."""
    if not 1 <= len((name or "").strip()) <= 100:
        raise InvalidInput.from_errors([FieldError("name", "length", "must have 1 to 100 characters")])
    visible = {d.name: d for d in await dataset_service.list_datasets(p, actor, task_code)}
    dataset = visible.get(dataset_name)
    if dataset is None:
        raise NotFound(f"No data set {dataset_name!r} of {task_code} that you can see; the datasets query lists them")
    return dataset


async def _store_model(
    p: Platform,
    view: task_service.TaskView,
    actor: Actor,
    spec: ModelSpec,
    kind: str,
    *,
    card: dict[str, Any],
    published: bool,
    anonymous: bool,
) -> tuple[ModelRow, list[Evaluation]]:
    """Store a checked submission of ``kind`` (an attempt, throttled) and queue its evaluation on every scoring set
    of the task."""
    async with p.db.write() as s:
        model = ModelRow(
            task_id=view.row.id,
            user_id=actor.person_id,
            name=spec.name,
            backend=spec.backend,
            config=spec.config,
            card=card,
            published=published,
            anonymous=anonymous,
        )
        await add_attempt(s, view, actor, model, kind)
        scoring = await dataset_service.scoring_dataset_ids(s, view.row.id)
        evaluations = [Evaluation(model_id=model.id, dataset_id=d) for d in scoring]
        s.add_all(evaluations)
        await s.flush()
    await queue(p, view.row.id, [e.id for e in evaluations])
    p.caches.boards.pop(model.task_id)  # the board's cached inputs (services.leaderboard.BoardData)
    return model, evaluations


async def requeue_unfinished(p: Platform, *, running_too: bool) -> int:
    """Send again the evaluations that never started (and, with ``running_too``, those a stopped worker left
    running); the runner resumes each from its stored chunks. Returns how many were sent."""
    statuses = [EvaluationStatus.QUEUED, EvaluationStatus.RUNNING] if running_too else [EvaluationStatus.QUEUED]
    async with p.db.session() as s:
        rows = (
            await s.execute(
                select(col(Evaluation.id), col(Evaluation.model_id))
                .where(col(Evaluation.status).in_(statuses))
                .order_by(col(Evaluation.id))
            )
        ).all()
    by_model: dict[int, list[int]] = {}
    for evaluation_id, model_id in rows:
        by_model.setdefault(model_id, []).append(evaluation_id)
    enqueue(p, list(by_model.values()))  # a job per model: each loads its model once
    return len(rows)


async def queue_positions(p: Platform, evaluation_ids: list[int]) -> dict[int, int]:
    """Where each QUEUED evaluation of ``evaluation_ids`` waits: 1 + how many evaluations queued before it (a smaller
    id) are queued or running, on every task (the workers are shared). Others are left out. One query."""
    if not evaluation_ids:
        return {}
    waiting = [EvaluationStatus.QUEUED, EvaluationStatus.RUNNING]
    async with p.db.session() as s:
        queued = list(
            await s.scalars(
                select(col(Evaluation.id)).where(
                    col(Evaluation.id).in_(set(evaluation_ids)), col(Evaluation.status) == EvaluationStatus.QUEUED
                )
            )
        )
        if not queued:
            return {}
        ahead = sorted(
            await s.scalars(
                select(col(Evaluation.id)).where(col(Evaluation.status).in_(waiting), col(Evaluation.id) < max(queued))
            )
        )
    positions = {}
    for evaluation_id in queued:
        positions[evaluation_id] = 1 + bisect.bisect_left(ahead, evaluation_id)
    return positions


async def visible_models(
    p: Platform, actor: Actor, task_id: int, model_ids: list[int]
) -> dict[int, tuple[ModelRow, bool]]:
    """The models of a task the caller already sees (a snapshot's rows, say) that ``actor`` may see, by id, each
    with whether they see everything about it: :func:`get_model`'s rules in one query for the lot."""
    if not model_ids:
        return {}
    async with p.db.session() as s:
        rows = list(
            await s.scalars(
                select(ModelRow).where(col(ModelRow.task_id) == task_id, col(ModelRow.id).in_(set(model_ids)))
            )
        )
        owner = actor.is_authenticated and await task_service.is_owner(s, actor, task_id)
    found = {}
    for model in rows:
        privileged = owner or (actor.is_authenticated and model.user_id == actor.user_id)
        if privileged or model.published:
            found[model.id] = (model, privileged)
    return found


async def get_model(p: Platform, actor: Actor, model_id: int) -> tuple[ModelRow, bool]:
    """A model and whether ``actor`` may see everything about it (its submitter, owners and admins).

    Unpublished models are visible only to them; others get NotFound.
    """
    async with p.db.session() as s:
        model = await s.get(ModelRow, model_id)
        if model is None:
            raise NotFound(f"No model {model_id} that you can see")
        privileged = actor.is_authenticated and (
            model.user_id == actor.user_id or await task_service.is_owner(s, actor, model.task_id)
        )
        code = await s.scalar(select(col(TaskRow.code)).where(col(TaskRow.id) == model.task_id))
    if not privileged:
        if not model.published or code is None:
            raise NotFound(f"No model {model_id} that you can see")
        await task_service.get_task(p, actor, code)  # hidden tasks stay hidden
    return model, privileged


@dataclass
class ModelPage:
    """One page of a task's models, newest first: each with whether the caller may see everything about it."""

    items: list[tuple[ModelRow, bool]]
    has_next: bool
    window: cursors.Window | None = None  # where the page sits (cursors, previous rows)
    total: Callable[[], Awaitable[int]] | None = None  # counts the whole filtered list (one query, when asked)


def encode_model_cursor(model_id: int) -> str:
    return cursors.encode("model", model_id)


async def list_models(
    p: Platform,
    actor: Actor,
    task_code: str,
    *,
    mine: bool = False,
    published: bool | None = None,
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
) -> ModelPage:
    """A task's models, newest first: published ones for everyone who can see the task, plus one's own; every one
    for the task's owners and admins. ``mine`` narrows to the caller's own (signed in), ``published`` to published
    or unpublished ones. Keyset pages: ``first``/``after`` forward, ``last``/``before`` back."""
    request = cursors.PageRequest.of(
        "model", first=first, after=after, last=last, before=before, max_size=p.settings.page_max_size
    )
    view = await task_service.get_task(p, actor, task_code)
    if mine:
        require_human(actor)
    where = [col(ModelRow.task_id) == view.row.id]
    async with p.db.session() as s:
        sees_all = actor.is_authenticated and await task_service.is_owner(s, actor, view.row.id)
        if mine:
            where.append(col(ModelRow.user_id) == actor.user_id)
        elif not sees_all:
            visible = col(ModelRow.published).is_(True)
            where.append(visible | (col(ModelRow.user_id) == actor.user_id) if actor.user_id is not None else visible)
        if published is not None:
            where.append(col(ModelRow.published).is_(published))
        page = await cursors.window(s, select(ModelRow).where(*where), col(ModelRow.id), "model", request)

    async def total() -> int:
        async with p.db.session() as s:
            return await cursors.count(s, select(col(ModelRow.id)).where(*where))

    return ModelPage(
        [(m, sees_all or (actor.user_id is not None and m.user_id == actor.user_id)) for m in page.rows],
        page.has_next,
        page,
        total,
    )


async def _own_model(s: Any, actor: Actor, model_id: int) -> ModelRow:
    """A model its submitter (or an admin) may change; NotFound for one the actor cannot see, Forbidden for one
    they can see but not change (a published model of someone else, any model of a task they own)."""
    model = await s.get(ModelRow, model_id, with_for_update=s.get_bind().dialect.name == "postgresql")
    if model is None:
        raise NotFound(f"No model {model_id} that you can see")
    if model.user_id == actor.user_id or actor.is_admin:
        return model
    if model.published or await task_service.is_owner(s, actor, model.task_id):
        raise Forbidden(f"Only the submitter of model {model_id} (or an admin) can change or delete it")
    raise NotFound(f"No model {model_id} that you can see")


async def update_model(
    p: Platform,
    actor: Actor,
    model_id: int,
    *,
    name: str | None = None,
    published: bool | None = None,
    anonymous: bool | None = None,
    card: dict[str, Any] | None = None,
) -> ModelRow:
    """The submitter (or an admin) renames a model, publishes or withdraws it from the leaderboard, shows or hides
    their name, or replaces its card. Fields left out (None) do not change."""
    actor = require_human(actor)
    errors = []
    if name is not None and not 1 <= len(name.strip()) <= 100:
        errors.append(FieldError("name", "length", "must have 1 to 100 characters"))
    checked_card = None
    if card is not None:
        try:
            checked_card = check_card(card)
        except InvalidInput as exc:
            errors += exc.field_errors
    if errors:
        raise InvalidInput.from_errors(errors)
    async with p.db.write() as s:
        model = await _own_model(s, actor, model_id)
        if name is not None:
            model.name = name.strip()
        if published is not None:
            model.published = published
        if anonymous is not None:
            model.anonymous = anonymous
        if checked_card is not None:
            model.card = checked_card
    p.caches.boards.pop(model.task_id)
    return model


async def delete_model(p: Platform, actor: Actor, model_id: int) -> ModelRow:
    """The submitter (or an admin) deletes a model with its evaluations; refused while one is running (the job
    would write to rows that are gone): try again when it finishes. Queued evaluations go with it."""
    actor = require_human(actor)
    async with p.db.write() as s:
        model = await _own_model(s, actor, model_id)
        running = await s.scalar(
            select(func.count())
            .select_from(Evaluation)
            .where(col(Evaluation.model_id) == model_id, col(Evaluation.status) == EvaluationStatus.RUNNING)
        )
        if running:
            raise Conflict(
                f"Model {model_id} has {running} evaluation(s) running; delete it when they finish "
                "(its evaluations say how far they are)"
            )
        await s.execute(delete(Evaluation).where(col(Evaluation.model_id) == model_id))
        await s.delete(model)
    p.caches.boards.pop(model.task_id)
    return model


async def evaluations_page(
    p: Platform,
    model_id: int,
    *,
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
    with_hidden: bool = False,
) -> cursors.Listing:
    """A page of a model's evaluations, each with its data set, in the order they were queued (up to 100 a page, 100
    by default: a model is evaluated once per scoring set), for a reader already shown the model. Evaluations on
    HIDDEN sets only ``with_hidden`` (for the task's owners and admins: :func:`sees_hidden_sets`)."""
    request = cursors.PageRequest.of(
        "evaluation", first=first, after=after, last=last, before=before, max_size=p.settings.page_max_size, default=100
    )
    where = col(Evaluation.model_id) == model_id
    if not with_hidden:
        where = where & (col(Dataset.access) != DatasetAccess.HIDDEN)
    joined = select(Evaluation, Dataset).join(Dataset, col(Dataset.id) == col(Evaluation.dataset_id))
    statement = joined.where(where)
    async with p.db.session() as s:
        page = await cursors.window(
            s,
            statement,
            col(Evaluation.id),
            "evaluation",
            request,
            key=lambda row: int(row[0].id),
            scalars=False,
            descending=False,
        )
    counted = select(col(Evaluation.id)).join(Dataset, col(Dataset.id) == col(Evaluation.dataset_id)).where(where)
    return cursors.Listing(page, cursors.counter(p, counted))


async def sees_hidden_sets(p: Platform, actor: Actor, task_id: int) -> bool:
    """Whether ``actor`` may see how models did on the task's HIDDEN sets: its owners and admins (a submitter sees
    the scoring sets only: a hidden set's figures would tell what the owners keep back)."""
    async with p.db.session() as s:
        return await task_service.is_owner(s, actor, task_id)


async def evaluations_of(p: Platform, model_id: int) -> list[tuple[Evaluation, Dataset]]:
    """Every evaluation of a model with its data set, by data set name (for jobs and tools; the API pages them)."""
    async with p.db.session() as s:
        rows = await s.execute(
            select(Evaluation, Dataset)
            .join(Dataset, col(Dataset.id) == col(Evaluation.dataset_id))
            .where(col(Evaluation.model_id) == model_id)
            .order_by(col(Dataset.name))
        )
        return [(e, d) for e, d in rows.all()]


MAX_PREDICTIONS = 100_000


async def submit_predictions(
    p: Platform,
    actor: Actor,
    *,
    task_code: str,
    name: str,
    dataset_name: str,
    predictions: list[Any],
    card: dict[str, Any] | None = None,
    published: bool = False,
    anonymous: bool = False,
) -> tuple[ModelRow, Evaluation]:
    """A model builder uploads predictions for one data set instead of a model: one output per item, in the order
    of ``datasetItems``, in the shape the model server contract returns (e.g. ``{"label": "positive"}``). They are
    scored at once like a model's outputs, but measure no speed or memory. Throttled like submissions, and counted
    whether or not they can be scored (a failure stays as an unpublished model with a FAILED evaluation).

    On a SCORING set the figures shown at once are those of its public part (``visibility.public_part``); the
    private part's are held until ``visibility.held_released``, so that subset queries against the leaderboard
    cannot recover the gold of the items that decide the final ranking."""
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    require_kind(view.task, "predictions")
    card = check_card(card)
    dataset = await _named_dataset(p, actor, task_code, name, dataset_name)
    if dataset.size == 0:
        raise InvalidInput.from_errors([FieldError("datasetName", "empty", f"{dataset_name} has no items to predict")])
    if not isinstance(predictions, list) or len(predictions) != dataset.size or len(predictions) > MAX_PREDICTIONS:
        raise InvalidInput.from_errors(
            [
                FieldError(
                    "predictions", "count", f"give exactly one prediction per item of {dataset_name}: {dataset.size}"
                )
            ]
        )
    problems = Problems(more_field="predictions", again="send them again")
    for i, value in enumerate(predictions):
        if not isinstance(value, dict):
            problems.add(f"predictions[{i}]", None, "type", "must be a JSON object such as a model server returns")
    problems.raise_if_any()
    async with p.db.write() as s:
        model = ModelRow(
            task_id=view.row.id,
            user_id=actor.person_id,
            name=name.strip(),
            backend=None,
            config={"predictions_for": dataset_name},
            card=card,
            published=published,
            anonymous=anonymous,
        )
        await add_attempt(s, view, actor, model, "predictions")
        evaluation = Evaluation(model_id=model.id, dataset_id=dataset.id)
        s.add(evaluation)
        await s.flush()
    runner = Runner(p.settings, p.plugins, db=p.db)
    try:
        await runner.score_uploaded(evaluation.id, predictions)
    except Exception as exc:
        # Predictions the task cannot score (e.g. outputs without its target field): the attempt still counts
        # against the limit (else failures would be free probes), as an unpublished model whose evaluation says why.
        async with p.db.write() as s:
            await s.execute(update(ModelRow).where(col(ModelRow.id) == model.id).values(published=False))
        await runner.fail(evaluation.id, f"the predictions could not be scored: {exc}", "")
        p.caches.boards.pop(view.row.id)
        await announce.updated(p, "evaluationUpdated", view.row.id, [evaluation.id])
        raise
    await announce.updated(p, "evaluationUpdated", view.row.id, [evaluation.id])
    async with p.db.session() as s:
        stored, scored = await s.get(ModelRow, model.id), await s.get(Evaluation, evaluation.id)
    if stored is None or scored is None:  # deleted meanwhile
        raise NotFound(f"Model {model.id} was deleted while it was being scored")
    p.caches.boards.pop(stored.task_id)
    return stored, scored


async def released_private_part(
    p: Platform, actor: Actor, evaluation: Evaluation, dataset: Dataset
) -> dict[str, Any] | None:
    """The held figures of an evaluation's private part (``{"metrics", "details"}``) for ``actor``: the task's owners
    and admins read them at any time (they hold the gold); everyone else once they are released
    (``visibility.held_released``: the set's round has ended, or it is no longer a scoring set). None before, and
    for evaluations without a private part."""
    held = (evaluation.details or {}).get("held")
    if not isinstance(held, dict):
        return None
    ended = False
    async with p.db.session() as s:
        if dataset.round_id is not None and dataset.access == DatasetAccess.SCORING:
            ended = await s.scalar(select(col(Round.ended_at)).where(col(Round.id) == dataset.round_id)) is not None
        if visibility.held_released(dataset, ended):
            return held
        return held if await task_service.is_owner(s, actor, dataset.task_id) else None


async def get_evaluation(p: Platform, actor: Actor, evaluation_id: int) -> tuple[Evaluation, Dataset, bool]:
    """An evaluation with its data set, for those who may see its model, and whether they see everything."""
    async with p.db.session() as s:
        evaluation = await s.get(Evaluation, evaluation_id)
        dataset = None if evaluation is None else await s.get(Dataset, evaluation.dataset_id)
    if evaluation is None or dataset is None:
        raise NotFound(f"No evaluation {evaluation_id}")
    try:
        model, privileged = await get_model(p, actor, evaluation.model_id)
    except NotFound:
        raise NotFound(f"No evaluation {evaluation_id}") from None
    if dataset.access == DatasetAccess.HIDDEN and not await sees_hidden_sets(p, actor, model.task_id):
        raise NotFound(f"No evaluation {evaluation_id}")
    return evaluation, dataset, privileged
