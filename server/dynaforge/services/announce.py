"""After-commit announcements: every change the platform makes known goes out through this module.

A service commits its write first, then calls one function here per event. Each event goes, in this order, to

1. the plugins' event hook (``hookspecs.py``), awaited in this process;
2. the event bus, on the topic ``{event}:{task code}`` that subscriptions listen on (``events.py``);
3. the task's webhooks that chose the event: one delivery row each, and one job message to send it.

=============================== ======================= =========================== ====================
event                           plugin hook             bus topic                   webhook event
=============================== ======================= =========================== ====================
an example is stored            ``example_created``     ``exampleCreated:{task}``   ``exampleCreated``
a pending prediction came       ``example_predicted``   ``examplePredicted:{task}`` ``examplePredicted``
a waiting verdict was decided   ``verdict_decided``     ``verdictDecided:{task}``   ``verdictDecided``
an example fooled the model     ``model_fooled``        ``modelFooled:{task}``      ``modelFooled``
a vote or a flag                ``example_validated``   ``exampleValidated:{task}`` ``exampleValidated``
a round opened, closed, edited  ``round_changed``       ``roundChanged:{task}``     ``roundChanged``
an evaluation DONE or FAILED    ``evaluation_finished`` (none)                      (none)
=============================== ======================= =========================== ====================

Three more events say that an object of a task changed, for screens that show work in progress:
``evaluationUpdated``, ``trainingJobUpdated`` and ``adversaryRunUpdated``. Their bus topic is keyed by the task's id
(:func:`update_topic`), since the processes that report them (evaluation and training jobs) know the id, not the
code; their payload names the objects (``{"ids": [...]}``), which each subscriber reads as it may see them
(:func:`updated`). They reach neither plugins nor webhooks.

``ROUTES`` is that table. Evaluations report their progress on ``evaluationProgress:{model id}`` from the job
that runs them (:func:`progress_topic`); their end reaches plugins through :func:`evaluation_finished`, called by
the process that recorded it (see ``services/evaluation_runner.py``).

Nothing here raises: the write it reports has already happened. A failing plugin, an unreachable bus or a delivery
that cannot be stored is logged, and the other destinations still get the event.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlmodel import col

from dynaforge.db.models import (
    Evaluation,
    Example,
    Round,
    TaskOwner,
    TaskRow,
    User,
    Webhook,
    WebhookDelivery,
    as_utc,
    utcnow,
)
from dynaforge.services import visibility
from dynaforge.services.job_queue import BrokerUnavailable

if TYPE_CHECKING:
    from dynaforge.plugins import Plugins
    from dynaforge.services.platform import Platform
    from dynaforge.tasks.base import Task

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Route:
    """Where one kind of event goes."""

    hook: str  # the plugins' event hook
    event: str | None  # subscriptions' topic prefix and webhooks' event name; None: plugins only


ROUTES: dict[str, Route] = {
    "modelFooled": Route("model_fooled", "modelFooled"),
    "exampleCreated": Route("example_created", "exampleCreated"),
    "examplePredicted": Route("example_predicted", "examplePredicted"),
    "verdictDecided": Route("verdict_decided", "verdictDecided"),
    "exampleValidated": Route("example_validated", "exampleValidated"),
    "roundChanged": Route("round_changed", "roundChanged"),
    "evaluationFinished": Route("evaluation_finished", None),
}

#: The events a webhook may choose, in the order error messages list them.
WEBHOOK_EVENTS: tuple[str, ...] = tuple(r.event for r in ROUTES.values() if r.event is not None)

ROUND_CHANGES = ("OPENED", "CLOSED", "UPDATED")


def topic(event: str, task_code: str) -> str:
    """The bus topic of a task's ``event`` (what a subscription to it listens on)."""
    return f"{event}:{task_code}"


def progress_topic(model_id: int) -> str:
    """The bus topic of a model's evaluation progress."""
    return f"evaluationProgress:{model_id}"


#: Events that say an object of a task changed (queued, started, moved on, ended), and the object's type.
UPDATE_EVENTS: dict[str, str] = {
    "evaluationUpdated": "Evaluation",
    "trainingJobUpdated": "TrainingJob",
    "adversaryRunUpdated": "AdversaryRun",
}


