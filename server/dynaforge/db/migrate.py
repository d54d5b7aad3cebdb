"""Apply alembic migrations from code (``dynaforge db upgrade``, the demo, tests) on SQLite or PostgreSQL."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config

from dynaforge.db.engine import Database


@cache
def migrations_dir() -> Path:
    """The folder of the ``dynaforge.migrations`` package: ``migrations/`` at the top of a checkout (mapped into the
    package at build time, also for editable installs), ``dynaforge/migrations`` inside an installed wheel."""
    from importlib.util import find_spec

    spec = find_spec("dynaforge.migrations")
    if spec is None:
        raise RuntimeError("the dynaforge.migrations package is missing: reinstall dynaforge")
    if spec.origin is None or not spec.has_location:
        # A folder without __init__.py shadows the package, e.g. server/dynaforge/migrations/ holding nothing but
        # __pycache__ after the migrations moved to the top-level migrations/ folder.
        stale = ", ".join(str(p) for p in spec.submodule_search_locations or ())
        raise RuntimeError(f"{stale} hides the dynaforge.migrations package: delete that folder")
    return Path(spec.origin).resolve().parent


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


async def upgrade(db: Database, revision: str = "head") -> None:
    """Bring the database to ``revision`` inside one transaction."""
    cfg = alembic_config(db.url)

    def _upgrade(sync_connection) -> None:
        cfg.attributes["connection"] = sync_connection
        command.upgrade(cfg, revision)

    async with db.engine.begin() as connection:
        await connection.run_sync(_upgrade)


async def current_revision(db: Database) -> str | None:
    from alembic.runtime.migration import MigrationContext

    async with db.engine.connect() as connection:
        return await connection.run_sync(lambda c: MigrationContext.configure(c).get_current_revision())


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
