"""Examples: the model-in-the-loop write path, retraction, reading and paging.

``submit`` follows the data flow of the architecture: authorise and rate-limit, let the task validate the fields,
ask the round's target model(s), let the task decide ``fooled``, then store the example and every counter in one
transaction and announce it after the commit. If the model cannot answer, the example is stored as
``PENDING_PREDICTION``: an annotator's work is never lost.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, bindparam, func, insert, or_, select, update
from sqlmodel import col

from dynaforge import media
from dynaforge.db.engine import rowcount
from dynaforge.db.models import (
    Context,
    Example,
    ExampleMedia,
    ExampleStatus,
    Media,
    Round,
    Suggestion,
    TaskOwner,
    TaskRow,
    User,
    Validation,
    as_utc,
    row_object,
    table,
    utcnow,
)
from dynaforge.errors import FieldError, Forbidden, InvalidInput, NearDuplicate, NotFound, QuotaExceeded, RoundClosed
from dynaforge.inference.backends import InferenceError, UnusableOutput
from dynaforge.services import announce, cursors, near_duplicates, replies, tutorial, verdicts
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human, require_user
from dynaforge.services.counters import move, move_sync
from dynaforge.services.platform import Platform
from dynaforge.tasks.base import ModelSpec, Task
from dynaforge.tasks.fields import Role
from dynaforge.tasks.outputs import judge, read_output

log = logging.getLogger(__name__)

#: An example as events carry it, and the row an event describes (the shapes are the announcer's).
event_payload = announce.example_payload
example_from_payload = announce.example_from_payload


@dataclass(frozen=True)
class Outcome:
    """What ``submit`` returns: the stored example and, when pending, why the model did not answer."""

    example: Example
    pending_reason: str | None = None
    #: who decides whether it fooled the model, when that waits (``judge`` or ``people``); None: decided now
    verdict_by: str | None = None


@dataclass(frozen=True)
class Page:
    items: list[Example]
    has_next: bool
    end_cursor: str | None
    task_code: str | None = None  # every item's task (a page is of one task)
    rounds: dict[int, Round] = field(default_factory=dict)  # the items' rounds by id
    has_previous: bool = False
    start_cursor: str | None = None
    total: Callable[[], Awaitable[int]] | None = None  # counts the whole filtered list (one query, when asked)


def encode_cursor(example_id: int) -> str:
    return cursors.encode("example", example_id)


def decode_cursor(cursor: str) -> int:
    return cursors.decode("example", cursor)


async def predict(
    p: Platform, task: Task, round_: Round, model_input: dict[str, Any], stream: replies.ReplyStream | None = None
) -> tuple[list[dict[str, Any]], float]:
    """Ask every target model of the round at once; returns each member's prediction and the slowest one's ms.
    ``stream``: where the pieces of the models' replies go as they are written (the annotator's reply stream)."""
    specs = [ModelSpec.from_dict(m) for m in round_.target_models]
    if not specs:
        raise InferenceError(f"round {round_.number} of {task.code} has no target model")
    if task.image_fields:  # the models read the pictures, not their keys
        store = media.MediaStore.under(p.settings.data_dir)
        names = [f.name for f in task.image_fields]
        try:
            model_input = await asyncio.to_thread(media.with_pictures, store, model_input, names)
        except (LookupError, OSError) as exc:
            raise InferenceError(str(exc)) from exc
    answers = await asyncio.gather(
        *(
            p.inference.predict(spec, [model_input])
            if stream is None
            else p.inference.predict(spec, [model_input], on_token=stream.sink(spec.name))
            for spec in specs
        ),
        return_exceptions=True,
    )
    members: list[dict[str, Any]] = []
    for spec, answer in zip(specs, answers, strict=True):
        if isinstance(answer, BaseException):
            if isinstance(answer, InferenceError):
                raise answer
            raise InferenceError(f"model {spec.name!r} failed: {type(answer).__name__}: {answer}") from answer
        try:
            prediction = read_output(task, answer.outputs[0], model_input)
        except (ValueError, TypeError) as exc:
            raise UnusableOutput(f"model {spec.name!r} gave an unusable output: {exc}") from exc
        members.append({"model": spec.name, "prediction": prediction, "latency_ms": round(answer.latency_ms, 3)})
    p.target_problems.pop(task.code, None)  # it answers now, whatever the start-up probe found
    return members, max(float(m["latency_ms"]) for m in members)


def without_server_paths(p: Platform, round_: Round, message: str) -> str:
    """A target model's failure as non-admins see it: without the server's paths that the round's target models are
    configured with (a local model folder: what loading it says names the folder, and the files it holds or lacks)
    or that hold uploaded models (the data directory). The log keeps the message whole."""
    paths: set[str] = set()
    for spec in round_.target_models:
        for value in (spec.get("config") or {}).values():
            if isinstance(value, str) and value and (value[0] in "/~." or os.path.exists(os.path.expanduser(value))):
                paths |= {value, os.path.expanduser(value), os.path.abspath(os.path.expanduser(value))}
    data_dir = str(p.settings.data_dir)
    paths |= {data_dir, os.path.abspath(os.path.expanduser(data_dir))}
    for path in sorted((p for p in paths if len(p) > 1), key=len, reverse=True):  # "/a/b" before "/a"
        message = message.replace(path, "<server path>")
    return message


async def submit(
    p: Platform,
    actor: Actor,
    *,
    task_code: str,
    fields: Any,
    context_id: int | None = None,
    time_taken_ms: int | None = None,
    tag: str | None = None,
    suggestion_id: int | None = None,
    reply_stream: str | None = None,
    allow_near_duplicate: bool = False,
) -> Outcome:
    """Store an annotator's example (see the module's docstring). ``suggestion_id``: the machine suggestion
    (``suggestEdits``) it was written from, the annotator's own, of this task and round; the example then counts as
    ``ASSISTED`` and records the adversary, and it stays the annotator's example in every count. ``reply_stream``:
    the annotator's stream id, where the target's reply is published as it is written (:mod:`.replies`).

    Where the task's owners set ``near_duplicate_threshold``, a fooling example at least that similar to an earlier
    fooling example of the round (on the same context) raises NearDuplicate and nothing is stored, unless
    ``allow_near_duplicate``: then it is stored with the earlier example and the similarity
    (:mod:`.near_duplicates`)."""
    actor = require_human(actor)
    stream_topic = None if reply_stream is None else replies.topic(actor, reply_stream)
    view = await task_service.get_task(p, actor, task_code)
    task = view.task
    if not view.row.active:
        raise RoundClosed(f"Task {task_code} is not collecting examples at the moment")
    await p.limiter.hit(
        f"examples:{actor.user_id}:{task_code}", p.settings.examples_per_minute, 60.0, f"examples for {task_code}"
    )
    await tutorial.require_qualified(p, actor, view)
    cap = view.settings.daily_example_cap
    if cap:
        await _check_daily_cap(p, view.row.id, actor.person_id, cap, task_code)
    round_, context = await open_round_and_context(p, view, context_id)
    suggestion = await _own_suggestion(p, actor, suggestion_id, round_.id) if suggestion_id is not None else None
    if suggestion is not None and suggestion.context_id != context_id:
        raise InvalidInput.from_errors(
            [FieldError("suggestionId", "context", "was made for another context; write the example on that one")]
        )
    if tag is not None and len(tag) > 100:
        raise InvalidInput.from_errors([FieldError("tag", "max_length", "must have at most 100 characters")])
    if time_taken_ms is not None and not 0 <= time_taken_ms <= 7 * 24 * 3600 * 1000:
        raise InvalidInput.from_errors([FieldError("timeTakenMs", "range", "must be between 0 and one week")])

    context_fields = dict(context.fields) if context is not None else None
    cleaned = task.validate_example(fields, context_fields)
    if context_fields is None:
        context_fields = {k: cleaned.pop(k) for k in task.field_names(Role.CONTEXT) if k in cleaned}
        stored_fields = {**context_fields, **cleaned}
    else:
        stored_fields = cleaned

    images = await check_images(p, actor, task, stored_fields) if task.image_fields else []
    model_input = task.build_model_input(context_fields, cleaned)
    pending_reason = None
    stored_reason: str | None = None  # whole, in the row (non-admins read it without the server's paths)
    unusable = False
    prediction: dict[str, Any] | None = None
    members: list[dict[str, Any]] = []
    inference_ms: float | None = None
    fooled: bool | None = None
    verdict: dict[str, Any] | None = None
    status = ExampleStatus.CREATED
    started = time.perf_counter()
    stream = None if stream_topic is None else replies.ReplyStream(p, stream_topic)
    try:
        try:
            members, inference_ms = await predict(p, task, round_, model_input, stream)
        finally:
            if stream is not None:
                await stream.close()
        prediction, status, fooled, verdict = decide(task, round_.ensemble_rule, members, cleaned, context_fields)
    except InferenceError as exc:
        pending_reason = str(exc) if actor.is_admin else without_server_paths(p, round_, str(exc))
        stored_reason, unusable = str(exc)[:2000], isinstance(exc, UnusableOutput)
        status = ExampleStatus.PENDING_PREDICTION
        log.warning("example for %s stored pending: %s", task_code, exc)
    user_id, round_id, context_id = actor.person_id, round_.id, context.id if context is not None else None
    sketch: list[int] | None = None
    near: near_duplicates.Match | None = None
    threshold = view.settings.near_duplicate_threshold
    if fooled and threshold:
        sketch = near_duplicates.sketch(near_duplicates.texts_of(task, cleaned))
        near = await near_duplicates.closest(p, round_id, context_id, sketch)
        if near is not None and near.similarity < threshold:
            near = None
        if near is not None and not allow_near_duplicate:
            own = near.user_id == user_id
            raise NearDuplicate(
                f"This example is {near.similarity:.0%} similar to "
                + (f"your example {near.example_id}" if own else "an example already written")
                + f" in this round (the task flags {threshold:.0%} and more): change it, or send it again allowing "
                "near-duplicates, and the validators will see how close it is.",
                near.similarity,
                threshold,
                near.example_id if own else None,
            )
    now = utcnow()  # before the insert and the commit: events' latency is measured from it
    values = {
        "task_id": view.row.id,
        "round_id": round_id,
        "context_id": context_id,
        "user_id": user_id,
        "fields": stored_fields,
        "prediction": prediction,
        "corrected_target": None,
        "model_predictions": members,
        "fooled": fooled,
        "status": status,
        "tag": tag,
        "time_taken_ms": time_taken_ms,
        "source": "HUMAN" if suggestion is None else "ASSISTED",
        "adversary": None if suggestion is None else suggestion.adversary,
        "suggestion_id": None if suggestion is None else suggestion.id,
        "inference_ms": inference_ms if inference_ms is not None else (time.perf_counter() - started) * 1000,
        "pending_reason": stored_reason,
        "prediction_attempts": 1 if unusable else 0,  # an unreadable answer is the first of UNUSABLE_OUTPUT_ATTEMPTS
        "verdict": verdict,
        "near_duplicate_of": None if near is None else near.example_id,
        "near_duplicate_similarity": None if near is None else near.similarity,
        "created_at": now,
        "updated_at": now,
    }

    example = await store(p, values, task_code=task_code, round_number=round_.number, sketch=sketch, images=images)
    waiting = task.verdict if status == ExampleStatus.PENDING_VERDICT else None
    if waiting == "judge":
        verdicts.start_judging(p, example.id)
    return Outcome(example, pending_reason, waiting)


async def check_images(p: Platform, actor: Actor, task: Task, fields: dict[str, Any]) -> list[str]:
    """The keys of the images an example's image fields name, each checked: the writer uploaded it, and it fits the
    field's formats and pixels. InvalidInput (naming each field) otherwise; nothing is stored then."""
    named = [(f, fields[f.name]["media"]) for f in task.image_fields if isinstance(fields.get(f.name), dict)]
    if not named:
        return []
    async with p.db.session() as s:
        rows = {
            r.sha256: r
            for r in await s.scalars(
                select(Media).where(
                    col(Media.sha256).in_([key for _, key in named]), col(Media.uploaded_by) == actor.person_id
                )
            )
        }
    errors = []
    for image_field, key in named:
        row = rows.get(key)
        if row is None:
            errors.append(
                FieldError(image_field.name, "media", "names no image you uploaded: upload it with uploadMedia")
            )
        elif row.source_format not in image_field.formats:
            errors.append(
                FieldError(
                    image_field.name,
                    "file_type",
                    f"must be one of {', '.join(image_field.formats)}; it is {row.source_format}",
                )
            )
        elif row.width * row.height > image_field.max_pixels:
            errors.append(
                FieldError(
                    image_field.name,
                    "max_pixels",
                    f"has {row.width}×{row.height} pixels; this field takes at most {image_field.max_pixels}",
                )
            )
    if errors:
        raise InvalidInput.from_errors(errors)
    return sorted({key for _, key in named})