def update_topic(event: str, task_id: int) -> str:
    """The bus topic of an :data:`UPDATE_EVENTS` event of the task whose id is ``task_id``."""
    if event not in UPDATE_EVENTS:
        raise ValueError(f"{event!r} is not an update event")
    return f"{event}:#{task_id}"


def update_payload(task_id: int, ids: list[int]) -> dict[str, Any]:
    """What an update event carries: the task and the objects that changed (subscribers read them)."""
    return {"task_id": task_id, "ids": [int(i) for i in ids]}


async def updated(p: Platform, event: str, task_id: int, ids: list[int]) -> None:
    """Say that the task's objects ``ids`` (of :data:`UPDATE_EVENTS`'s type for ``event``) changed. Logged, never
    raised, when the bus is down: the change is stored, and a subscriber catches up when it subscribes again."""
    if not ids:
        return
    try:
        await p.events.publish(update_topic(event, task_id), update_payload(task_id, ids))
    except Exception:  # noqa: BLE001 - news of a stored change never fails the change
        log.warning("could not announce %s of %s", event, ids, exc_info=True)


# --------------------------------------------------------------------------- payloads (plain JSON dicts)


def example_payload(example: Example, task_code: str, round_number: int) -> dict[str, Any]:
    """The example as events carry it (plugins' hooks, subscriptions, webhooks): JSON only, enough to rebuild
    the row (:func:`example_from_payload`) without reading the database once per subscriber."""
    return {
        "id": example.id,
        "task_code": task_code,
        "task_id": example.task_id,
        "round": round_number,
        "round_id": example.round_id,
        "user_id": example.user_id,
        "context_id": example.context_id,
        "fields": example.fields,
        "prediction": example.prediction,
        "model_predictions": example.model_predictions,
        "fooled": example.fooled,
        "status": example.status,
        "tag": example.tag,
        "time_taken_ms": example.time_taken_ms,
        "source": example.source,
        "adversary": example.adversary,
        "verdict": example.verdict,
        "votes": {
            "correct": example.validations_correct or 0,
            "incorrect": example.validations_incorrect or 0,
            "flagged": example.validations_flagged or 0,
        },
        "created_at": _iso(example.created_at),
    }


def example_from_payload(payload: dict[str, Any]) -> Example:
    """The (detached) row an event describes."""
    votes = payload.get("votes") or {}
    return Example(
        id=payload["id"],
        task_id=payload["task_id"],
        round_id=payload["round_id"],
        user_id=payload.get("user_id", 0),  # absent from redacted payloads: no user has id 0
        context_id=payload.get("context_id"),
        fields=payload["fields"],
        prediction=payload.get("prediction"),
        model_predictions=payload.get("model_predictions") or [],
        fooled=payload.get("fooled"),
        status=payload["status"],
        source=payload.get("source") or "HUMAN",
        adversary=payload.get("adversary"),
        verdict=payload.get("verdict"),
        tag=payload.get("tag"),
        time_taken_ms=payload.get("time_taken_ms"),
        validations_correct=votes.get("correct", 0),
        validations_incorrect=votes.get("incorrect", 0),
        validations_flagged=votes.get("flagged", 0),
        created_at=datetime.fromisoformat(payload["created_at"]),
    )


