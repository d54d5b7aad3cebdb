"""pytest support for task plugins: the conformance checks (:mod:`dynaforge.conformance`) as tests in the plugin's
own suite, one test per task and check, each failing with every problem it found.

.. code-block:: python

    from dynaforge.testing import parametrize_with_checks


    @parametrize_with_checks(["formality"])
    def test_formality_conforms(check):
        check()

The tasks must be installed (their entry point in ``dynaforge.plugins``), or their plugin module named with
``plugins=["dynaforge_formality.plugin"]``. This module is also a pytest plugin, loaded wherever Dynaforge is
installed: ``pytest --dynaforge-skip-models`` skips the checks that load and run models (the default target models,
a data selection recipe).

For end-to-end tests, :func:`live_server` runs a real ``dynaforge serve`` with your plugin, set up as an operator
sets one up (the ``dynaforge`` command: ``db upgrade``, ``users create``, ``tokens create``), on SQLite or on a
PostgreSQL database made for the test and dropped after it:

.. code-block:: python

    @pytest.fixture(params=["sqlite", "postgresql"])
    def server(request, tmp_path):
        with live_server(tmp_path, request.param, load_plugins="formality") as srv:
            srv.user("operator", admin=True)
            srv.user("annotator")
            srv.start()
            yield srv


    def test_annotators_write_examples(server):
        data = server.gql("annotator", '{ task(code: "formality") { name } }')
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from dynaforge import conformance
from dynaforge.plugins import Plugins

__all__ = [
    "ConformanceCheck",
    "LiveServer",
    "TaskConformanceError",
    "free_port",
    "live_server",
    "parametrize_with_checks",
    "service_missing",
]

F = TypeVar("F", bound=Callable[..., Any])
_SKIP_MODELS = False


class TaskConformanceError(AssertionError):
    """A conformance check found problems: the message lists every one."""


@cache
def _plugins(modules: tuple[str, ...]) -> Plugins:
    """One plugin manager per set of extra plugin modules, shared by the session's checks."""
    return Plugins(extra=[importlib.import_module(m) for m in modules])


@dataclass(frozen=True)
class ConformanceCheck:
    """One check on one task; calling it runs the check and raises :class:`TaskConformanceError` on problems."""

    task: str
    check: str
    plugins: tuple[str, ...] = ()

    def __call__(self) -> None:
        if _SKIP_MODELS and any(c.needs_models for c in conformance.CHECKS if c.name == self.check):
            pytest.skip("--dynaforge-skip-models")
        plugins = _plugins(self.plugins)
        if self.task not in plugins.registry.tasks:
            broken = "".join(f"\nplugin {name} is broken: {error}" for name, error in plugins.errors.items())
            raise TaskConformanceError(f"no task {self.task!r} is installed{broken}")
        [result] = conformance.run_checks_sync(plugins, [self.task], checks=[self.check])
        if result.skipped:
            pytest.skip(result.skipped)
        if result.problems:
            lines = "\n".join(f"  - {p}" for p in result.problems)
            raise TaskConformanceError(f"task {self.task}, check {self.check}:\n{lines}")

    def __str__(self) -> str:
        return f"{self.task}-{self.check}"


def parametrize_with_checks(tasks: Iterable[str], *, plugins: Sequence[str] = ()) -> Callable[[F], F]:
    """Parametrize a test with one :class:`ConformanceCheck` per task and check, as the argument ``check``; test
    ids read ``TASK-CHECK``. ``plugins``: plugin modules to load besides the installed entry points."""
    checks = [ConformanceCheck(task, c.name, tuple(plugins)) for task in tasks for c in conformance.CHECKS]
    return pytest.mark.parametrize("check", checks, ids=str)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dynaforge")
    group.addoption(
        "--dynaforge-skip-models",
        action="store_true",
        default=False,
        help="Dynaforge conformance checks: skip those that load and run models (default targets, selection recipes).",
    )


def pytest_configure(config: pytest.Config) -> None:
    global _SKIP_MODELS
    _SKIP_MODELS = bool(config.getoption("--dynaforge-skip-models", default=False))


# ---------------------------------------------------------------- a real server for end-to-end tests

#: The password :meth:`LiveServer.user` gives every account.
PASSWORD = "correct horse battery"