def decide(
    task: Task, rule: str, members: list[dict[str, Any]], example: dict[str, Any], context: dict[str, Any]
) -> tuple[dict[str, Any], str, bool | None, dict[str, Any] | None]:
    """A new example's prediction, status, ``fooled`` and verdict once its target answered: the task's rule decides
    at once (:func:`judge`, ``CREATED``); a task whose judge or people decide stores it waiting
    (:func:`dynaforge.services.verdicts.initial`), with the first target's answer."""
    if not verdicts.deferred(task):
        prediction, decided = judge(task, rule, members, example, context)
        return prediction, ExampleStatus.CREATED, decided, None
    for m in members:
        m["fooled"] = None
    status, waiting, verdict = verdicts.initial(task, example)
    return dict(members[0]["prediction"]), status, waiting, verdict


async def store(
    p: Platform,
    values: dict[str, Any],
    *,
    task_code: str,
    round_number: int,
    sketch: list[int] | None = None,
    images: list[str] | None = None,
) -> Example:
    """Insert one new example (``values``: its columns) with every counter it moves and its near-duplicate
    ``sketch`` (if any), in one transaction, then announce it (``example_created``, and ``model_fooled`` when it
    fooled the model). The write path of people's examples and of machine adversaries' candidates alike."""
    row = {**_NEW_EXAMPLE, **values}
    if row["fooled"] and row.get("fooled_at") is None:
        row["fooled_at"] = row.get("created_at") or utcnow()
    round_id, user_id, context_id = row["round_id"], row["user_id"], row["context_id"]
    status, fooled = row["status"], row["fooled"]

    def write(s: Connection) -> int:
        example_id: int = s.execute(_INSERT_EXAMPLE, row).scalar_one()
        move_sync(s, round_id=round_id, user_id=user_id, before=None, after=(status, fooled))
        if context_id is not None:
            s.execute(_COUNT_CONTEXT_USE, {"context_id": context_id, "fooled": int(bool(fooled))})
        if sketch:
            near_duplicates.store_sketch(s, example_id, round_id, context_id, sketch)
        if images:
            s.execute(_LINK_IMAGE, [{"example_id": example_id, "sha256": key} for key in images])
        return example_id

    example = row_object(Example, {**row, "id": await p.db.run_write(write)})
    payload = event_payload(example, task_code, round_number)
    await announce.example_created(p, payload)
    if fooled:
        await announce.model_fooled(p, payload)
    return example


