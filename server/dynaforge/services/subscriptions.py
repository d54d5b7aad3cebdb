"""Who may follow which live events, and the event-bus topic each subscription listens to.

What a subscriber may see is what the same person may query:

* events that show examples (:data:`EXAMPLE_EVENTS`) go to signed-in users, never to anonymous subscribers; a
  hidden task's only to its owners and admins. Each example comes whole to those who may read it with
  ``example(id)`` (its author, the task's owners and admins) and redacted to everyone else: no gold fields, no
  prediction, no ``fooled``, no author; a ``modelFooled`` event, whose arrival says the example fooled the model,
  not at all (:mod:`dynaforge.services.visibility`, the policy webhooks follow too);
* ``roundChanged``: anyone who can see the task;
* ``evaluationProgress``: anyone who can see the model (a published one, or one's own; owners and admins);
* ``evaluationUpdated``: anyone who can see the task, each evaluation as ``node(id:)`` shows it to them (none of
  a model they may not see); ``trainingJobUpdated`` and ``adversaryRunUpdated``: the task's owners and admins
  (:func:`update_topic`). These send the objects that changed; on subscribing, first those that are queued or
  running, and those that changed since the subscriber's ``since`` (:func:`current_updates`).

A ``modelFooled`` subscriber that lost its connection may resume after the last example it received
(:func:`missed_fooled`, then :func:`resumed`): what it missed is read from the database in the order it was
announced (examples that fooled late, after a pending prediction or verdict, included), under the same rules as the
live events, and nothing comes twice.

A subscriber who sent a token that was refused is told why, even for events that anonymous subscribers may follow:
a mistyped or revoked token should not pass for anonymity.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncGenerator, AsyncIterable
from contextlib import aclosing
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select
from sqlmodel import col

from dynaforge.db.models import (
    AdversaryRun,
    AdversaryRunStatus,
    Dataset,
    Evaluation,
    EvaluationStatus,
    TrainingJob,
    TrainingStatus,
    as_utc,
)
from dynaforge.errors import FieldError, Forbidden, InvalidInput, NotAuthenticated, RateLimited
from dynaforge.services import announce
from dynaforge.services import examples as example_service
from dynaforge.services import submissions as submission_service
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform

#: Events that carry examples: signed-in subscribers only.
EXAMPLE_EVENTS = frozenset({"modelFooled", "exampleCreated", "examplePredicted", "verdictDecided", "exampleValidated"})
#: Every event a subscription follows per task.
TASK_EVENTS = EXAMPLE_EVENTS | {"roundChanged"}
#: How many missed examples a resuming subscription reads from the database at once.
REPLAY_PAGE = 200
#: The most objects an update subscription sends when it starts (the newest first are kept).
CURRENT_LIMIT = 500
#: How far before ``since`` an update subscription looks back, for clocks of other processes a little behind.
SINCE_SLACK = timedelta(seconds=2)


def _refuse_refused_token(actor: Actor) -> None:
    if actor.sign_in_error:
        raise NotAuthenticated(actor.sign_in_error)


async def task_topic(p: Platform, actor: Actor, event: str, task_code: str) -> str:
    """The topic of a task's ``event`` for ``actor``, who must see the task (and be signed in for events that show
    examples); NotAuthenticated or NotFound otherwise."""
    view = await _followed_task(p, actor, event, task_code)
    return f"{event}:{view.task.code}"


async def _followed_task(p: Platform, actor: Actor, event: str, task_code: str) -> task_service.TaskView:
    """The task whose ``event`` ``actor`` follows, once :func:`task_topic`'s rules allow it."""
    if event not in TASK_EVENTS:
        raise ValueError(f"{event!r} is not a task event")
    _refuse_refused_token(actor)
    if event in EXAMPLE_EVENTS and actor.is_anonymous:
        raise NotAuthenticated(
            "Examples are shown to signed-in users: send your API token in the connection_init payload as "
            '{"authorization": "Bearer <token>"}'
        )
    return await task_service.get_task(p, actor, task_code)


