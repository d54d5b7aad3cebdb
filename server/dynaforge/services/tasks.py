"""Tasks and rounds: keeping a row per registered task, reading tasks, ownership checks."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from dynaforge.db.models import Round, TaskOwner, TaskRow
from dynaforge.errors import Forbidden, NotFound
from dynaforge.services.actor import Actor, require_user
from dynaforge.services.platform import Platform
from dynaforge.tasks.base import Task


@dataclass(frozen=True)
class TaskView:
    """A registered task with its stored row."""

    task: Task
    row: TaskRow


async def sync_registered_tasks(p: Platform) -> list[str]:
    """Make sure every registered task has a row and an open round 1 with the task's default target models.

    Idempotent and safe to run from several processes at once; returns the codes of the tasks it created.
    """
    created = []
    for code, task in p.plugins.registry.tasks.items():
        try:
            async with p.db.write() as s:
                row = await s.scalar(select(TaskRow).where(TaskRow.code == code))
                if row is None:
                    row = TaskRow(code=code, name=task.name, settings={"validation_quorum": task.validation_quorum})
                    s.add(row)
                    await s.flush()
                    created.append(code)
                elif row.name != task.name:
                    row.name = task.name
                has_round = await s.scalar(select(Round.id).where(Round.task_id == row.id).limit(1))
                if has_round is None:
                    s.add(
                        Round(
                            task_id=row.id,
                            number=1,
                            target_models=[m.as_dict() for m in task.default_target_models],
                            secret=secrets.token_hex(32),
                        )
                    )
        except IntegrityError:  # another process created it first
            continue
    return created


async def is_owner(s: AsyncSession, actor: Actor | None, task_id: int) -> bool:
    if actor is None:
        return False
    if actor.is_admin:
        return True
    if actor.user_id is None:
        return False
    return (
        await s.scalar(select(TaskOwner.user_id).where(TaskOwner.task_id == task_id, TaskOwner.user_id == actor.user_id))
    ) is not None


async def _visible(s: AsyncSession, actor: Actor | None, row: TaskRow) -> bool:
    return not row.hidden or await is_owner(s, actor, row.id)


async def list_tasks(p: Platform, actor: Actor | None) -> list[TaskView]:
    """Tasks whose plugin is loaded; hidden ones only for their owners and admins."""
    registry = p.plugins.registry.tasks
    async with p.db.session() as s:
        rows = list(await s.scalars(select(TaskRow).order_by(TaskRow.code)))
        return [TaskView(registry[r.code], r) for r in rows if r.code in registry and await _visible(s, actor, r)]


async def get_task(p: Platform, actor: Actor | None, code: str) -> TaskView:
    task = p.plugins.task(code)
    async with p.db.session() as s:
        row = await s.scalar(select(TaskRow).where(TaskRow.code == code))
        if task is None or row is None or not await _visible(s, actor, row):
            known = ", ".join(sorted(p.plugins.registry.tasks)) or "none"
            raise NotFound(f"No task {code!r}; known tasks: {known}")
    return TaskView(task, row)


async def current_round(s: AsyncSession, task_id: int) -> Round | None:
    return await s.scalar(select(Round).where(Round.task_id == task_id).order_by(Round.number.desc()).limit(1))


async def get_round(p: Platform, task_id: int, number: int | None = None) -> Round | None:
    async with p.db.session() as s:
        if number is None:
            return await current_round(s, task_id)
        return await s.scalar(select(Round).where(Round.task_id == task_id, Round.number == number))


async def grant_ownership(p: Platform, actor: Actor | None, code: str, user_id: int) -> None:
    """Admins make a user an owner of a task (idempotent)."""
    actor = require_user(actor)
    if not actor.is_admin:
        raise Forbidden("Only an admin can grant task ownership")
    view = await get_task(p, actor, code)
    async with p.db.write() as s:
        if await s.get(TaskOwner, (view.row.id, user_id)) is None:
            s.add(TaskOwner(task_id=view.row.id, user_id=user_id))