def validation_payload(
    example_id: int,
    *,
    label: str,
    user_id: int,
    by_owner: bool,
    reason: str | None = None,
    corrected_target: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A vote (or a flag) as the ``example_validated`` hook receives it."""
    return {
        "example_id": example_id,
        "label": label,
        "user_id": user_id,
        "by_owner": by_owner,
        "reason": reason,
        "corrected_target": corrected_target,
        "at": utcnow().isoformat(),
    }


def round_payload(round_: Round, task_code: str) -> dict[str, Any]:
    """A round as the ``round_changed`` hook receives it (never its export secret)."""
    return {
        "id": round_.id,
        "task_code": task_code,
        "task_id": round_.task_id,
        "number": round_.number,
        "description": round_.description,
        "target_models": list(round_.target_models or []),
        "ensemble_rule": round_.ensemble_rule,
        "started_at": _iso(round_.started_at),
        "ended_at": _iso(round_.ended_at),
    }


def evaluation_payload(evaluation: Evaluation, task_code: str, dataset_name: str) -> dict[str, Any]:
    """A finished evaluation as the ``evaluation_finished`` hook receives it."""
    return {
        "id": evaluation.id,
        "task_code": task_code,
        "model_id": evaluation.model_id,
        "dataset_id": evaluation.dataset_id,
        "dataset_name": dataset_name,
        "status": evaluation.status,
        "metrics": dict(evaluation.metrics or {}),
        "throughput": evaluation.throughput,
        "memory_mb": evaluation.memory_mb,
        "error": evaluation.error,
        "attempts": evaluation.attempts,
        "started_at": _iso(evaluation.started_at),
        "finished_at": _iso(evaluation.finished_at),
    }


def _iso(value: datetime | None) -> str | None:
    utc = as_utc(value)
    return None if utc is None else utc.isoformat()


# --------------------------------------------------------------------------- the events


async def example_created(p: Platform, example: dict[str, Any]) -> None:
    """An example was stored (``example``: :func:`example_payload`), fooling or not, or pending a prediction."""
    await _announce(p, ROUTES["exampleCreated"], example, {"example": example})


async def example_predicted(p: Platform, example: dict[str, Any]) -> None:
    """An example stored while its prediction was pending got it (fooled or not): the annotate screen's answer."""
    await _announce(p, ROUTES["examplePredicted"], example, {"example": example})


async def verdict_decided(p: Platform, example: dict[str, Any]) -> None:
    """Whether an example fooled the model was decided after it was stored: by the task's judge, its validators, or
    an owner overruling the judge (``example``'s ``fooled`` and ``verdict`` say what and who)."""
    await _announce(p, ROUTES["verdictDecided"], example, {"example": example})


async def model_fooled(p: Platform, example: dict[str, Any]) -> None:
    """A stored example fooled the target model: when it was stored, or when its pending prediction came."""
    await _announce(p, ROUTES["modelFooled"], example, {"example": example})


async def example_validated(p: Platform, example: dict[str, Any], validation: dict[str, Any]) -> None:
    """A vote or a flag on an example (``validation``: :func:`validation_payload`); ``example`` as it is after it.
    Subscribers and webhooks get the example with the vote's ``label``."""
    message = {**example, "label": validation["label"]}
    await _announce(p, ROUTES["exampleValidated"], message, {"example": example, "validation": validation})


async def round_changed(p: Platform, task_code: str, round_: Round, change: str) -> None:
    """A round was opened, closed or edited (``change``: one of ``ROUND_CHANGES``)."""
    message = {
        "task_code": task_code,
        "task_id": round_.task_id,
        "round_id": round_.id,
        "number": round_.number,
        "change": change,
        "at": utcnow().isoformat(),
    }
    hook_kwargs = {"round": round_payload(round_, task_code), "change": change}
    await _announce(p, ROUTES["roundChanged"], message, hook_kwargs)


async def evaluation_finished(plugins: Plugins, evaluation: dict[str, Any]) -> None:
    """An evaluation reached DONE or FAILED (``evaluation``: :func:`evaluation_payload`). Plugins only: the
    process that records an evaluation's end (its job's child process, mostly) has no event bus of the API's."""
    await _call_hook(plugins, ROUTES["evaluationFinished"], {"evaluation": evaluation})


async def _announce(p: Platform, route: Route, message: dict[str, Any], hook_kwargs: dict[str, Any]) -> None:
    """``message`` carries ``task_code`` and ``task_id``: the bus topic and the webhooks follow from them."""
    await _call_hook(p.plugins, route, hook_kwargs)
    if route.event is None:
        return
    try:
        await p.events.publish(topic(route.event, message["task_code"]), message)
    except Exception:
        log.exception("%s on %s was not published", route.event, message.get("task_code"))
    try:
        await queue_webhooks(p, route.event, message["task_id"], message)
    except Exception:
        log.exception("webhook deliveries for %s on %s could not be stored", route.event, message.get("task_code"))


async def _call_hook(plugins: Plugins, route: Route, hook_kwargs: dict[str, Any]) -> None:
    try:
        await plugins.emit(route.hook, **hook_kwargs)  # logs each failing implementation itself
    except Exception:
        log.exception("the %s hook could not be called", route.hook)


# --------------------------------------------------------------------------- webhooks (see services/webhooks.py)


@dataclass(frozen=True)
class _Target:
    webhook: Webhook
    privileged: bool  # the registrant owns the task (or is an admin) now


async def _registered(p: Platform, task_id: int) -> list[_Target]:
    """The task's active webhooks whose registrants may see its events now: active accounts, and for a hidden task
    only its owners and admins. Whether a payload names authors follows the registrant's current ownership (a
    revoked owner's webhook gets what any user's gets). Cached in ``p.caches.webhooks``; the services that change
    webhooks, ownership or a task's visibility drop the task's entry."""
    cached = p.caches.webhooks.get(task_id)
    if cached is not None:
        return cached
    async with p.db.session() as s:
        hidden = bool(await s.scalar(select(col(TaskRow.hidden)).where(col(TaskRow.id) == task_id)))
        rows = (
            await s.execute(
                select(Webhook, col(User.is_admin), col(TaskOwner.user_id).is_not(None))
                .join(User, col(User.id) == col(Webhook.user_id))
                .outerjoin(
                    TaskOwner,
                    (col(TaskOwner.task_id) == col(Webhook.task_id)) & (col(TaskOwner.user_id) == col(Webhook.user_id)),
                )
                .where(col(Webhook.task_id) == task_id, col(Webhook.active).is_(True), col(User.is_active).is_(True))
            )
        ).all()
    targets = [_Target(w, bool(admin or owner)) for w, admin, owner in rows if not hidden or admin or owner]
    p.caches.webhooks.put(task_id, targets)
    return targets


def webhook_body(
    event: str, payload: dict[str, Any], privileged: bool, *, task: Task | None = None, registrant: int | None = None
) -> str | None:
    """A delivery's JSON body, or None when the registrant gets no delivery of it. An example's gold, prediction,
    ``fooled`` and author (``user_id``) only for registrants who own the task (or are admins) and for the example's
    author; everyone else gets it redacted, and no ``modelFooled`` of someone else's example at all
    (:func:`visibility.event_for`, as subscriptions)."""
    if "fields" in payload and not visibility.sees_gold(
        privileged=privileged, viewer_id=registrant, author_id=payload.get("user_id")
    ):
        shown = visibility.event_for(event, task, payload, privileged=privileged, viewer_id=registrant)
        if shown is None:
            return None
        data = shown
    elif privileged:
        data = dict(payload)
    else:
        data = {k: v for k, v in payload.items() if k != "user_id"}
    return json.dumps(
        {"type": event, "timestamp": utcnow().isoformat(), "data": data}, default=str, separators=(",", ":")
    )


def _task_or_none(p: Platform, payload: dict[str, Any]) -> Task | None:
    code = payload.get("task_code")
    return p.plugins.task(code) if code else None


async def queue_webhooks(p: Platform, event: str, task_id: int, payload: dict[str, Any]) -> int:
    """Store a delivery for each active webhook of the task that wants ``event`` (and whose registrant may receive
    it: :func:`webhook_body`) and queue its job; returns how many. Costs one cached lookup when the task has none
    (the common case on the write path)."""
    targets = [t for t in await _registered(p, task_id) if event in t.webhook.events]
    if not targets:
        return 0
    task = _task_or_none(p, payload)
    bodies = [(t, webhook_body(event, payload, t.privileged, task=task, registrant=t.webhook.user_id)) for t in targets]
    rows = [
        WebhookDelivery(webhook_id=t.webhook.id, message_id=f"msg_{uuid.uuid4().hex}", event=event, body=body)
        for t, body in bodies
        if body is not None
    ]
    if not rows:
        return 0
    async with p.db.write() as s:
        s.add_all(rows)
        await s.flush()
    if p.jobs is not None:
        try:
            p.jobs.send_webhooks([r.id for r in rows])
        except BrokerUnavailable as exc:  # stored PENDING, sent again at the next start
            log.error("webhook deliveries %s stay pending: %s", [r.id for r in rows], exc)
    return len(rows)