async def sees_all_gold(p: Platform, actor: Actor, task_code: str) -> bool:
    """Whether ``actor`` sees the gold of every example of the task (its owners and admins); others see their own
    examples' gold and the rest redacted (:mod:`dynaforge.services.visibility`). Checked when a subscription starts
    and again whenever its token is (an owner removed stops seeing gold within ``subscription_reauth_s``)."""
    if actor.is_anonymous:
        return False
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        return await task_service.is_owner(s, actor, view.row.id)


def open_subscription(p: Platform, actor: Actor, client: str | None, on_connection: int) -> str:
    """Admit one more subscription for ``actor`` (whose connection already holds ``on_connection``): RateLimited
    past ``subscriptions_per_connection`` on the connection or ``subscriptions_per_user`` for the person (anonymous
    subscribers: their address). Returns the key to hand back to :func:`close_subscription` when it ends."""
    settings = p.settings
    if on_connection >= settings.subscriptions_per_connection:
        raise RateLimited(
            f"Too many subscriptions on this connection: at most {settings.subscriptions_per_connection} at once; "
            "end one first",
            1.0,
        )
    key = f"user:{actor.user_id}" if actor.user_id is not None else f"client:{client or 'unknown'}"
    p.subscriptions.acquire(key, settings.subscriptions_per_user, "subscriptions for you")
    return key


def close_subscription(p: Platform, key: str) -> None:
    p.subscriptions.release(key)


def check_still_signed_in(actor: Actor) -> None:
    """A running subscription re-reads its token at least every ``subscription_reauth_s`` seconds; once the token
    signs no one in (revoked, the account disabled) the subscription ends, saying why."""
    if actor.is_anonymous:
        raise NotAuthenticated(actor.sign_in_error or "The API token is no longer valid; sign in again and resubscribe")


async def evaluation_topic(p: Platform, actor: Actor, model_id: int) -> tuple[str, bool]:
    """The topic of a model's evaluation progress for ``actor``, who must see the model, and whether they may see
    everything about it (a failed evaluation's error: its submitter, the task's owners and admins)."""
    _refuse_refused_token(actor)
    model, privileged = await submission_service.get_model(p, actor, model_id)
    return f"evaluationProgress:{model.id}", privileged


async def missed_fooled(
    p: Platform, actor: Actor, task_code: str, after_id: int, *, page_size: int | None = None
) -> AsyncGenerator[dict[str, Any], None]:
    """The ``modelFooled`` events of the task that a subscriber missed after the example ``after_id``: every example
    of the task announced as fooling its target model after that one was (:func:`examples.fooled_after`), in the
    order they were announced, read ``page_size`` (:data:`REPLAY_PAGE`) at a time, each page in its own short
    session (memory stays bounded, and no transaction waits on a slow reader). An example stored before ``after_id``
    that was still pending and fooled later is among them; so is one fooling late that was the last received: then
    the replay starts where it was announced, and nothing already sent comes again. Payloads are whole, like the
    bus's: the caller filters and redacts them as it does live events (``visibility.event_for``).

    ``after_id`` is only a position: an id of another task, or of an example ``actor`` may not read, reveals
    nothing, since only this task's examples are read. ``actor`` must be allowed to follow the event (as
    :func:`task_topic`), checked again before each page."""
    size = page_size or REPLAY_PAGE
    view = await _followed_task(p, actor, "modelFooled", task_code)
    position = await example_service.fooled_position(p, view.row.id, after_id)
    while position is not None:
        page = await example_service.fooled_after(p, view.row.id, view.task.code, position, size)
        for payload, _ in page:
            yield payload
        if len(page) < size:
            return
        position = page[-1][1]
        view = await _followed_task(p, actor, "modelFooled", task_code)


async def resumed(
    missed: AsyncGenerator[dict[str, Any], None], live: AsyncIterable[dict[str, Any]]
) -> AsyncGenerator[dict[str, Any], None]:
    """A resumed example subscription: the ``missed`` events, then the ``live`` ones less those ``missed`` already
    sent (by example id). ``live`` must be listening before ``missed`` is read (``EventBus.listen``), so nothing
    falls between the two; an event published while the database was read may then come both ways.

    The ids sent are remembered, not just the largest: an example with a smaller id that was still pending when the
    database was read may fool later, and its live event must come through. Each example announces ``modelFooled``
    at most once, so an id is forgotten once its live copy was skipped. Closing it closes ``missed``."""
    sent: set[int] = set()
    async with aclosing(missed):
        async for payload in missed:
            sent.add(payload["id"])
            yield payload
    async for payload in live:
        if payload.get("id") in sent:
            sent.discard(payload["id"])
            continue
        yield payload


