"""Helpers shared by the test modules. Test modules import from here (and fixtures from ``conftest.py``), never from
one another.

* services: :data:`IN_CI`, :func:`service_missing`, :data:`PG_SERVER`, :data:`REDIS_URL`, :func:`database`,
  :func:`real_data`;
* processes: :func:`cli`, :func:`serve`, :func:`wait_healthy`, :func:`stop`, :func:`toy_process_env`,
  :func:`runner_pids`, :class:`PrivateRedis` (a redis-server of a test's own);
* in-process servers: :func:`free_port`, :func:`serve_in_loop`, :func:`serve_in_thread`;
* waiting: :func:`eventually` and :func:`wait_until` poll a condition until it holds (never a fixed sleep);
* the platform: :func:`make_user`, :func:`current_round`;
* the real server over HTTP with the ``gql`` client: :class:`Server`, :func:`e2e_environment`,
  :func:`write_e2e_plugin`, :func:`operator_server`, :func:`session`, :func:`run`, :func:`register`.
* reading answers: :func:`gid` (a row's global id), :func:`by_name` (a list of named entries as a dict).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# The PostgreSQL server the tests make their databases on (trust auth for user postgres), without a database name.
PG_SERVER = os.environ.get("DYNAFORGE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432").replace(
    "postgresql+asyncpg://", "postgresql://"
)
REDIS_URL = os.environ.get("DYNAFORGE_TEST_REDIS", "redis://127.0.0.1:6379/15")
DYNAFORGE = str(Path(sys.prefix) / "bin" / "dynaforge")
if not os.path.exists(DYNAFORGE):  # pytest not run from the virtual environment
    DYNAFORGE = shutil.which("dynaforge") or "dynaforge"
PYTHON = sys.executable
HEALTH_TIMEOUT_S = 60.0
CLI_TIMEOUT_S = 120.0
REQUEST_TIMEOUT_S = 120  # the first prediction of a real model may wait for the model to load


# argon2id at its recommended cost takes 0.15 s of CPU a password; the tests create hundreds of accounts. Every
# platform and server process a test makes hashes at the lowest cost (as DYNAFORGE_ settings for child processes).
CHEAP_PASSWORD_HASHING = {"password_hash_time_cost": "1", "password_hash_memory_kib": "64"}


def process_settings_env() -> dict[str, str]:
    """The settings every process a test starts gets: cheap password hashing, and scoring sets of any size (the
    test tasks' sets hold a handful of items; a test of the minimum sets DYNAFORGE_MIN_SCORING_SET_SIZE itself)."""
    env = {f"DYNAFORGE_{name.upper()}": value for name, value in CHEAP_PASSWORD_HASHING.items()}
    return env | {"DYNAFORGE_MIN_SCORING_SET_SIZE": "1"}


# --------------------------------------------------------------------------- services


def service_missing(what: str, why: str) -> None:
    """Skip on a developer's machine; fail in CI, where every service must be there."""
    message = f"{what} is not reachable ({why}); start it or set its URL to run these tests"
    if IN_CI:
        pytest.fail(message + " — CI requires it")
    pytest.skip(message)


def asyncpg_url(name: str) -> str:
    """The SQLAlchemy URL of database ``name`` on :data:`PG_SERVER`."""
    return PG_SERVER.replace("postgresql://", "postgresql+asyncpg://") + f"/{name}"


async def pg_execute(*statements: str) -> None:
    """Run statements on the ``postgres`` maintenance database (CREATE/DROP DATABASE)."""
    import asyncpg

    conn = await asyncpg.connect(f"{PG_SERVER}/postgres", timeout=5)
    try:
        for sql in statements:
            await conn.execute(sql)
    finally:
        await conn.close()


def in_thread(coro_factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine on a fresh loop in another thread (the test session's loop stays untouched)."""

    async def main() -> T:
        return await coro_factory()

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, main()).result()


@contextlib.contextmanager
def database(backend: str, workdir: Path) -> Iterator[str]:
    """The URL of an empty database of ``backend`` ("sqlite" or "postgresql") for a server process to migrate;
    a PostgreSQL one is dropped afterwards. PostgreSQL missing: skip, or fail in CI."""
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{(workdir / 'e2e.db').as_posix()}"
        return
    name = f"dynaforge_e2e_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    try:
        in_thread(lambda: pg_execute(f"CREATE DATABASE {name}"))
    except Exception as exc:  # noqa: BLE001 - OSError, timeouts, asyncpg errors: all mean "no usable server"
        service_missing("PostgreSQL", f"at {PG_SERVER}: {type(exc).__name__}: {exc}")
    try:
        yield asyncpg_url(name)
    finally:
        try:
            in_thread(lambda: pg_execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        except Exception as exc:  # noqa: BLE001 - cleanup only
            print(f"could not drop database {name}: {exc}", file=sys.stderr)


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


# --------------------------------------------------------------------------- processes


def run_command(cmd: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """Run a command to completion; a non-zero exit fails the test with what it printed."""
    result = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    if result.returncode != 0:
        pytest.fail(
            f"{' '.join(cmd[:4])} ... exited with {result.returncode}\n"
            f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
        )
    return result


def cli(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``dynaforge ARGS`` as an operator would type it; fails the test when it exits non-zero."""
    return run_command([DYNAFORGE, *args], env, cwd)


def last_line(result: subprocess.CompletedProcess) -> str:
    """The last line a command printed (``dynaforge tokens create`` prints the token there)."""
    return result.stdout.strip().splitlines()[-1]


def toy_process_env(tmp: Path, database_url: str, **settings: str) -> dict[str, str]:
    """The environment of a process a test starts (``serve``, a job runner) with the toy task installed as an
    entry-point plugin (a dist-info folder in ``tmp``), on ``database_url``; ``settings`` are more DYNAFORGE_ values."""
    return plugin_process_env(tmp, database_url, {"toy": "toy_plugin:PLUGIN"}, **settings)


def plugin_process_env(tmp: Path, database_url: str, plugins: dict[str, str], **settings: str) -> dict[str, str]:
    """:func:`toy_process_env` for other test plugins of this folder: ``plugins`` maps each entry point's name (what
    ``LOAD_PLUGINS`` allows) to its object (``module:attribute``)."""
    dist = tmp / "test_plugins-0.1.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: test_plugins\nVersion: 0.1\n", encoding="utf-8")
    entries = "".join(f"{name} = {target}\n" for name, target in plugins.items())
    (dist / "entry_points.txt").write_text(f"[dynaforge]\n{entries}", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DYNAFORGE_")}
    env.update(process_settings_env())
    env.update(
        PYTHONPATH=os.pathsep.join([str(tmp), str(HERE)]),
        DYNAFORGE_DATABASE_URL=database_url,
        DYNAFORGE_LOAD_PLUGINS=",".join(plugins),
        PYTHONUNBUFFERED="1",
    )
    env.update({f"DYNAFORGE_{name.upper()}": value for name, value in settings.items()})
    return env


def toy_redis_env(tmp: Path, database_url: str, prefix: str) -> dict[str, str]:
    """:func:`toy_process_env` with inline inference and events through Redis (:data:`REDIS_URL`) under ``prefix``."""
    return toy_process_env(
        tmp, database_url, environment="test", inference="inline", events_url=REDIS_URL, events_prefix=prefix
    )


def _parent_pid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2 :].split()[1])  # the field after the state, past the command's ")"


def runner_pids() -> list[int]:
    """The processes running an evaluation job (``python -m dynaforge.services.evaluation_runner``) that descend
    from this test process, from /proc: never another test worker's."""
    me = os.getpid()
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if b"dynaforge.services.evaluation_runner" not in fh.read():
                        continue
            except OSError:
                continue
            ancestor: int | None = int(entry)
            for _ in range(64):
                ancestor = _parent_pid(ancestor) if ancestor else None
                if ancestor is None or ancestor <= 1:
                    break
                if ancestor == me:
                    pids.append(int(entry))
                    break
    return pids


def wait_healthy(proc: subprocess.Popen, base_url: str, stderr_path: Path) -> None:
    """Poll ``/healthz`` until the server answers 200; fail with its stderr if it exits or never gets there."""
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    last_error: Exception | None = None
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(base_url + "/healthz", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError) as exc:
            last_error = exc
        time.sleep(0.1)
    log = stderr_path.read_text(encoding="utf-8", errors="replace")
    state = f"exited with {proc.returncode}" if proc.poll() is not None else f"not healthy after {HEALTH_TIMEOUT_S:g}s"
    pytest.fail(f"dynaforge serve {state} (last error: {last_error})\n--- server stderr\n{log}")


def stop(proc: subprocess.Popen) -> None:
    """Terminate a child process, and kill it if it does not end within 15 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


class PrivateRedis:
    """A redis-server of a test's own on a free loopback port, stopped and started at will (nothing another test
    writes to the shared Redis can reach it: event channels, job queues, rate-limit counters)."""

    def __init__(self, tmp: Path):
        binary = shutil.which("redis-server")
        if binary is None:
            service_missing("redis-server", "the binary is not on PATH")
        self.binary = str(binary)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.tmp = tmp
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.tmp),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        for _ in range(100):
            try:
                redis.Redis.from_url(self.url, socket_connect_timeout=0.2).ping()
                return
            except Exception:  # noqa: BLE001 - still starting
                time.sleep(0.05)
        raise RuntimeError("the private redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None


@contextlib.contextmanager
def serve(env: dict[str, str], workdir: Path, name: str = "server", *args: str) -> Iterator[str]:
    """``dynaforge serve`` on a free loopback port (more command-line ``args`` after it), healthy; yields its base
    URL and stops it afterwards. Its output goes to ``workdir/NAME.out`` and ``NAME.err``."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    err = workdir / f"{name}.err"
    with open(workdir / f"{name}.out", "wb") as out, open(err, "wb") as errors:
        proc = subprocess.Popen(
            [DYNAFORGE, "serve", "--host", "127.0.0.1", "--port", str(port), *args],
            env=env,
            cwd=workdir,
            stdout=out,
            stderr=errors,
        )
    try:
        wait_healthy(proc, base, err)
        yield base
    finally:
        stop(proc)


# --------------------------------------------------------------------------- in-process servers


def free_port() -> int:
    """A loopback TCP port that was free a moment ago (for a child process that must be told its port)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _bound_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextlib.asynccontextmanager
async def serve_in_loop(app: Any, log_level: str = "warning") -> AsyncIterator[str]:
    """Run an ASGI ``app`` with uvicorn on the test's own event loop, on a loopback socket bound beforehand (no port
    race); yields its base URL once it accepts connections."""
    import uvicorn

    sock = _bound_socket()
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, lifespan="off", timeout_graceful_shutdown=2))
    running = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await eventually(lambda: server.started or running.done(), within=10, what="the test server starts")
        if running.done():
            running.result()  # raises what stopped it
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(running, 10)
        sock.close()


@contextlib.contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """Run an ASGI ``app`` with uvicorn in a thread (for code under test that blocks); yields its base URL."""
    import uvicorn

    sock = _bound_socket()
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), within=10, what="the test server starts")
    assert thread.is_alive(), "the test server stopped while starting"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()


# --------------------------------------------------------------------------- waiting


async def eventually(
    check: Callable[[], Any], within: float = 10.0, every: float = 0.02, what: str = "the condition holds"
) -> Any:
    """Poll ``check`` (a function or a coroutine function) until it returns a true value, and return that value.

    An exception it raises counts as "not yet" until ``within`` seconds have passed; then the last exception is
    raised again, or an AssertionError names ``what`` did not happen.
    """
    deadline = time.monotonic() + within
    while True:
        try:
            value = check()
            if asyncio.iscoroutine(value):
                value = await value
            if value:
                return value
            failure: BaseException | None = None
        except Exception as exc:  # noqa: BLE001 - "not yet"; raised again at the deadline
            failure = exc
        if time.monotonic() > deadline:
            if failure is not None:
                raise failure
            raise AssertionError(f"waited {within:g}s for {what}")
        await asyncio.sleep(every)


def wait_until(predicate: Callable[[], Any], within: float = 10.0, every: float = 0.02, what: str = "it") -> Any:
    """The blocking form of :func:`eventually`, for code outside the event loop."""
    deadline = time.monotonic() + within
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {within:g}s for {what}")
        time.sleep(every)


# --------------------------------------------------------------------------- the platform


async def make_user(p: Any, name: str = "alice", admin: bool = False) -> Any:
    """A user made through the service layer, as the Actor the services take."""
    from dynaforge.services import auth
    from dynaforge.services.actor import Actor

    user = await auth.create_user(
        p, Actor.system(), username=name, email=f"{name}@example.org", password="long enough pw", is_admin=admin
    )
    return Actor(user.id, user.username, user.is_admin)


async def current_round(p: Any, code: str = "toy") -> Any:
    """The stored current round of task ``code``."""
    from dynaforge.services import tasks
    from dynaforge.services.actor import Actor

    view = await tasks.get_task(p, Actor.anonymous(), code)
    return await tasks.get_round(p, view.row.id)


def make_settings(db_url: str, **overrides: Any) -> Any:
    """Settings for a test platform on ``db_url``: no entry-point plugins, test environment."""
    from dynaforge.settings import Settings

    # Tests submit models with the python backend (test doubles given by import path) as plain users.
    overrides.setdefault("submission_backends", "http,transformers,python")
    # Not the checkout's web/dist, whether or not it is built: tests/test_web.py gives its own build.
    overrides.setdefault("web_dir", Path(__file__).parent / "no-web-build")
    for name, value in CHEAP_PASSWORD_HASHING.items():
        overrides.setdefault(name, int(value))
    # The toy task's scoring sets hold a handful of items; tests of the minimum set their own.
    overrides.setdefault("min_scoring_set_size", 1)
    return Settings(database_url=db_url, environment="test", load_plugins="", **overrides)


class GraphQLClient:
    """Posts GraphQL to an app through an httpx client; remembers a bearer token."""

    def __init__(self, http: Any):
        self.http = http
        self.token: str | None = None

    async def __call__(self, query: str, variables: dict | None = None, token: Any = ..., expect_errors=False):
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


REGISTER_USER = """
mutation($u: String!, $e: String!, $p: String!) {
  register(input: {username: $u, email: $e, password: $p}) {
    __typename
    ... on AuthPayload { token user { id username } }
    ... on Error { message }
    ... on InvalidInput { fieldErrors { field rule message } }
  }
}"""


async def register_user(gql: GraphQLClient, username: str = "alice") -> tuple[str, str]:
    """Register ``username`` through the API; returns (token, user id)."""
    data = await gql(
        REGISTER_USER, {"u": username, "e": f"{username}@example.org", "p": "correct horse battery"}, token=None
    )
    payload = data["register"]
    assert payload["__typename"] == "AuthPayload", payload
    return payload["token"], payload["user"]["id"]


# --------------------------------------------------------------------------- the real server, over HTTP


@dataclass(frozen=True)
class Server:
    backend: str
    base_url: str
    database_url: str
    env: dict[str, str]
    workdir: Path

    @property
    def graphql_url(self) -> str:
        return self.base_url + "/graphql"


E2E_PLUGIN_SOURCE = HERE / "e2e_plugin" / "e2e_spans"


def write_e2e_plugin(folder: Path) -> None:
    """The test plugin ``e2e_spans`` (task ``e2e-spans``) plus the dist-info that makes importlib.metadata list its
    entry point, so that a server started with ``PYTHONPATH=folder`` discovers it without pip."""
    shutil.copytree(E2E_PLUGIN_SOURCE, folder / "e2e_spans", ignore=shutil.ignore_patterns("__pycache__"))
    dist_info = folder / "e2e_spans-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: e2e_spans\nVersion: 0.1\n", encoding="utf-8")
    (dist_info / "entry_points.txt").write_text("[dynaforge]\ne2e_spans = e2e_spans\n", encoding="utf-8")


def e2e_environment(plugin_dir: Path) -> dict[str, str]:
    """The environment of a real server with every installed plugin and the plugins in ``plugin_dir``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DYNAFORGE_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(plugin_dir), os.environ.get("PYTHONPATH", "")) if p)
    env["DYNAFORGE_ENVIRONMENT"] = "test"
    env.update(process_settings_env())
    env["DYNAFORGE_INFERENCE_TIMEOUT_S"] = "60"  # 2 slow CPUs: never let the model's first load make an example pending
    env["HF_HUB_OFFLINE"] = "1"
    env["TRANSFORMERS_OFFLINE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def create_operator(env: dict[str, str], workdir: Path, database_url: str) -> str:
    """An admin ``operator`` made with the CLI, as a real operator would; returns an API token of theirs."""
    cli(
        env,
        workdir,
        "users",
        "create",
        "--username",
        "operator",
        "--email",
        "operator@example.org",
        "--password",
        "operator password",
        "--admin",
        "--database-url",
        database_url,
    )
    return last_line(cli(env, workdir, "tokens", "create", "--username", "operator", "--database-url", database_url))


@contextlib.contextmanager
def operator_server(kind: str, workdir: Path, env: dict[str, str]) -> Iterator[tuple[Server, str]]:
    """A migrated database of ``kind`` with an admin ``operator`` (made with the CLI) and a running ``serve``;
    yields the server and the operator's token."""
    with database(kind, workdir) as database_url:
        cli(env, workdir, "db", "upgrade", "--database-url", database_url)
        token = create_operator(env, workdir, database_url)
        with serve(env, workdir, "server", "--database-url", database_url) as base_url:
            yield Server(kind, base_url, database_url, env, workdir), token


@contextlib.asynccontextmanager
async def session(server: Server, token: str | None = None) -> AsyncIterator[Any]:
    """A gql session over HTTP, signed in with ``token`` when one is given."""
    from gql import Client
    from gql.transport.aiohttp import AIOHTTPTransport

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = AIOHTTPTransport(url=server.graphql_url, headers=headers, timeout=REQUEST_TIMEOUT_S)
    async with Client(transport=transport, execute_timeout=REQUEST_TIMEOUT_S) as s:
        yield s


async def run(s: Any, query: str, **variables: Any) -> dict[str, Any]:
    """Execute ``query`` in a gql session with keyword variables."""
    from gql.graphql_request import GraphQLRequest

    return await s.execute(GraphQLRequest(query, variable_values=variables or None))


ERROR_FIELDS = """
    ... on Error { message }
    ... on InvalidInput { fieldErrors { field rule message } }
"""

REGISTER = (
    """mutation Register($input: RegisterInput!) {
  register(input: $input) { __typename ... on AuthPayload { token user { id username } } """
    + ERROR_FIELDS
    + "} }"
)


async def post_graphql(http: Any, token: str | None, query: str, **variables: Any) -> dict[str, Any]:
    """``query`` over HTTP (an ``httpx.AsyncClient`` on the server's base URL), signed in with ``token`` when one is
    given: its ``data``, after asserting that it has no errors."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = (await http.post("/graphql", json={"query": query, "variables": variables}, headers=headers)).json()
    assert not body.get("errors"), body
    return body["data"]


async def new_account(http: Any, name: str) -> str:
    """Registers ``name`` over HTTP (as :func:`post_graphql` does); its token."""
    account = {"username": name, "email": f"{name}@example.org", "password": "a long enough password"}
    answer = (await post_graphql(http, None, REGISTER, input=account))["register"]
    assert answer["__typename"] == "AuthPayload", answer
    return answer["token"]


async def register(server: Server, prefix: str = "e2e") -> tuple[str, dict[str, Any]]:
    """A fresh account (each test gets its own, so per-user counts and rate limits do not interfere)."""
    username = f"{prefix}_{uuid.uuid4().hex[:10]}"
    account = {"username": username, "email": f"{username}@example.org", "password": "correct-horse-e2e"}
    async with session(server) as s:
        result = (await run(s, REGISTER, input=account))["register"]
    assert result["__typename"] == "AuthPayload", result
    assert result["user"]["username"] == username
    assert result["token"].startswith("dfk_")
    return result["token"], result["user"]


def gid(type_name: str, key: int | str) -> str:
    """The global id the API gives the ``type_name`` object whose key is ``key`` (for rows a test made itself)."""
    from dynaforge.api.node import global_id

    return str(global_id(type_name, key))


def by_name(items: list[dict[str, Any]], value: str = "value") -> dict[str, Any]:
    """A list of named entries as the API returns them (metrics ``{name value}``, weights ``{name weight}``) as a
    dict name -> ``value``: what the JSON dicts of earlier contracts held, without depending on the list's order."""
    return {item["name"]: item[value] for item in items}
