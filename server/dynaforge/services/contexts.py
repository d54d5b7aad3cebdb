"""Contexts: the passages or prompts annotators write against, and how the next one is chosen."""

from __future__ import annotations

import random
from typing import Any

from sqlalchemy import func, select

from dynaforge.db.models import Context
from dynaforge.errors import FieldError, Forbidden, InvalidInput, NotFound
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_user
from dynaforge.services.platform import Platform

_SAMPLE = 16


MAX_CONTEXTS_PER_CALL = 1000


async def add_contexts(
    p: Platform,
    actor: Actor | None,
    task_code: str,
    contexts: list[Any],
    *,
    tag: str | None = None,
    auth_error: str | None = None,
) -> list[int]:
    """Add contexts to the task's current round: owners and admins only; all or nothing."""
    actor = require_user(actor, auth_error)
    view = await task_service.get_task(p, actor, task_code)
    if not contexts or len(contexts) > MAX_CONTEXTS_PER_CALL:
        raise InvalidInput.from_errors(
            [FieldError("contexts", "count", f"give 1 to {MAX_CONTEXTS_PER_CALL} contexts per call")]
        )
    if tag is not None and not 1 <= len(tag) <= 100:
        raise InvalidInput.from_errors([FieldError("tag", "length", "must have 1 to 100 characters")])
    cleaned, errors = [], []
    for i, values in enumerate(contexts):
        try:
            cleaned.append(view.task.validate_context(values))
        except InvalidInput as exc:
            errors.extend(FieldError(f"contexts[{i}].{e.field}", e.rule, e.message) for e in exc.field_errors)
    if errors:
        raise InvalidInput.from_errors(errors)
    async with p.db.write() as s:
        if not await task_service.is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {task_code} and admins can add contexts")
        round_ = await task_service.current_round(s, view.row.id)
        rows = [Context(task_id=view.row.id, round_id=round_.id, fields=values, tag=tag) for values in cleaned]
        s.add_all(rows)
        await s.flush()
        return [r.id for r in rows]


async def next_context(p: Platform, actor: Actor | None, task_code: str, *, tag: str | None = None) -> Context:
    """Least-used strategy: one of the current round's contexts used the fewest times (ties broken at random,
    so concurrent annotators spread over contexts instead of all getting the same one)."""
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        round_ = await task_service.current_round(s, view.row.id)
        where = [Context.round_id == round_.id]
        if tag is not None:
            where.append(Context.tag == tag)
        least = await s.scalar(select(func.min(Context.total_used)).where(*where))
        if least is None:
            raise NotFound(f"Round {round_.number} of {task_code} has no contexts{' tagged ' + tag if tag else ''} yet")
        candidates = list(
            await s.scalars(
                select(Context).where(*where, Context.total_used == least).order_by(Context.id).limit(_SAMPLE)
            )
        )
    return random.choice(candidates)


async def get_context(p: Platform, context_id: int) -> Context | None:
    async with p.db.session() as s:
        return await s.get(Context, context_id)