# A new example goes in with a core INSERT (the ORM's unit of work is not needed for one row); its columns start
# from the table's plain defaults (vote counts, flags), and submit gives the rest.
_EXAMPLES = table(Example)
_INSERT_EXAMPLE = insert(_EXAMPLES).returning(_EXAMPLES.c.id)
_NEW_EXAMPLE: dict[str, Any] = {
    name: field.default
    for name, field in Example.model_fields.items()
    if name != "id" and field.default_factory is None and not field.is_required()
} | {"verdict": None}  # a rule decides at once: no verdict beside the example


_LINK_IMAGE = insert(table(ExampleMedia))

_CONTEXTS = table(Context)
_COUNT_CONTEXT_USE = (  # on the core table: see counters._statements
    update(_CONTEXTS)
    .where(_CONTEXTS.c.id == bindparam("context_id"))
    .values(total_used=_CONTEXTS.c.total_used + 1, total_fooled=_CONTEXTS.c.total_fooled + bindparam("fooled"))
)


async def open_round_and_context(
    p: Platform, view: task_service.TaskView, context_id: int | None
) -> tuple[Round, Context | None]:
    """The task's open round and, when ``context_id`` is given, that context; RoundClosed, NotFound or InvalidInput
    (on ``contextId``) when an example cannot be written there."""
    task_code = view.task.code
    round_ = await task_service.cached_current_round(p, view.row.id)
    context = await cached_context(p, context_id) if context_id is not None else None
    if round_ is None or round_.ended_at is not None:
        raise RoundClosed(f"Task {task_code} has no open round; wait for its owners to open the next one")
    if context_id is not None and (context is None or context.task_id != view.row.id):
        raise NotFound(f"No context {context_id} in task {task_code}; ask nextContext for one")
    if context is not None and context.round_id != round_.id:
        raise InvalidInput.from_errors(
            [
                FieldError(
                    "contextId",
                    "round",
                    f"belongs to an earlier round; ask nextContext for one of round {round_.number}",
                )
            ]
        )
    return round_, context


