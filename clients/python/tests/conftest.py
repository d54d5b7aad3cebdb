"""A real ``dynaforge serve`` for the client's tests, on SQLite and on PostgreSQL.

The tests run in a virtualenv that has only the client installed (``make client-test`` makes it). The server is the
one this repository builds: ``DYNAFORGE_SERVER_BIN`` (default: the repository's ``.venv/bin/dynaforge``), set up the
way an operator sets one up: ``db upgrade``, an admin made with ``users create``, a token from ``tokens create``, a
scoring data set of the sentiment task from ``datasets import``. Without that server (or PostgreSQL) the tests skip
with the reason; with ``CI=true`` they fail instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SERVER_BIN = Path(os.environ.get("DYNAFORGE_SERVER_BIN", REPO / ".venv" / "bin" / "dynaforge"))
SERVER_PYTHON = SERVER_BIN.parent / "python"
PG_SERVER = os.environ.get("DYNAFORGE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432").replace(
    "postgresql+asyncpg://", "postgresql://"
)
OPERATOR_PASSWORD = "operator password"
# The sentiment task's scoring set for these tests: sentences written for them, SST-2-style (0 negative, 1 positive)
SCORING_ROWS = [
    ("The film was a delight from the first scene to the last.", 1),
    ("A warm, funny and generous story that stays with you.", 1),
    ("The actors clearly had a great time, and so did I.", 1),
    ("Every song in it is a small joy.", 1),
    ("A clever script and a director who trusts the audience.", 1),
    ("I left the theatre smiling and told all my friends.", 1),
    ("The plot is a mess and the jokes never land.", 0),
    ("Two hours of my life I will not get back.", 0),
    ("Dull, slow and far too pleased with itself.", 0),
    ("The dialogue is so wooden it creaks.", 0),
    ("Nothing happens, and it happens very slowly.", 0),
    ("A tired sequel that forgets what made the first one work.", 0),
]


def service_missing(what: str, why: str) -> None:
    """Skip on a developer's machine; fail in CI, where every service must be there."""
    message = f"{what} is not available ({why})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; CI must provide it", pytrace=False)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DYNAFORGE_")}
    env.update(
        DYNAFORGE_ENVIRONMENT="test",
        DYNAFORGE_DATA_DIR=str(data_dir),
        # an account per test: the lowest password hashing cost, and no registration limit
        DYNAFORGE_PASSWORD_HASH_TIME_COST="1",
        DYNAFORGE_PASSWORD_HASH_MEMORY_KIB="64",
        DYNAFORGE_REGISTRATIONS_PER_HOUR_PER_CLIENT="0",  # no limit: the tests sign their users up from loopback
        DYNAFORGE_INFERENCE_TIMEOUT_S="60",
        DYNAFORGE_OUTBOUND_ALLOW="127.0.0.0/8",  # the generative tests' fake engine runs on loopback
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS="1",
    )
    return env


def run(cmd: list[str], env: dict[str, str], cwd: Path) -> str:
    result = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd[:4]))} exited with {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result.stdout


@dataclass
class Server:
    """A running server: its base URL, an admin's token, and what the tests need from its setup."""

    backend: str
    url: str
    token: str
    database_url: str
    workdir: Path
    env: dict[str, str]
    model_folder: Path
    process: subprocess.Popen | None = None
    port: int = 0
    users: list[str] = field(default_factory=list)

    def start(self) -> None:
        err = open(self.workdir / "server.err", "ab")  # noqa: SIM115 - the child keeps it
        self.process = subprocess.Popen(
            [str(SERVER_BIN), "serve", "--host", "127.0.0.1", "--port", str(self.port), "--database-url",
             self.database_url],
            env=self.env, cwd=self.workdir, stdout=err, stderr=err,
        )  # fmt: skip
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        log = (self.workdir / "server.err").read_text(errors="replace")[-4000:]
        pytest.fail(f"dynaforge serve did not become healthy\n{log}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None


@contextlib.contextmanager
def _database(backend: str, workdir: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{(workdir / 'client-tests.db').as_posix()}"
        return
    name = f"dynaforge_client_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    created = subprocess.run(
        [str(SERVER_PYTHON), str(HERE / "server_side.py"), "create-db", name], capture_output=True, text=True
    )
    if created.returncode != 0:
        service_missing("PostgreSQL", f"at {PG_SERVER}: {created.stderr.strip().splitlines()[-1:]}")
    try:
        yield PG_SERVER.replace("postgresql://", "postgresql+asyncpg://") + f"/{name}"
    finally:
        subprocess.run([str(SERVER_PYTHON), str(HERE / "server_side.py"), "drop-db", name], capture_output=True)


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def server(request, tmp_path_factory) -> Iterator[Server]:
    """A migrated server with an admin (``operator``), a SCORING set ``client-test`` of the sentiment task and a
    tiny sentiment model folder, running until the session ends."""
    if not SERVER_BIN.is_file():
        service_missing("the Dynaforge server", f"no {SERVER_BIN}: run `make setup` at the repository root")
    backend = request.param
    workdir = tmp_path_factory.mktemp(f"server-{backend}")
    env = server_env(workdir / "data")
    with _database(backend, workdir) as database_url:
        dynaforge = [str(SERVER_BIN)]
        run([*dynaforge, "db", "upgrade", "--database-url", database_url], env, workdir)
        run([*dynaforge, "users", "create", "--username", "operator", "--email", "operator@example.org",
             "--password", OPERATOR_PASSWORD, "--admin", "--database-url", database_url], env, workdir)  # fmt: skip
        token = run([*dynaforge, "tokens", "create", "--username", "operator", "--database-url", database_url],
                    env, workdir).strip().splitlines()[-1]  # fmt: skip
        tsv = workdir / "scoring.tsv"
        tsv.write_text("sentence\tlabel\n" + "".join(f"{s}\t{label}\n" for s, label in SCORING_ROWS))
        run([*dynaforge, "datasets", "import", str(tsv), "--task", "sentiment", "--format", "sst", "--name",
             "client-test", "--database-url", database_url], env, workdir)  # fmt: skip
        model_folder = workdir / "my-sentiment-model"
        run([str(SERVER_PYTHON), str(HERE / "server_side.py"), "tiny-model", str(model_folder)], env, workdir)
        port = free_port()
        srv = Server(backend, f"http://127.0.0.1:{port}", token, database_url, workdir, env, model_folder, port=port)
        srv.start()
        try:
            yield srv
        finally:
            srv.stop()


@pytest.fixture
def unique() -> str:
    """A short unique suffix for usernames and model names."""
    return uuid.uuid4().hex[:8]


class CuttableProxy:
    """A TCP proxy on loopback in front of the server whose connections the test can cut: :meth:`cut` closes
    every open connection and refuses new ones until :meth:`restore`."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self.port = 0
        self.down = False
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.down:
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self._writers.update((writer, up_writer))
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            self._writers.difference_update((writer, up_writer))

    def cut(self) -> None:
        self.down = True
        for writer in list(self._writers):
            writer.close()

    def restore(self) -> None:
        self.down = False

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


@pytest.fixture
async def proxy(server) -> CuttableProxy:
    p = CuttableProxy(server.port)
    await p.start()
    yield p
    await p.close()


def client_cli() -> str:
    """The ``dynaforge-client`` command of the virtualenv running the tests."""
    found = shutil.which("dynaforge-client", path=str(Path(sys.executable).parent))
    assert found, "dynaforge-client is not installed in this virtualenv"
    return found
