"""Shared fixtures: one database fixture per backend (SQLite always, PostgreSQL where reachable; in CI a missing
PostgreSQL fails), each test inside a transaction rolled back to a savepoint, and a platform with a toy task."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import uuid
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Several test processes share the cores: one compute thread each, for them and the processes they start
    # (torch's OpenMP threads would spin waiting for each other on oversubscribed cores, burning the CPU the other
    # test processes need). Before anything imports torch.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")

# The tests' model servers and webhook receivers listen on loopback: the tests allowlist it, as an operator
# allowlists an internal network (tests/test_outbound.py clears it to see the policy refuse).
os.environ.setdefault("DYNAFORGE_OUTBOUND_ALLOW", "127.0.0.0/8,::1,localhost")

from support import GraphQLClient, asyncpg_url, make_settings, pg_execute, service_missing  # noqa: E402
from toy_plugin import ToyPlugin, ToyTask  # noqa: E402
from upload_site import site, tiny_bert  # noqa: E402, F401 - fixtures of the model upload tests

from dynaforge.app import create_app  # noqa: E402
from dynaforge.db.engine import BoundDatabase, Database  # noqa: E402
from dynaforge.db.migrate import upgrade  # noqa: E402
from dynaforge.inference.client import LocalInferenceClient  # noqa: E402
from dynaforge.plugins import Plugins  # noqa: E402
from dynaforge.services import contexts as context_service  # noqa: E402
from dynaforge.services import tasks as task_service  # noqa: E402
from dynaforge.services.actor import Actor  # noqa: E402
from dynaforge.services.platform import Platform  # noqa: E402

# The slowest modules, slowest first: under pytest-xdist they start first, so the longest test does not start last.
SLOWEST_FIRST = ("test_replay_anli", "test_faults", "test_events_redis", "test_e2e", "test_e2e_worker")


def _backend(item: pytest.Item) -> str:
    callspec = getattr(item, "callspec", None)
    values = callspec.params.values() if callspec is not None else ()
    return next((v for v in values if v in ("sqlite", "postgres", "postgresql")), "")


def pytest_collection_modifyitems(config, items):
    """For pytest-xdist (``--dist loadgroup``): the tests that share a module-scoped ``server`` fixture (a real
    server per backend) go to one worker together, so that server starts once; and the slowest modules come first.
    Without xdist the order changes and nothing else."""
    for item in items:
        fixturedefs = item._fixtureinfo.name2fixturedefs.get("server", ())
        if any(d.scope == "module" for d in fixturedefs):
            item.add_marker(pytest.mark.xdist_group(f"{item.module.__name__}[{_backend(item)}]"))

    def rank(item: pytest.Item) -> int:
        name = item.module.__name__ if item.module is not None else ""
        return SLOWEST_FIRST.index(name) if name in SLOWEST_FIRST else len(SLOWEST_FIRST)

    items.sort(key=rank)  # stable: within a rank, the collection order


async def _migrated_postgres(prefix: str) -> tuple[str, str]:
    """A new PostgreSQL database at the head revision: (name, URL). PostgreSQL missing: skip, or fail in CI."""
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    try:
        await pg_execute(f'CREATE DATABASE "{name}"')
    except Exception as exc:  # noqa: BLE001 - any failure means no usable server
        service_missing("PostgreSQL", f"{type(exc).__name__}: {exc}")
    url = asyncpg_url(name)
    db = Database(url)
    await upgrade(db)
    await db.dispose()
    return name, url


async def _migrated_sqlite(path: Path) -> str:
    """A new SQLite file at the head revision; its URL."""
    url = f"sqlite+aiosqlite:///{path}"
    db = Database(url)
    await upgrade(db)
    await db.dispose()
    return url


@pytest.fixture(scope="session")
async def sqlite_url(tmp_path_factory):
    return await _migrated_sqlite(tmp_path_factory.mktemp("sqlite") / "test.db")


@pytest.fixture(scope="session")
async def postgres_url():
    name, url = await _migrated_postgres("dynaforge_test")
    yield url
    await pg_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
async def migrated_sqlite_file(tmp_path_factory) -> Path:
    """A SQLite file at the head revision that no test touches: copied for each test that needs a fresh database."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    await _migrated_sqlite(path)
    return path


