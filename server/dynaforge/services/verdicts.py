"""Verdicts that wait: whether an example fooled the model, when a judge model or people decide it.

A task's ``verdict`` (:data:`dynaforge.tasks.base.VERDICT_SOURCES`) says who decides:

* ``rule``: the task's ``is_fooled``, at once (the write path of :mod:`dynaforge.services.examples`);
* ``judge``: the example is stored ``PENDING_VERDICT`` with ``fooled`` unknown, and a model-as-judge
  (:class:`dynaforge.tasks.base.Judge`) is asked in the background (:func:`decide_by_judge`, and
  :func:`judge_pending` for those a stopped server or a failing judge left); its verdict and rationale are stored
  beside the example, and the example becomes ``CREATED``, fooling or not, to be validated like any other. A task's
  owner can overrule it (:func:`overrule`);
* ``people``: the author says whether the model's output is wrong (:meth:`Task.claims_fooled`); when they say it is,
  the example waits in ``PENDING_VERDICT`` for the validators, whose vote is on the model's output
  (:mod:`dynaforge.services.validation`): a quorum of CORRECT (the output is wrong, as its author says) accepts it
  as fooling, a quorum of INCORRECT rejects it as not fooling.

Until the verdict is decided the example counts for nothing (``collected`` counts examples whose ``fooled`` is
known), so vMER and every counter move only then, in the transaction that decides it, and ``verdict_decided`` (then
``model_fooled`` when it fooled) is announced after it, never at creation.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from sqlalchemy import select, update
from sqlmodel import col

from dynaforge.db.engine import rowcount
from dynaforge.db.models import Context, Example, Round, TaskRow, utcnow
from dynaforge.db.models import ExampleStatus as S
from dynaforge.errors import Conflict, FieldError, Forbidden, InvalidInput, NotFound
from dynaforge.inference.backends import InferenceError
from dynaforge.services import announce
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human
from dynaforge.services.counters import move
from dynaforge.services.platform import Platform
from dynaforge.tasks.base import Task
from dynaforge.tasks.outputs import MAX_RATIONALE, read_verdict

log = logging.getLogger(__name__)

_background: set[asyncio.Task[Any]] = set()


def deferred(task: Task) -> bool:
    """Whether the task's verdicts wait for a judge or for people."""
    return task.verdict in ("judge", "people")


def initial(task: Task, example: dict[str, Any]) -> tuple[str, bool | None, dict[str, Any] | None]:
    """For a new example whose model answered: its status, ``fooled`` and ``verdict`` before anyone decides. A rule
    task's are decided by the caller (``CREATED``, its own ``fooled``, no verdict)."""
    if task.verdict == "judge":
        return S.PENDING_VERDICT, None, {"by": "judge", "state": "waiting", "attempts": 0}
    if task.verdict == "people":
        if not task.claims_fooled(example):
            return S.CREATED, False, {"by": "author", "state": "decided", "fooled": False}
        return S.PENDING_VERDICT, None, {"by": "people", "state": "waiting"}
    raise ValueError(f"task {task.code} decides at once")


def start_judging(p: Platform, example_id: int) -> None:
    """Ask the judge about a new example in the background: the annotator never waits for it."""
    job = asyncio.get_running_loop().create_task(_judge_logged(p, example_id))
    _background.add(job)
    job.add_done_callback(_background.discard)


async def _judge_logged(p: Platform, example_id: int) -> None:
    try:
        await decide_by_judge(p, example_id)
    except Exception:
        log.exception("judging example %s failed; it is tried again later", example_id)


async def decide_by_judge(p: Platform, example_id: int) -> bool | None:
    """Ask the task's judge whether the example fooled the model and record its verdict (see the module's
    docstring); returns the verdict, or None when the example no longer waits for one or the judge could not give
    one (the judge's failure is noted on the example; an unreadable answer counts towards
    ``UNUSABLE_OUTPUT_ATTEMPTS``, after which it is no longer asked)."""
    outcome, fooled = await _judge_once(p, example_id)
    return fooled if outcome == "decided" else None