async def _own_suggestion(p: Platform, actor: Actor, suggestion_id: int, round_id: int) -> Suggestion:
    """The caller's suggestion ``suggestion_id`` of the round, or an InvalidInput on ``suggestionId``."""
    async with p.db.session() as s:
        suggestion = await s.get(Suggestion, suggestion_id)
    if suggestion is None or suggestion.user_id != actor.person_id:
        raise InvalidInput.from_errors(
            [FieldError("suggestionId", "not_found", "is not a suggestion made to you; ask suggestEdits for one")]
        )
    if suggestion.round_id != round_id:
        raise InvalidInput.from_errors(
            [FieldError("suggestionId", "round", "was made in an earlier round; ask suggestEdits again")]
        )
    return suggestion


async def _check_daily_cap(p: Platform, task_id: int, user_id: int, cap: int, task_code: str) -> None:
    """The task's daily cap per user, counted over the current UTC day (examples written at the same moment may
    pass it by a few on PostgreSQL, where they do not wait for each other)."""
    written, midnight = await _written_today(p, task_id, user_id)
    if written >= cap:
        retry = (midnight + timedelta(days=1) - utcnow()).total_seconds()
        raise QuotaExceeded(
            f"You reached {task_code}'s cap of {cap} examples a day; come back after midnight UTC",
            quota="EXAMPLES_PER_DAY",
            limit=cap,
            retry_after_s=retry,
        )


async def _written_today(p: Platform, task_id: int, user_id: int) -> tuple[int, datetime]:
    """How many examples the user wrote in the task since midnight UTC, and that midnight."""
    midnight = utcnow().replace(hour=0, minute=0, second=0, microsecond=0)
    async with p.db.session() as s:
        written = await s.scalar(
            select(func.count())
            .select_from(Example)
            .where(
                col(Example.task_id) == task_id, col(Example.user_id) == user_id, col(Example.created_at) >= midnight
            )
        )
    return int(written or 0), midnight


async def remaining_today(p: Platform, actor: Actor, task_code: str) -> int | None:
    """How many more examples the user may write in the task today (UTC) under its daily cap; None: no cap."""
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    cap = view.settings.daily_example_cap
    if not cap:
        return None
    written, _ = await _written_today(p, view.row.id, actor.person_id)
    return max(0, cap - written)


async def cached_context(p: Platform, context_id: int) -> Context | None:
    """A context row; its fields, task and round never change, so it is cached for the process's life."""

    async def load() -> Context | None:
        async with p.db.session() as s:
            return await s.get(Context, context_id)

    return await p.caches.contexts.get_or_load(context_id, load)


_RETRACTABLE = (
    ExampleStatus.CREATED,
    ExampleStatus.PENDING_PREDICTION,
    ExampleStatus.PENDING_VERDICT,
    ExampleStatus.FLAGGED,
)