@pytest.fixture(scope="session")
async def migrated_postgres_template():
    """A PostgreSQL database at the head revision with no connections: the TEMPLATE of each fresh database."""
    name, _ = await _migrated_postgres("dynaforge_template")
    yield name
    await pg_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request):
    return request.getfixturevalue(f"{request.param}_url")


_engines: dict[str, Database] = {}


@pytest.fixture
async def db(db_url):
    """A database whose every change in the test is rolled back afterwards."""
    database = _engines.get(db_url)
    if database is None:
        database = _engines[db_url] = Database(db_url)
    async with database.engine.connect() as connection:
        transaction = await connection.begin()
        try:
            yield BoundDatabase(connection, db_url)
        finally:
            await transaction.rollback()


@pytest.fixture(scope="session", autouse=True)
async def _dispose_engines():
    yield
    for database in _engines.values():
        await database.dispose()


@pytest.fixture
def settings(db_url):
    return make_settings(db_url)


@pytest.fixture
async def platform(db, settings):
    """A platform over the rolled-back database with only the toy task (plus the core defaults)."""
    plugins = Plugins(allowlist=set(), extra=[ToyPlugin()])
    p = Platform.create(
        settings,
        db=db,
        plugins=plugins,
        inference=LocalInferenceClient(plugins.registry.backends, timeout_s=1.0),
    )
    await task_service.sync_registered_tasks(p)
    await context_service.add_contexts(p, Actor.system(), "toy", list(ToyTask.demo_contexts))
    try:
        yield p
    finally:
        # generation runs started in the test end before its database is rolled back
        await asyncio.gather(*p.adversary_runs.values(), return_exceptions=True)
        await p.inference.close()


@pytest.fixture
async def client(platform):
    app = create_app(platform=platform, sync_tasks=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
        yield c


@pytest.fixture
def gql(client):
    return GraphQLClient(client)


@pytest.fixture
def live_template(request, db_url) -> str | Path:
    """The migrated template of ``db_url``'s kind (a database name, or a file). A plain fixture, so that it may ask
    for the async session fixture of the one kind it needs."""
    if db_url.startswith("postgresql"):
        return request.getfixturevalue("migrated_postgres_template")
    return request.getfixturevalue("migrated_sqlite_file")


@pytest.fixture
async def live_platform(live_template, db_url, tmp_path):
    """A platform with the toy task on its own fresh database (of ``db_url``'s kind) and a real engine: a pool of
    connections and no shared test transaction, for concurrency tests and for code that opens its own engine.

    The database is a copy of a migrated template (a file copy on SQLite, ``CREATE DATABASE ... TEMPLATE`` on
    PostgreSQL), so no test pays for running the migrations."""
    if db_url.startswith("postgresql"):
        name = f"dynaforge_live_{uuid.uuid4().hex[:10]}"
        await pg_execute(f'CREATE DATABASE "{name}" TEMPLATE "{live_template}"')
        url = asyncpg_url(name)
    else:
        name = None
        shutil.copyfile(live_template, tmp_path / "live.db")
        url = f"sqlite+aiosqlite:///{tmp_path}/live.db"
    database = Database(url)
    plugins = Plugins(allowlist=set(), extra=[ToyPlugin()])
    p = Platform.create(
        make_settings(url, validations_per_minute=10_000),
        db=database,
        plugins=plugins,
        inference=LocalInferenceClient(plugins.registry.backends, timeout_s=5.0),
    )
    await task_service.sync_registered_tasks(p)
    try:
        yield p
    finally:
        await p.close()
        if name is not None:
            await pg_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
