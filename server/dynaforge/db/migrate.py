"""Apply alembic migrations from code (``dynaforge db upgrade``, the demo, tests) on SQLite or PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from dynaforge.db.engine import Database

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
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
