"""Migrations run on SQLite and PostgreSQL and match the SQLModel tables exactly."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

import dynaforge.db.models  # noqa: F401
from dynaforge.db.engine import Database
from dynaforge.db.migrate import current_revision, head_revision


async def test_migrations_reach_head_and_match_the_models(db_url):
    database = Database(db_url)
    try:
        assert await current_revision(database) == head_revision()
        async with database.engine.connect() as connection:
            diff = await connection.run_sync(
                lambda c: compare_metadata(
                    MigrationContext.configure(c, opts={"compare_type": True}), SQLModel.metadata
                )
            )
    finally:
        await database.dispose()
    assert diff == [], f"models and migrations differ; generate a migration: {diff}"
