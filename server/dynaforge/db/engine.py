"""The async engine and sessions.

SQLite runs in WAL mode with foreign keys on. pysqlite's own transaction handling is switched off and BEGIN is
emitted by SQLAlchemy (the documented recipe), so SAVEPOINTs work; sessions that write begin with
``BEGIN IMMEDIATE`` so two writers queue on the lock instead of failing when a read lock is upgraded. Within one
process, SQLite writers also queue on an asyncio lock before they begin: SQLite admits one writer at a time anyway,
and its busy handler makes a waiting connection sleep in growing steps (up to 100 ms), which under a burst of
concurrent writes costs far more than waiting in line.

``run_write(unit)`` runs a synchronous unit of work as one transaction. On SQLite it runs on a writer thread of its
own, over a plain (pysqlite) connection with the same settings: aiosqlite crosses from the event loop to its thread
and back for every cursor operation (about fifteen crossings for a write of four statements, each a hand-over of the
interpreter lock), where the unit crosses once. Elsewhere it runs in the async session's greenlet
(``AsyncConnection.run_sync``), so the same unit serves both.

On PostgreSQL a pooled connection is checked with one empty statement before use (``_ping_on_checkout``), where
SQLAlchemy's own pre-ping on asyncpg takes three round trips.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from sqlalchemy import Connection, CursorResult, Engine, Result, create_engine, event
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from dynaforge import jsonio

T = TypeVar("T")


def rowcount(result: Result[Any]) -> int:
    """The rows an UPDATE or DELETE matched (compare-and-set writes check it). The result of executing a DML
    statement is a cursor result; SQLAlchemy types ``execute`` more generally."""
    return cast("CursorResult[Any]", result).rowcount


def _configure_sqlite(engine: Engine, begin: str) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:  # pragma: no cover - every sqlite test
        dbapi_connection.isolation_level = None  # let SQLAlchemy emit BEGIN
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:  # pragma: no cover
        conn.exec_driver_sql(begin)


def _ping_on_checkout(engine: Engine) -> None:
    """Check a pooled PostgreSQL connection before each use with one empty statement (one round trip), so that a
    connection the server dropped (a restart, a failover) is replaced before a request meets it. SQLAlchemy's own
    ``pool_pre_ping`` on asyncpg wraps the same statement in BEGIN and ROLLBACK: three round trips per checkout."""

    @event.listens_for(engine, "checkout")
    def _ping(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        try:
            dbapi_connection.run_async(lambda connection: connection.fetchrow(";"))
        except Exception as exc:  # noqa: BLE001 - any failure means this connection cannot be used
            raise DisconnectionError(f"pooled connection failed its ping: {exc}") from exc


def _sqlite_engine(url: str, begin: str, echo: bool) -> AsyncEngine:
    engine = create_async_engine(url, echo=echo, connect_args={"timeout": 30}, json_deserializer=jsonio.loads)
    _configure_sqlite(engine.sync_engine, begin)
    return engine


def _sqlite_writer_engine(url: str, echo: bool) -> Engine:
    """A plain pysqlite engine on the same file for ``run_write``: one connection, used by the writer thread."""
    engine = create_engine(
        url.replace("sqlite+aiosqlite:", "sqlite:", 1),
        echo=echo,
        connect_args={"timeout": 30, "check_same_thread": False},
        json_deserializer=jsonio.loads,
        pool_size=1,
        max_overflow=0,
    )
    _configure_sqlite(engine, "BEGIN IMMEDIATE")
    return engine


class Database:
    """Engines and session factories for one database URL.

    ``session()`` is for reads, ``write()`` for a unit of work that commits on success and rolls back on error.
    """

    def __init__(self, url: str, *, echo: bool = False):
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        on_disk = False
        if self.is_sqlite:
            path = url.split(":///", 1)[1].split("?", 1)[0] if ":///" in url else ""
            on_disk = bool(path) and path != ":memory:"
            if on_disk:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.engine = _sqlite_engine(url, "BEGIN IMMEDIATE", echo)
            self.read_engine = _sqlite_engine(url, "BEGIN", echo)
        else:
            self.engine = create_async_engine(
                url, echo=echo, pool_size=10, max_overflow=10, json_deserializer=jsonio.loads
            )
            _ping_on_checkout(self.engine.sync_engine)
            self.read_engine = self.engine
        self._writer = async_sessionmaker(self.engine, expire_on_commit=False, class_=AsyncSession)
        self._reader = async_sessionmaker(self.read_engine, expire_on_commit=False, class_=AsyncSession)
        self._write_lock: asyncio.Lock | None = asyncio.Lock() if self.is_sqlite else None
        self._unit_engine: Engine | None = None
        self._unit_thread: ThreadPoolExecutor | None = None
        self._unit_open: Connection | None = None  # the writer thread's connection, kept between units
        if on_disk:  # an in-memory database is one per connection: its units stay on the async connection
            self._unit_engine = _sqlite_writer_engine(url, echo)
            self._unit_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dynaforge-sqlite-writer")

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        async with self._reader() as session:
            yield session

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        if self._write_lock is None:
            async with self._writer() as session, session.begin():
                yield session
            return
        async with self._write_lock, self._writer() as session, session.begin():
            yield session

    async def run_write(self, unit: Callable[[Connection], T]) -> T:
        """Run ``unit(connection)``, synchronous SQLAlchemy Core statements on a plain connection, as one transaction
        that commits when it returns and rolls back when it raises; returns what it returns. For short, hot writes
        (the ORM's session machinery is not needed to run a few prepared statements)."""
        if self._unit_engine is None or self._unit_thread is None or self._write_lock is None:
            async with self.write() as session:
                connection = await session.connection()
                return await connection.run_sync(unit)

        def run() -> T:
            connection = self._unit_connection()
            with connection.begin():
                return unit(connection)

        async with self._write_lock:
            return await asyncio.get_running_loop().run_in_executor(self._unit_thread, run)

    def _unit_connection(self) -> Connection:
        """The writer thread's connection, opened on first use and kept: checking one out of the pool and back in
        for every unit cost more than the unit's statements. A connection SQLAlchemy invalidated (a disk error, a
        file replaced underneath) is replaced."""
        connection = self._unit_open
        if connection is None or connection.closed or connection.invalidated:
            if connection is not None:
                connection.close()
            assert self._unit_engine is not None
            connection = self._unit_open = self._unit_engine.connect()
        return connection

    def _close_units(self) -> None:
        if self._unit_open is not None:
            self._unit_open.close()
            self._unit_open = None
        if self._unit_engine is not None:
            self._unit_engine.dispose()

    async def dispose(self) -> None:
        await self.engine.dispose()
        if self.read_engine is not self.engine:
            await self.read_engine.dispose()
        if self._unit_engine is not None and self._unit_thread is not None:
            self._unit_thread.submit(self._close_units).result()


class BoundDatabase(Database):
    """A Database whose sessions all join one open connection's transaction through SAVEPOINTs.

    Tests use it to run each test inside a transaction that is rolled back afterwards. Sessions must then be used
    one at a time (a single connection cannot serve concurrent statements), so they queue on a lock; code that
    opens a session inside another would wait forever here, which tests then reveal.
    """

    def __init__(self, connection: AsyncConnection, url: str):  # noqa: D107 - no engines of its own
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        self.engine = connection.engine
        self.read_engine = connection.engine
        maker = async_sessionmaker(
            bind=connection, expire_on_commit=False, class_=AsyncSession, join_transaction_mode="create_savepoint"
        )
        self._writer = maker
        self._reader = maker
        self._lock = asyncio.Lock()
        self._write_lock = None
        self._unit_engine = None  # run_write joins the test's transaction through the async session
        self._unit_thread = None
        self._unit_open = None

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        async with self._lock, self._reader() as session:
            yield session

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        async with self._lock, self._writer() as session, session.begin():
            yield session

    async def dispose(self) -> None:
        """The connection belongs to the caller."""
