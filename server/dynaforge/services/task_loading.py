"""Loading the tasks declared in the database (:mod:`dynaforge.tasks.declarative`) into a process's plugins: at
start-up (``declared_tasks.load_all``), and again when a process meets a task code it does not know
(``services.tasks.get_task`` and the evaluation runner), so that a task declared by another process reaches this one
with no restart. Storage stays here: the declaration format itself (``tasks/``) knows no database."""

from __future__ import annotations

import logging

from sqlalchemy import select
from sqlmodel import col

from dynaforge.db.engine import Database
from dynaforge.db.models import DeclaredTaskRow
from dynaforge.errors import InvalidInput
from dynaforge.plugins import Plugins
from dynaforge.tasks.declarative import DECLARED_PREFIX, load_declaration

log = logging.getLogger(__name__)

__all__ = ["load_if_declared", "load_stored"]


async def load_stored(db: Database, plugins: Plugins) -> None:
    """Load every task declared in the database into ``plugins``, in place of those loaded before. A stored
    declaration that no longer loads (a plugin it relies on is gone) is listed in ``plugins.errors`` as
    ``declared:CODE``, like a broken plugin."""
    async with db.session() as s:
        rows = list(await s.scalars(select(DeclaredTaskRow).order_by(col(DeclaredTaskRow.id))))
    tasks, failed = [], {}
    for row in rows:
        try:
            tasks.append(load_declaration(row.definition))
        except InvalidInput as exc:
            failed[DECLARED_PREFIX + row.code] = exc.message
    plugins.replace_declared(tasks)
    for name, error in failed.items():
        log.error("declared task %s no longer loads: %s", name, error)
        plugins.errors[name] = error


async def load_if_declared(db: Database, plugins: Plugins, code: str) -> bool:
    """When ``code`` names no loaded task but one declared in the database (by another process), load the declared
    tasks again. True when the task is loaded now."""
    if plugins.task(code) is not None:
        return True
    async with db.session() as s:
        declared = await s.scalar(select(col(DeclaredTaskRow.id)).where(col(DeclaredTaskRow.code) == code))
    if declared is None:
        return False
    await load_stored(db, plugins)
    return plugins.task(code) is not None
