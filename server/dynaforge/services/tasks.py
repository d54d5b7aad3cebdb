"""Tasks and rounds: keeping a row per registered task, reading tasks, ownership checks."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from dynaforge.db.models import Round, TaskOwner, TaskRow
from dynaforge.errors import FieldError, Forbidden, InvalidInput, NotFound, RoundClosed
from dynaforge.services.actor import Actor, require_user
from dynaforge.services.platform import Platform
from dynaforge.tasks.base import ModelSpec, Task

ENSEMBLE_RULES = {
    "majority": "fooled when the ensemble's majority prediction is wrong (ties go to the earliest member)",
    "any_wrong": "fooled when at least one member is wrong",
    "all_wrong": "fooled only when every member is wrong",
}
MAX_ENSEMBLE = 7


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
    row = p.caches.tasks.get(code)
    if row is None or row.hidden:
        async with p.db.session() as s:
            if row is None and task is not None:
                row = await s.scalar(select(TaskRow).where(TaskRow.code == code))
                if row is not None:
                    p.caches.tasks.put(code, row)
            visible = row is not None and await _visible(s, actor, row)
    else:
        visible = True
    if task is None or not visible:
        known = ", ".join(sorted(p.plugins.registry.tasks)) or "none"
        raise NotFound(f"No task {code!r}; known tasks: {known}")
    return TaskView(task, row)


async def current_round(s: AsyncSession, task_id: int) -> Round | None:
    return await s.scalar(select(Round).where(Round.task_id == task_id).order_by(Round.number.desc()).limit(1))


async def cached_current_round(p: Platform, task_id: int) -> Round | None:
    """The current round as read at most ``cache_ttl_s`` ago (for the write path; counters may be stale)."""

    async def load() -> Round | None:
        async with p.db.session() as s:
            return await current_round(s, task_id)

    return await p.caches.rounds.get_or_load(task_id, load)


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


async def open_round_targets(p: Platform) -> list[ModelSpec]:
    """The target models of every task's current round, if it is open (to load them ahead of annotators)."""
    specs: list[ModelSpec] = []
    async with p.db.session() as s:
        for row in await s.scalars(select(TaskRow).where(TaskRow.code.in_(list(p.plugins.registry.tasks)))):
            round_ = await current_round(s, row.id)
            if round_ is not None and round_.ended_at is None:
                specs.extend(ModelSpec.from_dict(m) for m in round_.target_models)
    return specs


def check_target_models(p: Platform, models: list[dict], rule: str) -> list[ModelSpec]:
    """Validate a round's targets without loading them: known backends, configurations each backend accepts,
    distinct names, a known ensemble rule. Raises :class:`InvalidInput` naming each bad entry."""
    errors: list[FieldError] = []
    if not 1 <= len(models) <= MAX_ENSEMBLE:
        errors.append(FieldError("models", "count", f"give between 1 and {MAX_ENSEMBLE} models"))
    if rule not in ENSEMBLE_RULES:
        errors.append(FieldError("ensembleRule", "choice", f"must be one of {', '.join(ENSEMBLE_RULES)}"))
    specs, names = [], set()
    backends = p.plugins.registry.backends
    for i, model in enumerate(models):
        where = f"models[{i}]"
        name, backend, config = model.get("name"), model.get("backend"), model.get("config")
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            errors.append(FieldError(f"{where}.name", "required", "must be a name of 1 to 100 characters"))
            continue
        if name in names:
            errors.append(FieldError(f"{where}.name", "unique", f"{name!r} is used by another model of this round"))
        names.add(name)
        if backend not in backends:
            known = ", ".join(sorted(backends)) or "none"
            errors.append(FieldError(f"{where}.backend", "choice", f"no backend {backend!r}; installed: {known}"))
            continue
        if not isinstance(config, dict):
            errors.append(FieldError(f"{where}.config", "type", "must be a JSON object"))
            continue
        for problem in backends[backend].check_config(config):
            errors.append(FieldError(f"{where}.config", "backend_config", problem))
        specs.append(ModelSpec(name=name.strip(), backend=backend, config=config))
    if errors:
        raise InvalidInput.from_errors(errors)
    return specs


async def set_target_models(
    p: Platform, actor: Actor | None, code: str, models: list[dict], rule: str = "majority", *, auth_error: str | None = None
) -> Round:
    """Owners (and admins) put one model or an ensemble in the loop of the task's open round."""
    actor = require_user(actor, auth_error)
    view = await get_task(p, actor, code)
    specs = check_target_models(p, models, rule)
    async with p.db.write() as s:
        if not await is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {code} and admins can set its target models")
        round_ = await current_round(s, view.row.id)
        if round_ is None or round_.ended_at is not None:
            raise RoundClosed(f"Task {code} has no open round; open the next one first")
        round_.target_models = [spec.as_dict() for spec in specs]
        round_.ensemble_rule = rule
        await s.flush()
    p.caches.rounds.pop(view.row.id)
    return round_