async def retract(p: Platform, actor: Actor, example_id: int) -> Example:
    """The author (or a task owner or admin) withdraws an example before it has been accepted or rejected."""
    actor = require_user(actor)
    async with p.db.write() as s:
        example = await s.get(Example, example_id, with_for_update=p.db.dialect == "postgresql")
        if example is None:
            raise NotFound(f"No example {example_id}")
        if example.user_id != actor.user_id and not await task_service.is_owner(s, actor, example.task_id):
            raise Forbidden("Only the author, the task's owners and admins can retract an example")
        if example.status == ExampleStatus.RETRACTED:
            return example
        if example.status not in _RETRACTABLE:
            raise Forbidden(f"An example that is {example.status.lower()} can no longer be retracted")
        before = (example.status, example.fooled)
        example.status = ExampleStatus.RETRACTED
        example.updated_at = utcnow()
        await move(
            s, round_id=example.round_id, user_id=example.user_id, before=before, after=(example.status, example.fooled)
        )
    return example


# ---------------------------------------------------------------------------------------------- pending examples


async def _note_unusable(p: Platform, example_id: int, round_: Round, task_code: str, exc: UnusableOutput) -> None:
    """Count one more unusable output in a row for a pending example, with its reason (the same model answers the
    same input the same way, so retries stop at ``UNUSABLE_OUTPUT_ATTEMPTS`` until the round's target models
    change: :func:`dynaforge.services.tasks.set_target_models` starts the count again), and say so when they stop."""
    async with p.db.write() as s:
        await s.execute(
            update(Example)
            .where(col(Example.id) == example_id, col(Example.status) == ExampleStatus.PENDING_PREDICTION)
            .values(
                pending_reason=str(exc)[:2000],
                prediction_attempts=col(Example.prediction_attempts) + 1,
                updated_at=utcnow(),
            )
        )
        attempts = await s.scalar(select(col(Example.prediction_attempts)).where(col(Example.id) == example_id))
    if attempts == p.settings.unusable_output_attempts:
        log.warning(
            "example %s of task %s stays pending: round %s's target gave an unusable output %d times in a row (%s); "
            "its predictions are no longer retried until the round's target models change",
            example_id,
            task_code,
            round_.number,
            attempts,
            exc,
        )


def pending_reason(p: Platform, actor: Actor, example: Example, round_: Round) -> str | None:
    """Why ``example`` still waits for a prediction (None once it has one): what its round's target answered
    unreadably, and whether that is asked again, or else that the target was down or too slow. Admins read it with
    the server's paths; the caller checks that ``actor`` may read it at all (its author, the task's owners)."""
    if example.status != ExampleStatus.PENDING_PREDICTION:
        return None
    if not example.prediction_attempts:
        return (
            "the round's target model did not answer (it was down or too slow); it is asked again every "
            f"{p.settings.pending_retry_s:g} s"
        )
    whole = example.pending_reason or "the round's target model gave an unusable output"
    reason = whole if actor.is_admin else without_server_paths(p, round_, whole)
    if example.prediction_attempts >= p.settings.unusable_output_attempts:
        return (
            f"{reason} ({example.prediction_attempts} times in a row; not asked again until the round's target models "
            "change: the task's owners can set working ones, or its author can retract the example)"
        )
    return (
        f"{reason} (asked again every {p.settings.pending_retry_s:g} s, {example.prediction_attempts} time(s) so far)"
    )


@dataclass(frozen=True)
class StuckExample:
    """A pending example whose retries stopped: the round's target gave an unusable output each time."""

    example_id: int
    reason: str
    attempts: int


#: The most stuck examples :func:`stuck_examples` lists (the oldest): enough to see what the target answers.
STUCK_LISTED = 100


async def stuck_examples(p: Platform, actor: Actor, round_: Round) -> list[StuckExample] | None:
    """The round's pending examples whose retries stopped (see :func:`pending_reason`), the oldest
    :data:`STUCK_LISTED`: what the task's owners act on (set working target models, or have the examples retracted).
    None for anyone but the task's owners and admins (admins read the reasons with the server's paths)."""
    if not await task_service.owns_task(p, actor, round_.task_id):
        return None
    async with p.db.session() as s:
        rows = list(
            await s.scalars(
                select(Example)
                .where(
                    col(Example.round_id) == round_.id,
                    col(Example.status) == ExampleStatus.PENDING_PREDICTION,
                    col(Example.prediction_attempts) >= p.settings.unusable_output_attempts,
                )
                .order_by(col(Example.id))
                .limit(STUCK_LISTED)
            )
        )
    return [
        StuckExample(
            e.id,
            (e.pending_reason or "") if actor.is_admin else without_server_paths(p, round_, e.pending_reason or ""),
            e.prediction_attempts,
        )
        for e in rows
    ]


@dataclass(frozen=True)
class TargetProblem:
    """Why a task's round target cannot answer: ``whole`` for admins, ``shown`` without the server's paths."""

    whole: str
    shown: str


