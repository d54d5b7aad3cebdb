"""Shared fixtures: one database fixture per backend (SQLite always, PostgreSQL where reachable; in CI a missing
PostgreSQL fails), each test inside a transaction rolled back to a savepoint, and a platform with a toy task."""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from toy_plugin import ToyPlugin, ToyTask  # noqa: E402

from dynaforge.app import create_app  # noqa: E402
from dynaforge.db.engine import BoundDatabase, Database  # noqa: E402
from dynaforge.db.migrate import upgrade  # noqa: E402
from dynaforge.inference.client import LocalInferenceClient  # noqa: E402
from dynaforge.plugins import Plugins  # noqa: E402
from dynaforge.services import contexts as context_service  # noqa: E402
from dynaforge.services import tasks as task_service  # noqa: E402
from dynaforge.services.actor import Actor  # noqa: E402
from dynaforge.services.platform import Platform  # noqa: E402
from dynaforge.settings import Settings  # noqa: E402

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
PG_SERVER = os.environ.get("DYNAFORGE_TEST_POSTGRES", "postgresql+asyncpg://postgres@127.0.0.1:5432")


ROOT = Path(__file__).resolve().parent.parent


def real_data(relative: str) -> Path:
    """A file of the public data sets kept beside the project (``../shared/data``, or ``$DYNAFORGE_SHARED_DATA``).

    Tests that replay real data skip, saying why, where the folder is absent (it is not part of the project).
    """
    folder = Path(os.environ.get("DYNAFORGE_SHARED_DATA") or ROOT.parent / "shared" / "data")
    path = folder / relative
    if not path.is_file():
        pytest.skip(
            f"{path} is not here: the public data sets sit beside the project (../shared/data, or set "
            "DYNAFORGE_SHARED_DATA); this test replays them"
        )
    return path


def toy_process_env(tmp: Path, database_url: str, **settings: str) -> dict[str, str]:
    """The environment of a process a test starts (``serve``, a job runner) with the toy task installed as an
    entry-point plugin (a dist-info folder in ``tmp``), on ``database_url``; ``settings`` are more DYNAFORGE_ values."""
    dist = tmp / "toy_plugin-0.1.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy_plugin\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[dynaforge]\ntoy = toy_plugin:PLUGIN\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DYNAFORGE_")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(tmp), str(Path(__file__).resolve().parent)]),
        DYNAFORGE_DATABASE_URL=database_url,
        DYNAFORGE_LOAD_PLUGINS="toy",
        PYTHONUNBUFFERED="1",
    )
    env.update({f"DYNAFORGE_{name.upper()}": value for name, value in settings.items()})
    return env


def runner_pids() -> list[int]:
    """The processes running an evaluation job (``python -m dynaforge.evaluation.runner``), from /proc."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if b"dynaforge.evaluation.runner" in fh.read():
                        pids.append(int(entry))
            except OSError:
                pass
    return pids


def service_missing(what: str, why: str) -> None:
    """Skip on a developer's machine; fail in CI, where every service must be there."""
    message = f"{what} is not reachable ({why}); start it or set its URL to run these tests"
    if IN_CI:
        pytest.fail(message + " — CI requires it")
    pytest.skip(message)


async def _admin_execute(sql: str) -> None:
    import asyncpg

    dsn = PG_SERVER.replace("postgresql+asyncpg://", "postgresql://") + "/postgres"
    conn = await asyncpg.connect(dsn, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
async def sqlite_url():
    folder = tempfile.mkdtemp(prefix="dynaforge-test-")
    url = f"sqlite+aiosqlite:///{folder}/test.db"
    db = Database(url)
    await upgrade(db)
    await db.dispose()
    yield url


@pytest.fixture(scope="session")
async def postgres_url():
    name = f"dynaforge_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    try:
        await _admin_execute(f'CREATE DATABASE "{name}"')
    except Exception as exc:  # noqa: BLE001 - any failure means no usable server
        service_missing("PostgreSQL", f"{type(exc).__name__}: {exc}")
    url = f"{PG_SERVER}/{name}"
    db = Database(url)
    await upgrade(db)
    await db.dispose()
    yield url
    await _admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgres"])
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


def make_settings(db_url: str, **overrides) -> Settings:
    # Tests submit models with the python backend (test doubles given by import path) as plain users.
    overrides.setdefault("submission_backends", "http,transformers,python")
    return Settings(database_url=db_url, environment="test", load_plugins="", **overrides)


@pytest.fixture
def settings(db_url) -> Settings:
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
        await p.inference.close()


@pytest.fixture
async def client(platform):
    app = create_app(platform=platform, sync_tasks=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
        yield c


class GraphQLClient:
    """Posts GraphQL to the in-process app; remembers a bearer token."""

    def __init__(self, http: httpx.AsyncClient):
        self.http = http
        self.token: str | None = None

    async def __call__(self, query: str, variables: dict | None = None, token: str | None = ..., expect_errors=False):
        headers = {}
        bearer = self.token if token is ... else token
        if bearer:
            headers["Authorization"] = f"Bearer {bearer}"
        response = await self.http.post(
            "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
        )
        body = response.json()
        if not expect_errors:
            assert "errors" not in body, body
            return body["data"]
        return body


@pytest.fixture
def gql(client):
    return GraphQLClient(client)


REGISTER = """
mutation($u: String!, $e: String!, $p: String!) {
  register(input: {username: $u, email: $e, password: $p}) {
    __typename
    ... on AuthPayload { token user { id username } }
    ... on Error { message }
    ... on InvalidInput { fieldErrors { field rule message } }
  }
}"""


async def register_user(gql: GraphQLClient, username: str = "alice") -> tuple[str, str]:
    data = await gql(
        REGISTER, {"u": username, "e": f"{username}@example.org", "p": "correct horse battery"}, token=None
    )
    payload = data["register"]
    assert payload["__typename"] == "AuthPayload", payload
    return payload["token"], payload["user"]["id"]


@pytest.fixture
async def live_platform(db_url, tmp_path):
    """A platform with the toy task on its own fresh database (of ``db_url``'s kind) and a real engine: a pool of
    connections and no shared test transaction, for concurrency tests and for code that opens its own engine."""
    if db_url.startswith("postgresql"):
        name = f"dynaforge_live_{uuid.uuid4().hex[:10]}"
        await _admin_execute(f'CREATE DATABASE "{name}"')
        url = f"{PG_SERVER}/{name}"
    else:
        name, url = None, f"sqlite+aiosqlite:///{tmp_path}/live.db"
    database = Database(url)
    await upgrade(database)
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
            await _admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