async def _judge_once(p: Platform, example_id: int) -> tuple[str, bool | None]:
    """``decide_by_judge``, saying how it went: ``decided``, ``skipped`` (nothing to judge), ``unreadable`` (the
    judge answered something that is not a verdict) or ``unreachable`` (the judge failed or was too slow)."""
    async with p.db.session() as s:
        example = await s.get(Example, example_id)
        if example is None or example.status != S.PENDING_VERDICT:
            return "skipped", None
        row = (
            await s.execute(select(col(TaskRow.code), col(TaskRow.settings)).where(col(TaskRow.id) == example.task_id))
        ).first()
        round_ = await s.get(Round, example.round_id)
        context = await s.get(Context, example.context_id) if example.context_id is not None else None
    registered = p.plugins.registry.tasks.get(row[0] if row is not None else "")
    if registered is None or round_ is None or row is None:
        return "skipped", None
    task = task_service.tuned(registered, row[1] or {})  # the rubric its owners set
    if task.judge is None:
        return "skipped", None
    context_fields = dict(context.fields) if context is not None else task.split_fields(example.fields)[0]
    own = {k: v for k, v in example.fields.items() if k not in context_fields}
    spec = task.judge.model_spec()
    verdict = dict(example.verdict or {})
    try:
        answer = await p.inference.predict(spec, [task.judge_input(context_fields, own, example.prediction or {})])
        fooled, rationale = read_verdict(answer.outputs[0])
    except (InferenceError, ValueError) as exc:
        unreadable = isinstance(exc, ValueError)
        verdict.update(last_error=str(exc)[:MAX_RATIONALE], attempts=int(verdict.get("attempts", 0)) + unreadable)
        async with p.db.write() as s:
            await s.execute(
                update(Example)
                .where(col(Example.id) == example_id, col(Example.status) == S.PENDING_VERDICT)
                .values(verdict=verdict, updated_at=utcnow())
            )
        log.warning("the judge of task %s gave no verdict on example %s: %s", task.code, example_id, exc)
        return ("unreadable" if unreadable else "unreachable"), None
    verdict = {
        "by": "judge",
        "state": "decided",
        "fooled": fooled,
        "rationale": rationale,
        "model": spec.name,
        "decided_at": utcnow().isoformat(),
    }
    now = utcnow()
    async with p.db.write() as s:
        result = await s.execute(
            update(Example)
            .where(col(Example.id) == example_id, col(Example.status) == S.PENDING_VERDICT)
            .values(status=S.CREATED, fooled=fooled, fooled_at=now if fooled else None, verdict=verdict, updated_at=now)
        )
        if rowcount(result) != 1:
            return "skipped", None  # retracted, or judged by another process meanwhile
        await move(
            s,
            round_id=example.round_id,
            user_id=example.user_id,
            before=(S.PENDING_VERDICT, None),
            after=(S.CREATED, fooled),
        )
        await _count_context(s, example.context_id, fooled)
    example.status, example.fooled, example.verdict = S.CREATED, fooled, verdict
    example.fooled_at = now if fooled else None
    await announce_decided(p, example, task.code, round_.number)
    return "decided", fooled


async def _count_context(s: Any, context_id: int | None, fooled: bool | None) -> None:
    """A context's fooled count, once a verdict says an example written on it fooled the model."""
    if context_id is not None and fooled:
        await s.execute(
            update(Context).where(col(Context.id) == context_id).values(total_fooled=col(Context.total_fooled) + 1)
        )


async def announce_decided(p: Platform, example: Example, task_code: str, round_number: int) -> None:
    """``verdict_decided``, then ``model_fooled`` when the example fooled the model."""
    payload = announce.example_payload(example, task_code, round_number)
    await announce.verdict_decided(p, payload)
    if example.fooled:
        await announce.model_fooled(p, payload)