async def probe_targets(p: Platform) -> dict[str, TargetProblem]:
    """Ask each task's open round target(s) about the task's ``sample_examples``, once (the server does it at start-up,
    in the background, after loading the models). A target that answers none of them usably (each answer unreadable,
    or no answer at all) is a problem of its task: logged with the task named, and kept in ``p.target_problems``
    for the task's owners and admins until the target answers an example. Returns the problems found, by task code.
    """
    async with p.db.session() as s:
        rows = list(await s.scalars(select(TaskRow).where(col(TaskRow.code).in_(list(p.plugins.registry.tasks)))))
        rounds = {row.code: await task_service.current_round(s, row.id) for row in rows}
    found: dict[str, TargetProblem] = {}
    for code, round_ in sorted(rounds.items()):
        task = p.plugins.registry.tasks.get(code)
        if task is None or round_ is None or round_.ended_at is not None or not task.sample_examples:
            continue
        failures: list[InferenceError] = []
        for values in task.sample_examples:
            context, own = task.split_fields(dict(values))
            try:
                await predict(p, task, round_, task.build_model_input(context, own))
            except InferenceError as exc:
                failures.append(exc)
                continue
            break
        if len(failures) < len(task.sample_examples):
            continue
        what = f"round {round_.number}'s target model(s) answered none of its {len(failures)} sample examples usably"
        hint = "; set working target models (setTargetModels) or fix the model"
        problem = TargetProblem(
            f"{what}: {failures[0]}{hint}",
            f"{what}: {without_server_paths(p, round_, str(failures[0]))}{hint}",
        )
        found[code] = p.target_problems[code] = problem
        log.error("task %s: %s", code, problem.whole)
    return found


async def target_problems(p: Platform, actor: Actor, task_id: int, task_code: str) -> list[str]:
    """What this server found wrong with the task's round targets (:func:`probe_targets`): for the task's owners (and
    admins, who read it with the server's paths); an empty list for everyone else."""
    problem = p.target_problems.get(task_code)
    if problem is None or not await task_service.owns_task(p, actor, task_id):
        return []
    return [problem.whole if actor.is_admin else problem.shown]


async def predict_pending(p: Platform, *, limit: int = 50) -> int:
    """Predict examples stored without a prediction (the model was down or too slow), oldest first.

    Each is updated only if it is still pending (a compare-and-set, so two API processes never count one twice),
    and then counted like an example predicted at once. Stops at the first model failure that is the model's
    (down, too slow: the next ones would fail the same way; the caller retries later). An unusable output is the
    example's own: it is counted for that example (:func:`pending_reason`) and the others are asked; after
    ``UNUSABLE_OUTPUT_ATTEMPTS`` in a row it is no longer asked until its round's target models change. Returns how
    many examples were predicted.
    """
    spaced = utcnow() - timedelta(seconds=p.settings.pending_retry_s)
    async with p.db.session() as s:
        query = select(Example).where(
            col(Example.status) == ExampleStatus.PENDING_PREDICTION,
            # an unusable answer: asked again at most UNUSABLE_OUTPUT_ATTEMPTS times in a row, PENDING_RETRY_S apart
            col(Example.prediction_attempts) < p.settings.unusable_output_attempts,
            (col(Example.prediction_attempts) == 0) | (col(Example.updated_at) <= spaced),
        )
        pending = list(await s.scalars(query.order_by(col(Example.id)).limit(limit)))
        if not pending:
            return 0
        rounds = {
            r.id: r for r in await s.scalars(select(Round).where(col(Round.id).in_({e.round_id for e in pending})))
        }
        context_ids = {e.context_id for e in pending if e.context_id is not None}
        contexts = {c.id: c for c in await s.scalars(select(Context).where(col(Context.id).in_(context_ids)))}
        codes = dict(
            (
                await s.execute(
                    select(col(TaskRow.id), col(TaskRow.code)).where(col(TaskRow.id).in_({e.task_id for e in pending}))
                )
            ).all()
        )
    done = 0
    for example in pending:
        task = p.plugins.registry.tasks.get(codes.get(example.task_id, ""))
        round_ = rounds.get(example.round_id)
        if task is None or round_ is None:
            continue  # its plugin is not installed here; another process may have it
        if example.context_id is not None:
            context_fields, own = dict(contexts[example.context_id].fields), dict(example.fields)
        else:  # the example stored its context fields with its own
            context_fields, own = task.split_fields(example.fields)
        try:
            members, inference_ms = await predict(p, task, round_, task.build_model_input(context_fields, own))
            prediction, status, fooled, verdict = decide(task, round_.ensemble_rule, members, own, context_fields)
        except UnusableOutput as exc:
            await _note_unusable(p, example.id, round_, task.code, exc)
            continue
        except InferenceError as exc:
            log.info("pending examples wait longer: %s", exc)
            break
        now = utcnow()
        async with p.db.write() as s:
            result = await s.execute(
                update(Example)
                .where(col(Example.id) == example.id, col(Example.status) == ExampleStatus.PENDING_PREDICTION)
                .values(
                    status=status,
                    prediction=prediction,
                    model_predictions=members,
                    fooled=fooled,
                    fooled_at=now if fooled else None,
                    verdict=verdict,
                    inference_ms=inference_ms,
                    pending_reason=None,
                    prediction_attempts=0,
                    updated_at=now,
                )
            )
            if rowcount(result) != 1:
                continue  # retracted, or predicted by another process meanwhile
            await move(
                s,
                round_id=round_.id,
                user_id=example.user_id,
                before=(ExampleStatus.PENDING_PREDICTION, None),
                after=(status, fooled),
            )
            if example.context_id is not None and fooled:
                await s.execute(
                    update(Context)
                    .where(col(Context.id) == example.context_id)
                    .values(total_fooled=col(Context.total_fooled) + 1)
                )
        done += 1
        example.status, example.prediction, example.fooled, example.verdict = status, prediction, fooled, verdict
        example.fooled_at = now if fooled else None
        payload = event_payload(example, task.code, round_.number)
        await announce.example_predicted(p, payload)
        if fooled:
            await announce.model_fooled(p, payload)
        if status == ExampleStatus.PENDING_VERDICT and task.verdict == "judge":
            verdicts.start_judging(p, example.id)
    return done


