"""Alembic environment: async engines, ``render_as_batch`` so migrations also run on SQLite.

When ``dynaforge.db.migrate`` runs migrations it hands over an open connection in ``config.attributes``; the
alembic CLI gets a URL from ``DYNAFORGE_DATABASE_URL`` instead.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.ext.asyncio import create_async_engine
from sqlmodel import SQLModel

import dynaforge.db.models  # noqa: F401  (registers the tables on SQLModel.metadata)
from dynaforge.settings import Settings

config = context.config
target_metadata = SQLModel.metadata


def _configure(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
    )


def _run(connection) -> None:
    _configure(connection)
    with context.begin_transaction():
        context.run_migrations()


async def _run_async(url: str) -> None:
    engine = create_async_engine(url)
    async with engine.connect() as connection:
        await connection.run_sync(_run)
        await connection.commit()
    await engine.dispose()


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url") or Settings().database_url,
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    asyncio.run(_run_async(config.get_main_option("sqlalchemy.url") or Settings().database_url))


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