async def judge_pending(p: Platform, *, limit: int = 20) -> int:
    """Ask the judge about up to ``limit`` examples still waiting for its verdict (a stopped server's, or one whose
    judge failed), oldest first, each until it has answered unreadably ``UNUSABLE_OUTPUT_ATTEMPTS`` times; stops at
    the first judge that cannot be reached (the next would fail alike). Returns how many were decided."""
    judged = [code for code, task in p.plugins.registry.tasks.items() if task.verdict == "judge"]
    if not judged:
        return 0
    async with p.db.session() as s:
        rows = (
            await s.execute(
                select(col(Example.id), col(Example.verdict), col(TaskRow.code))
                .join(TaskRow, col(TaskRow.id) == col(Example.task_id))
                .where(col(Example.status) == S.PENDING_VERDICT, col(TaskRow.code).in_(judged))
                .order_by(col(Example.id))
                .limit(limit * 10)  # those whose retries stopped are passed over
            )
        ).all()
    decided = asked = 0
    for example_id, verdict, code in rows:
        task = p.plugins.registry.tasks.get(code)
        if task is None or task.verdict != "judge":
            continue
        if int((verdict or {}).get("attempts", 0)) >= p.settings.unusable_output_attempts:
            continue
        outcome, _ = await _judge_once(p, example_id)
        decided += outcome == "decided"
        asked += 1
        if outcome == "unreachable" or asked >= limit:
            break
    return decided


async def overrule(p: Platform, actor: Actor, example_id: int, fooled: bool, reason: str) -> Example:
    """A task's owner (or an admin) sets whether a judged example fooled the model, against the judge: the counters
    move with it, the judge's verdict and rationale stay beside the owner's, and ``verdict_decided`` (then
    ``model_fooled``, when it now fools the model and did not before) is announced."""
    actor = require_human(actor)
    reason = (reason or "").strip()
    if not 1 <= len(reason) <= MAX_RATIONALE:
        raise InvalidInput.from_errors([FieldError("reason", "length", f"say why, in 1 to {MAX_RATIONALE} characters")])
    async with p.db.write() as s:
        example = await s.get(Example, example_id, with_for_update=p.db.dialect == "postgresql")
        if example is None:
            raise NotFound(f"No example {example_id}")
        if not await task_service.is_owner(s, actor, example.task_id):
            raise Forbidden("Only the task's owners and admins can overrule a verdict")
        verdict = dict(example.verdict or {})
        if verdict.get("by") != "judge" or verdict.get("state") != "decided":
            raise Conflict(
                f"Example {example_id} has no judge's verdict to overrule"
                + (" yet: wait for the judge" if verdict.get("by") == "judge" else "")
                + "; an example its validators decide is decided by their votes (or an owner's)"
            )
        if example.status == S.RETRACTED:
            raise Conflict(f"Example {example_id} was retracted")
        previous = example.fooled
        before = (example.status, previous)
        verdict["overruled"] = {
            "by_user_id": actor.person_id,
            "fooled": fooled,
            "reason": reason,
            "at": utcnow().isoformat(),
        }
        example.fooled, example.verdict, example.updated_at = fooled, verdict, utcnow()
        if fooled != bool(previous):  # announced anew when it now fools (modelFooled's replay order)
            example.fooled_at = example.updated_at if fooled else None
        await move(s, round_id=example.round_id, user_id=example.user_id, before=before, after=(example.status, fooled))
        if example.context_id is not None and bool(previous) != fooled:
            await s.execute(
                update(Context)
                .where(col(Context.id) == example.context_id)
                .values(total_fooled=col(Context.total_fooled) + (1 if fooled else -1))
            )
        code = await s.scalar(select(col(TaskRow.code)).where(col(TaskRow.id) == example.task_id))
        number = await s.scalar(select(col(Round.number)).where(col(Round.id) == example.round_id))
        await s.flush()
    payload = announce.example_payload(example, code or "", int(number or 0))
    await announce.verdict_decided(p, payload)
    if fooled and not previous:
        await announce.model_fooled(p, payload)
    return example