#: A position in the order ``model_fooled`` was announced in: an example's ``fooled_at`` and its id.
FooledPosition = tuple[datetime, int]


async def fooled_position(p: Platform, task_id: int, after_id: int) -> FooledPosition | None:
    """Where a resumed ``modelFooled`` subscription starts, after the example ``after_id``: when that example of the
    task fooled its target (an example found fooling late, after a pending prediction or verdict, sits where it was
    announced, not where it was stored). Any other example (not fooling, of another task) counts by when it was
    stored; an id no example has (deleted), by the first example stored after it. None: nothing comes after it."""
    async with p.db.session() as s:
        row = (
            await s.execute(
                select(col(Example.task_id), col(Example.fooled_at), col(Example.created_at)).where(
                    col(Example.id) == after_id
                )
            )
        ).first()
        if row is not None:
            at = row[1] if row[0] == task_id and row[1] is not None else row[2]
            return as_utc(at), after_id
        first = await s.scalar(select(func.min(col(Example.created_at))).where(col(Example.id) > after_id))
    return None if first is None else (as_utc(first), 0)


async def fooled_after(
    p: Platform, task_id: int, task_code: str, after: FooledPosition, limit: int
) -> list[tuple[dict[str, Any], FooledPosition]]:
    """Up to ``limit`` of the task's examples that announced ``model_fooled`` after the position ``after``
    (:func:`fooled_position`), in the order they were announced (``fooled_at``, then id), each as an event payload
    (:data:`event_payload`, whole: the caller redacts it as it redacts live events) with its own position. Those are
    the examples ``submit``, ``predict_pending``, a verdict or an owner's overruling found fooling, less those
    retracted since; imported examples never announced themselves (no ``fooled_at``). Each comes as it is now: its
    status and votes may have moved on since its event."""
    at, after_id = after
    async with p.db.session() as s:
        rows = (
            await s.execute(
                select(Example, col(Round.number))
                .join(Round, col(Round.id) == col(Example.round_id))
                .where(
                    col(Example.task_id) == task_id,
                    col(Example.fooled_at).is_not(None),
                    or_(
                        col(Example.fooled_at) > at,
                        and_(col(Example.fooled_at) == at, col(Example.id) > after_id),
                    ),
                    col(Example.fooled).is_(True),
                    col(Example.status) != ExampleStatus.RETRACTED,
                )
                .order_by(col(Example.fooled_at), col(Example.id))
                .limit(limit)
            )
        ).all()
    return [
        (event_payload(example, task_code, number), (as_utc(example.fooled_at), example.id))
        for example, number in rows
        if example.fooled_at is not None
    ]


async def _can_read(s, actor: Actor, example: Example) -> bool:
    if actor.is_anonymous:
        return False
    return example.user_id == actor.user_id or await task_service.is_owner(s, actor, example.task_id)


async def get_example(p: Platform, actor: Actor, example_id: int) -> Example:
    """Authors read their own examples; owners and admins read every example of their tasks. NotFound when there is
    no such example (or its task is hidden from the actor); NotAuthenticated for anonymous callers; Forbidden for
    someone else's example of a task the actor can see (validators are served examples by exampleToValidate)."""
    async with p.db.session() as s:
        example = await s.get(Example, example_id)
        if example is not None and await _can_read(s, actor, example):
            return example
        task_row = None if example is None else await s.get(TaskRow, example.task_id)
    if example is None or task_row is None:
        raise NotFound(f"No example {example_id}")
    try:
        await task_service.get_task(p, actor, task_row.code)
    except NotFound:
        raise NotFound(f"No example {example_id}") from None
    require_user(actor)
    raise Forbidden(
        f"Example {example_id} is someone else's: authors read their own, the task's owners and admins every one"
    )