async def update_topic(p: Platform, actor: Actor, event: str, task_code: str) -> tuple[str, int]:
    """The topic of a task's :data:`announce.UPDATE_EVENTS` event for ``actor``, and the task's id:
    ``evaluationUpdated`` for anyone who can see the task, the others for its owners and admins (Forbidden)."""
    if event not in announce.UPDATE_EVENTS:
        raise ValueError(f"{event!r} is not an update event")
    _refuse_refused_token(actor)
    view = await task_service.get_task(p, actor, task_code)
    if event != "evaluationUpdated":
        if actor.is_anonymous:
            raise NotAuthenticated(
                "Sign in to follow a task's training jobs and generation runs: send your API token in the "
                'connection_init payload as {"authorization": "Bearer <token>"}'
            )
        async with p.db.session() as s:
            if not await task_service.is_owner(s, actor, view.row.id):
                what = "training jobs" if event == "trainingJobUpdated" else "generation runs"
                raise Forbidden(f"Only owners of {view.task.code} and admins follow its {what}")
    return announce.update_topic(event, view.row.id), view.row.id


async def current_updates(p: Platform, event: str, task_id: int, since: datetime | None) -> list[int]:
    """What an update subscription sends first, ids in ascending order: the task's objects that are queued or
    running, and with ``since``, those queued, started or ended since then (less :data:`SINCE_SLACK`). Every change
    of state sets one of those times, so a subscriber resuming from the time of the last event it received misses
    none (a running object's progress is sent as it is now). At most :data:`CURRENT_LIMIT`, the newest."""
    table: Any
    if event == "evaluationUpdated":
        table, created, active = Evaluation, Evaluation.queued_at, (EvaluationStatus.QUEUED, EvaluationStatus.RUNNING)
    elif event == "trainingJobUpdated":
        table, created, active = TrainingJob, TrainingJob.created_at, (TrainingStatus.QUEUED, TrainingStatus.RUNNING)
    elif event == "adversaryRunUpdated":
        table, created, active = (
            AdversaryRun,
            AdversaryRun.created_at,
            (AdversaryRunStatus.QUEUED, AdversaryRunStatus.RUNNING),
        )
    else:
        raise ValueError(f"{event!r} is not an update event")
    wanted: list[Any] = [col(table.status).in_(active)]
    if since is not None:
        after = as_utc(since) - SINCE_SLACK
        wanted += [col(created) >= after, col(table.started_at) >= after, col(table.finished_at) >= after]
    query = select(col(table.id)).where(or_(*wanted))
    if table is Evaluation:
        query = query.join(Dataset, col(Dataset.id) == col(Evaluation.dataset_id)).where(
            col(Dataset.task_id) == task_id
        )
    else:
        query = query.where(col(table.task_id) == task_id)
    async with p.db.session() as s:
        ids = list(await s.scalars(query.order_by(col(table.id).desc()).limit(CURRENT_LIMIT)))
    return sorted(int(i) for i in ids)


def update_cursor(at: datetime) -> str:
    """The cursor of the moment ``at``, for an update subscription's ``after`` (opaque to clients)."""
    return base64.urlsafe_b64encode(f"updates:{as_utc(at).isoformat()}".encode()).decode()


def read_update_cursor(cursor: str, field: str = "after") -> datetime:
    """The moment an :func:`update_cursor` names; InvalidInput (on ``field``) for anything else."""
    try:
        raw = base64.urlsafe_b64decode(cursor.encode()).decode()
        if not raw.startswith("updates:"):
            raise ValueError
        at = datetime.fromisoformat(raw.removeprefix("updates:"))
        if at.tzinfo is None:
            raise ValueError
        return at
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput.from_errors(
            [
                FieldError(
                    field,
                    "cursor",
                    "is not an update cursor; pass the cursor of the last update received (or Task.updatesCursor) "
                    "unchanged",
                )
            ]
        ) from exc
