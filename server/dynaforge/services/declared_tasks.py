"""Tasks declared as data (:mod:`dynaforge.tasks.declarative`): admins create and update them through the API; every
process loads them from the database beside the plugins' tasks, with no restart.

The process that creates or updates one loads it at once; another process (a second server, an evaluation worker)
loads the declared tasks when it starts, and again when it meets a task code it does not know
(``dynaforge.services.task_loading.load_if_declared``, from ``services.tasks.get_task`` and the evaluation runner), so a
new task reaches every process without a restart. An *update* reaches another
process when it next loads them (its restart, or a refresh for an unknown code).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sqlalchemy import select
from sqlmodel import col

from dynaforge.db.models import DeclaredTaskRow, utcnow
from dynaforge.errors import AlreadyExists, FieldError, Forbidden, InvalidInput, NotFound
from dynaforge.plugins import task_registry_problems
from dynaforge.services import contexts as context_service
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_user
from dynaforge.services.platform import Platform
from dynaforge.services.task_loading import load_stored
from dynaforge.tasks.declarative import (
    DECLARATION_SCHEMA,
    DECLARED_PREFIX,
    DeclaredTask,
    load_declaration,
)

__all__ = ["DECLARATION_SCHEMA", "create", "declaration", "load_all", "update"]


async def load_all(p: Platform) -> None:
    """Load every declared task into the platform's plugins, then give each new one its row and round 1."""
    await load_stored(p.db, p.plugins)
    await task_service.sync_registered_tasks(p)


def _require_admin(actor: Actor) -> Actor:
    actor = require_user(actor)
    if not actor.is_admin:
        raise Forbidden("Only admins declare tasks")
    return actor


def check_targets_chosen_by(p: Platform, chooser: Actor, task: DeclaredTask) -> None:
    """InvalidInput unless ``chooser`` may name each of the task's target models: a backend or configuration for
    admins only (a local model folder, say) stays so when a declaration names it. ``chooser`` is whoever wrote the
    declaration: the admin who declares it, or the user who proposed it (an admin accepting a proposal does not
    choose its targets)."""
    for i, spec in enumerate(task.default_target_models):
        task_service.check_backend_allowed(
            p, chooser, spec.backend, f"definition.target_models[{i}].backend", spec.config
        )


async def _checked(p: Platform, actor: Actor, definition: Any, proposer: Actor | None = None) -> DeclaredTask:
    """The task ``definition`` declares, checked against the schema, the task contract, what the loaded plugins
    registered, and the rules a round's targets follow (known backends, accepted configurations, who may name them
    (``proposer``, else ``actor``), outbound policy)."""
    task = load_declaration(definition)
    registry = p.plugins.registry
    own = {sl.name: sl for sl in task.slices()}  # registered with the task, so not there yet
    with_own = dataclasses.replace(registry, slices={**registry.slices, **own})
    problems = [FieldError("definition", "plugin", problem) for problem in task_registry_problems(task, with_own)]
    slices = {sl.name for sl in registry.slices.values() if sl.task_code != task.code}
    for i, sl in enumerate(task.declaration.get("slices", ())):
        if sl["name"] in slices:
            problems.append(FieldError(f"definition.slices[{i}].name", "unique", f"slice {sl['name']} is taken"))
    if problems:
        raise InvalidInput.from_errors(problems)
    specs = [m.as_dict() for m in task.default_target_models]
    task_service.check_target_models(p, specs, "majority")
    check_targets_chosen_by(p, proposer or actor, task)
    for spec in task.default_target_models:
        await task_service.check_outbound(p, actor, spec.backend, spec.config, field="definition.target_models")
    if task.judge is not None:  # the judge model is checked like a target
        judge = task.judge.model_spec()
        try:
            task_service.check_target_models(p, [judge.as_dict()], "majority")
        except InvalidInput as exc:
            raise InvalidInput.from_errors(
                [
                    FieldError(e.field.replace("models[0]", "definition.fooled.judge"), e.rule, e.message)
                    for e in exc.field_errors
                ]
            ) from None
        task_service.check_backend_allowed(
            p, proposer or actor, judge.backend, "definition.fooled.judge.backend", judge.config
        )
        await task_service.check_outbound(p, actor, judge.backend, judge.config, field="definition.fooled.judge")
    return task


async def create(p: Platform, actor: Actor, definition: Any, *, proposer: Actor | None = None) -> task_service.TaskView:
    """Admins declare a new task: stored, loaded in this process at once (its round 1 opened with its target
    models and the declaration's ``demo_contexts`` as its contexts), and by the others when they meet its code.
    ``proposer``: the user whose proposal carried the definition, against whom its target models are checked."""
    actor = _require_admin(actor)
    task = await _checked(p, actor, definition, proposer)
    if p.plugins.task(task.code) is not None:
        raise AlreadyExists(f"Task {task.code} exists already (update a declared task with updateDeclaredTask)")
    async with p.db.write() as s:
        taken = await s.scalar(select(col(DeclaredTaskRow.id)).where(col(DeclaredTaskRow.code) == task.code))
        if taken is not None:
            raise AlreadyExists(f"Task {task.code} is declared already (updateDeclaredTask changes it)")
        s.add(DeclaredTaskRow(code=task.code, definition=task.declaration, created_by=actor.user_id))
    await load_all(p)
    if p.plugins.task(task.code) is None:  # refused at registration after all (a race with another declaration)
        raise InvalidInput.from_errors(
            [FieldError("definition", "plugin", p.plugins.errors.get(DECLARED_PREFIX + task.code, "not loaded"))]
        )
    # Round 1 starts with the declaration's contexts, as `dynaforge demo` starts a plugin's task with its own
    # (validated with the declaration, so this adds them all); an update adds none, and never twice.
    size = context_service.MAX_CONTEXTS_PER_CALL
    for start in range(0, len(task.demo_contexts), size):
        await context_service.add_contexts(p, actor, task.code, list(task.demo_contexts[start : start + size]))
    return await task_service.get_task(p, actor, task.code)


async def update(p: Platform, actor: Actor, code: str, definition: Any) -> task_service.TaskView:
    """Admins change a declared task (its code stays). Rounds keep the target models they pinned; the next round
    opened takes the new ones by default."""
    actor = _require_admin(actor)
    if isinstance(definition, dict) and definition.get("code") != code:
        raise InvalidInput.from_errors(
            [FieldError("definition.code", "changed", f"must stay {code!r}: declare a new task for a new code")]
        )
    if await declaration(p, code) is None:
        raise NotFound(f"No declared task {code} (tasks of installed plugins change with their package)")
    task = await _checked(p, actor, definition)
    async with p.db.write() as s:
        row = await s.scalar(select(DeclaredTaskRow).where(col(DeclaredTaskRow.code) == code))
        if row is None:
            raise NotFound(f"No declared task {code}")
        row.definition, row.version, row.updated_at = task.declaration, row.version + 1, utcnow()
    await load_all(p)
    return await task_service.get_task(p, actor, code)


async def declaration(p: Platform, code: str) -> tuple[dict[str, Any], int] | None:
    """A declared task's stored definition and version (None for a plugin's task)."""
    async with p.db.session() as s:
        row = await s.scalar(select(DeclaredTaskRow).where(col(DeclaredTaskRow.code) == code))
    return None if row is None else (row.definition, row.version)