async def list_examples(
    p: Platform,
    actor: Actor,
    *,
    task_code: str,
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
    status: str | None = None,
    mine: bool = False,
    round_number: int | None = None,
    fooled: bool | None = None,
    tag: str | None = None,
    source: str | None = None,
    adversary: str | None = None,
    author_id: int | None = None,
) -> Page:
    """Newest first, keyset-paged (``first``/``after`` forward, ``last``/``before`` back). Users see their own
    examples; owners and admins see all (or theirs, ``mine``). ``status``, ``round_number``, ``fooled``, ``tag``,
    ``source`` (HUMAN, ASSISTED, MACHINE), ``adversary`` (the one behind an assisted or machine example) and
    ``author_id`` narrow the list (another author's examples, for a user who sees only their own: none)."""
    actor = require_user(actor)
    view = await task_service.get_task(p, actor, task_code)
    request = cursors.PageRequest.of(
        "example",
        first=first,
        after=after,
        last=last,
        before=before,
        max_size=p.settings.page_max_size,
        default=p.settings.page_max_size,
    )
    if status is not None and status not in ExampleStatus.ALL:
        raise InvalidInput.from_errors(
            [FieldError("status", "choice", f"must be one of {', '.join(ExampleStatus.ALL)}")]
        )
    where = [col(Example.task_id) == view.row.id]
    if status is not None:
        where.append(col(Example.status) == status)
    if fooled is not None:
        where.append(col(Example.fooled).is_(fooled))
    if tag is not None:
        where.append(col(Example.tag) == tag)
    if source is not None:
        where.append(col(Example.source) == source)
    if adversary is not None:
        where.append(col(Example.adversary) == adversary)
    if author_id is not None:
        where.append(col(Example.user_id) == author_id)
    async with p.db.session() as s:
        if round_number is not None:
            where.append(col(Example.round_id) == await task_service.round_id_of(s, view.row.id, round_number))
        if mine or not await task_service.is_owner(s, actor, view.row.id):
            where.append(col(Example.user_id) == actor.user_id)
        statement = select(Example, Round).join(Round, col(Round.id) == col(Example.round_id)).where(*where)
        page = await cursors.window(
            s, statement, col(Example.id), "example", request, key=lambda pair: int(pair[0].id), scalars=False
        )

    async def total() -> int:
        async with p.db.session() as s:
            return await cursors.count(s, select(col(Example.id)).where(*where))

    rows = [example for example, _ in page.rows]
    rounds = {example.round_id: round_row for example, round_row in page.rows}
    return Page(
        rows,
        page.has_next,
        page.end_cursor,
        view.task.code,
        rounds,
        has_previous=page.has_previous,
        start_cursor=page.start_cursor,
        total=total,
    )


@dataclass
class Review:
    """What the people in charge of an example may read about it beyond its content."""

    author: User | None  # for the author themself and the task's owners and admins
    flag_reason: str | None
    validations: list[tuple[Validation, User]] | None  # each vote with its validator; owners and admins only


async def voted_on(p: Platform, actor: Actor, example_ids: list[int]) -> set[int]:
    """Which of ``example_ids`` the actor has voted on (or flagged)."""
    if actor.user_id is None or not example_ids:
        return set()
    async with p.db.session() as s:
        return set(
            await s.scalars(
                select(col(Validation.example_id)).where(
                    col(Validation.user_id) == actor.user_id, col(Validation.example_id).in_(example_ids)
                )
            )
        )


async def reviews(p: Platform, actor: Actor, example_ids: list[int]) -> dict[int, Review]:
    """For each example ``actor`` authored or whose task they own (or any, for admins): its author, flag reason and
    (owners and admins) its votes with their validators, oldest first. Examples of anyone else are left out."""
    if actor.user_id is None and not actor.is_admin:
        return {}
    async with p.db.session() as s:
        rows = (
            await s.execute(
                select(col(Example.id), col(Example.task_id), col(Example.user_id), col(Example.flag_reason)).where(
                    col(Example.id).in_(example_ids)
                )
            )
        ).all()
        task_ids = {r.task_id for r in rows}
        if actor.is_admin:
            owned = task_ids
        else:
            owned = set(
                await s.scalars(
                    select(col(TaskOwner.task_id)).where(
                        col(TaskOwner.user_id) == actor.user_id, col(TaskOwner.task_id).in_(task_ids)
                    )
                )
            )
        visible = [r for r in rows if r.task_id in owned or r.user_id == actor.user_id]
        if not visible:
            return {}
        users = {u.id: u for u in await s.scalars(select(User).where(col(User.id).in_({r.user_id for r in visible})))}
        votes: dict[int, list[tuple[Validation, User]]] = {r.id: [] for r in visible if r.task_id in owned}
        if votes:
            for vote, validator in (
                await s.execute(
                    select(Validation, User)
                    .join(User, col(User.id) == col(Validation.user_id))
                    .where(col(Validation.example_id).in_(list(votes)))
                    .order_by(col(Validation.id))
                )
            ).all():
                votes[vote.example_id].append((vote, validator))
    return {r.id: Review(users.get(r.user_id), r.flag_reason, votes.get(r.id)) for r in visible}


async def rounds_by_id(p: Platform, round_ids: list[int]) -> dict[int, Round]:
    async with p.db.session() as s:
        rows = await s.scalars(select(Round).where(col(Round.id).in_(round_ids)))
        return {r.id: r for r in rows}


async def task_codes_by_id(p: Platform, task_ids: list[int]) -> dict[int, str]:
    async with p.db.session() as s:
        rows = await s.execute(select(col(TaskRow.id), col(TaskRow.code)).where(col(TaskRow.id).in_(task_ids)))
        return {i: c for i, c in rows}


async def get_validation(p: Platform, actor: Actor, validation_id: int) -> tuple[Validation, User]:
    """One vote with its validator, for the task's owners and admins (as ``Example.validations``)."""
    async with p.db.session() as s:
        example_id = await s.scalar(select(col(Validation.example_id)).where(col(Validation.id) == validation_id))
    review = None if example_id is None else (await reviews(p, actor, [example_id])).get(example_id)
    for vote, validator in (review.validations or []) if review is not None else []:
        if vote.id == validation_id:
            return vote, validator
    raise NotFound(f"No validation {validation_id} that you can see")