def service_missing(what: str) -> None:
    """Skip the test on a developer's machine; fail it in CI (``CI=true``), where every service must be there."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is not available; CI must provide it", pytrace=False)
    pytest.skip(f"{what} is not available")


def free_port() -> int:
    """A free TCP port on loopback (for a server the test starts)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiveServer:
    """A ``dynaforge serve`` (and any helper process, such as a ``dynaforge model-server``) for one test, with the
    ``dynaforge`` command to set it up and GraphQL calls to it as a given user. Made by :func:`live_server`."""

    def __init__(self, workdir: Path, database_url: str, env: dict[str, str]):
        self.workdir, self.database_url, self.env = workdir, database_url, env
        self.tokens: dict[str, str] = {}
        self.processes: list[subprocess.Popen] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.dynaforge = shutil.which("dynaforge", path=str(Path(sys.executable).parent)) or "dynaforge"

    def command(self, *args: str) -> str:
        """Run ``dynaforge ARGS --database-url URL`` against the server's database; its output (fails on an error)."""
        done = subprocess.run(
            [self.dynaforge, "--log-level", "WARNING", *args, "--database-url", self.database_url],
            env=self.env, cwd=self.workdir, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, f"dynaforge {' '.join(args[:2])}: {done.stdout}{done.stderr}"
        return done.stdout

    def user(self, name: str, *, admin: bool = False) -> str:
        """An account ``name`` (password :data:`PASSWORD`) and an API token for it, kept for :meth:`gql`."""
        flags = ["--admin"] if admin else []
        self.command("users", "create", "--username", name, "--email", f"{name}@example.org", "--password", PASSWORD,
                     *flags)  # fmt: skip
        self.tokens[name] = self.command("tokens", "create", "--username", name).strip().splitlines()[-1]
        return self.tokens[name]

    def spawn(self, args: list[str], name: str, health: str, timeout_s: float = 120.0) -> subprocess.Popen:
        """Start a process (its output in ``WORKDIR/NAME.log``) and wait until ``health`` answers 200; stopped with
        the server."""
        log = self.workdir / f"{name}.log"
        out = open(log, "ab")  # noqa: SIM115 - the child keeps it
        process = subprocess.Popen(args, env=self.env, cwd=self.workdir, stdout=out, stderr=out)
        self.processes.append(process)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx.get(health, timeout=2).status_code == 200:
                    return process
            except httpx.HTTPError:
                time.sleep(0.2)
        pytest.fail(f"{name} did not answer at {health}\n{log.read_text(errors='replace')[-3000:]}")

    def start(self) -> None:
        """``dynaforge serve`` on a free loopback port (:attr:`url`), once it is healthy."""
        self.spawn([self.dynaforge, "serve", "--port", str(self.port), "--database-url", self.database_url],
                   "server", self.url + "/healthz")  # fmt: skip

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        self.processes.clear()

    def gql(self, who: str | None, query: str, **variables: Any) -> dict[str, Any]:
        """The data of a GraphQL request as ``who`` (a user made by :meth:`user`; None: anonymous); fails the test
        on GraphQL errors (expected failures come back as data, in the result unions)."""
        headers = {"Authorization": f"Bearer {self.tokens[who]}"} if who is not None else {}
        response = httpx.post(self.url + "/graphql", json={"query": query, "variables": variables}, headers=headers,
                              timeout=120)  # fmt: skip
        body = response.json()
        assert response.status_code == 200 and "errors" not in body, body
        return dict(body["data"])


@contextlib.contextmanager
def _postgres_database(server: str) -> Iterator[str]:
    import asyncpg  # type: ignore[import-untyped]

    name = f"dynaforge_test_{uuid.uuid4().hex[:12]}"

    async def execute(sql: str) -> None:
        connection = await asyncpg.connect(server + "/postgres", timeout=5)
        try:
            await connection.execute(sql)
        finally:
            await connection.close()

    try:
        asyncio.run(execute(f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError) as exc:
        service_missing(f"PostgreSQL at {server} ({exc})")
    try:
        yield server.replace("postgresql://", "postgresql+asyncpg://") + f"/{name}"
    finally:
        asyncio.run(execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextlib.contextmanager
def live_server(
    workdir: Path, backend: str = "sqlite", *, load_plugins: str | None = None, **settings: str
) -> Iterator[LiveServer]:
    """A migrated database (``backend``: ``sqlite``, or ``postgresql`` on ``DYNAFORGE_TEST_POSTGRES``, default
    ``postgresql://postgres@127.0.0.1:5432``, skipped where it is missing unless ``CI=true``) and a
    :class:`LiveServer` over it, not started yet. ``load_plugins`` sets ``DYNAFORGE_LOAD_PLUGINS`` (your plugin alone,
    whatever else is installed); other keyword arguments set ``DYNAFORGE_<NAME>`` (``outbound_allow="127.0.0.1"``
    for a model server of the test's own). The test environment's cheap password hashing is used. Its processes are
    stopped, and a PostgreSQL database dropped, at the end."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DYNAFORGE_")}
    env.update(
        DYNAFORGE_ENVIRONMENT="test",
        DYNAFORGE_DATA_DIR=str(workdir / "data"),
        DYNAFORGE_PASSWORD_HASH_TIME_COST="1",
        DYNAFORGE_PASSWORD_HASH_MEMORY_KIB="64",
        PYTHONUNBUFFERED="1",
        HF_HUB_OFFLINE="1",
    )
    if load_plugins is not None:
        env["DYNAFORGE_LOAD_PLUGINS"] = load_plugins
    env.update({f"DYNAFORGE_{name.upper()}": value for name, value in settings.items()})
    with contextlib.ExitStack() as stack:
        if backend == "sqlite":
            database_url = f"sqlite+aiosqlite:///{(workdir / 'dynaforge.db').as_posix()}"
        elif backend == "postgresql":
            postgres = os.environ.get("DYNAFORGE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432")
            database_url = stack.enter_context(_postgres_database(postgres.replace("+asyncpg", "")))
        else:
            raise ValueError(f"backend must be sqlite or postgresql, not {backend!r}")
        server = LiveServer(workdir, database_url, env)
        stack.callback(server.stop)
        server.command("db", "upgrade")
        yield server
