"""What every benchmark shares: the server under test, the GraphQL client, load loops, statistics, process probes.

The system under test is ``dynaforge serve`` as a real subprocess on loopback, over a throwaway SQLite database in a
temporary folder, with its model worker (the sentiment plugin's MiniLM model) and the per-user rate limit raised so
that it never throttles a benchmark. The benchmark process talks to it with ``httpx.AsyncClient`` (HTTP/1.1
keep-alive), as annotators' browsers would.

Process probes read ``/proc`` (the benchmarks target Linux): resident memory, CPU time, and whether a process has
torch's shared libraries mapped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

SERVER_START_TIMEOUT_S = 90.0
MODEL_READY_TIMEOUT_S = 240.0
CLI_TIMEOUT_S = 120.0
REQUEST_TIMEOUT_S = 60.0
TASK = "sentiment"
MAX_ANNOTATORS = 32  # accounts registered at start-up (P3's crowd is the largest)
ADMIN = "bench-admin"

# Written for these benchmarks: 6 to 30 words, varied wording and length, with the label a careful reader would give.
STATEMENTS: tuple[tuple[str, str], ...] = (
    ("The new bakery on the corner makes bread worth waking up early for.", "positive"),
    ("My umbrella broke on the first windy day.", "negative"),
    ("The meeting moved from Tuesday to Thursday afternoon.", "neutral"),
    ("I expected a dull lecture, yet the speaker kept the whole hall laughing and curious for two hours.", "positive"),
    ("The hotel room smelled of smoke, the shower was cold, and nobody at the desk seemed to care at all.", "negative"),
    ("Honestly, the sequel is better than the original in every way I can think of.", "positive"),
    ("The parcel arrived crushed and two of the plates inside were cracked.", "negative"),
    ("The library opens at nine on weekdays.", "neutral"),
    ("Not bad at all for a phone that costs less than a dinner out.", "positive"),
    ("I would not call the service slow; glacial is the word I was looking for.", "negative"),
    ("The garden survived the frost and the roses came back stronger than ever this spring.", "positive"),
    ("Three hours of waiting at the airport, and then the flight was cancelled without any explanation.", "negative"),
    ("The report lists the quarterly figures for each regional office in a single table.", "neutral"),
    ("What a lovely surprise to find the old cafe still serving the same cinnamon rolls.", "positive"),
    ("The plot twists felt cheap and the ending made the first hour pointless.", "negative"),
    ("She painted the fence blue over the weekend.", "neutral"),
    ("Every song on the album grows on you, and by the third listen I was humming along.", "positive"),
    ("The instructions were so confusing that assembling the shelf took an entire miserable evening.", "negative"),
    ("Our train was on time, the seats were comfortable, and the view along the coast was stunning.", "positive"),
    ("I regret buying these headphones; the left side crackles whenever I move my head.", "negative"),
    ("The museum has moved its sculpture collection to the second floor.", "neutral"),
    ("The kids could not stop talking about the puppet show for days afterwards.", "positive"),
    ("The soup tasted mostly of salt, and the bread was stale.", "negative"),
    (
        "A quiet, thoughtful film that trusts its audience and rewards patience with a truly moving final scene.",
        "positive",
    ),
    ("The update deleted my saved settings and now the app crashes every time it starts.", "negative"),
    ("The recipe calls for two eggs, flour, and a pinch of salt.", "neutral"),
    ("Great, another Monday where the coffee machine is broken.", "negative"),
    ("The nurse was patient and kind, and explained everything twice without once making me feel rushed.", "positive"),
    ("Despite the rave reviews, the restaurant served the blandest curry I have eaten in years.", "negative"),
    ("The bus now stops at the station every twenty minutes.", "neutral"),
    ("I finally finished the marathon, and crossing the line felt better than I had ever imagined.", "positive"),
    ("The laptop runs hot, the fan is loud, and the battery barely lasts a morning.", "negative"),
    ("The committee will publish its decision next month after reviewing all the applications it received.", "neutral"),
    ("The hike was steep, but the lake at the top made every step worthwhile.", "positive"),
    ("Customer support hung up on me twice and never called back as promised.", "negative"),
    (
        "It is not the worst book I have read, but I would never recommend it to a friend who values their time.",
        "negative",
    ),
    ("The festival brought the whole town together, with music in every square until midnight.", "positive"),
    ("The printer jams on every other page.", "negative"),
    ("The store changed its opening hours for the holidays.", "neutral"),
    ("Our neighbours threw a surprise party for my grandmother, and she danced until the very last song.", "positive"),
)


# --------------------------------------------------------------------------- results and statistics


@dataclass
class Result:
    """One printed line: the target's id, its figures, the target, and PASS or FAIL last."""

    id: str
    figures: str
    target: str
    passed: bool
    info: bool = False  # an informational figure without a target: prints INFO and never fails the run

    def line(self) -> str:
        verdict = "INFO" if self.info else "PASS" if self.passed else "FAIL"
        return f"{self.id} {self.figures} | target: {self.target} | {verdict}"


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between closest ranks; NaN when there is no value."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def ms(ns: int) -> float:
    return ns / 1e6


# --------------------------------------------------------------------------- the machine and its processes


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def bare_model(ctx: Context):
    """The model the worker serves (the sentiment plugin's ``load()``), loaded once in this process.

    It predicts on the calling thread with the worker's torch thread count; call it from the event loop's thread
    only (under OpenMP, torch's thread setting belongs to the thread that made it).
    """
    if ctx.model is None:
        import torch

        from dynaforge_sentiment.model import load

        torch.set_num_threads(ctx.threads)
        ctx.model = load()
    return ctx.model


def default_threads() -> int:
    """The model worker's default torch thread count: the cores less one (one is left to the API process)."""
    return max(1, (os.cpu_count() or 2) - 1)


def machine_header(threads: int) -> str:
    import torch

    cores = os.cpu_count() or 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    return (
        f"# machine: {cores} cores ({usable} usable), {cpu_model()}; torch {torch.__version__} with {threads} "
        f"intra-op threads (worker and bare model); Python {platform.python_version()}; load average {load}"
    )


def proc_status_kb(pid: int, key: str) -> int:
    """A ``kB`` field of ``/proc/<pid>/status`` (VmRSS: resident now, VmHWM: resident peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(f"{key} not in /proc/{pid}/status")


def reset_peak_rss(pid: int) -> bool:
    """Reset the process's peak resident set (VmHWM) to its current RSS (Linux >= 4.0); False when not allowed."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def maps_torch(pid: int) -> bool:
    """Whether the process has any of torch's files mapped (libtorch*.so, torch/_C*.so): torch was imported."""
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        if "libtorch" in line or "/site-packages/torch/" in line:
            return True
    return False


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (threads included), from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU used by the API process, the model worker and this benchmark process over a stretch of wall time.

    ``seconds`` holds each process's CPU seconds, ``used`` its share of one core (1.0 = a whole core).
    """

    def __init__(self, api_pid: int, worker_pid: int | None):
        self.pids = {"api": api_pid, "worker": worker_pid, "bench": os.getpid()}
        self.seconds: dict[str, float] = {}
        self.used: dict[str, float] = {}

    def __enter__(self) -> CpuMeter:
        self._start = {name: cpu_seconds(pid) for name, pid in self.pids.items() if pid}
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *_: object) -> None:
        wall = time.perf_counter() - self._wall
        self.seconds = {name: cpu_seconds(self.pids[name]) - start for name, start in self._start.items()}
        self.used = {name: spent / wall for name, spent in self.seconds.items()}


def mean_shares(meters: list[CpuMeter]) -> str:
    """Each process's mean share of a core over several measured stretches, e.g. 'api 85% worker 60% bench 12%'."""
    names = meters[0].used
    return " ".join(f"{name} {sum(m.used[name] for m in meters) / len(meters):.0%}" for name in names)


# --------------------------------------------------------------------------- the server under test


def _dynaforge() -> str:
    beside = Path(sys.executable).parent / "dynaforge"
    return str(beside) if beside.exists() else (shutil.which("dynaforge") or "dynaforge")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_environment(threads: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DYNAFORGE_")}
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONUNBUFFERED="1",
        DYNAFORGE_ENVIRONMENT="test",
        DYNAFORGE_EXAMPLES_PER_MINUTE="1000000",  # the per-user limit would otherwise throttle the load
        DYNAFORGE_REGISTRATIONS_PER_HOUR_PER_CLIENT="0",  # every annotator registers from this one address
        DYNAFORGE_LOAD_PLUGINS=TASK,
        DYNAFORGE_MODEL_THREADS=str(threads),
        DYNAFORGE_OUTBOUND_ALLOW="127.0.0.0/8",  # benchmarks serve their own engines on loopback (G2)
    )
    return env


@dataclass
class Server:
    """A running ``dynaforge serve`` and what the benchmarks need to drive it."""

    base_url: str
    pid: int
    admin_token: str
    workdir: Path
    annotator_tokens: list[str] = field(default_factory=list)
    database_url: str = ""

    @property
    def database(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return "postgresql" if self.database_url.startswith("postgresql") else "sqlite"

    @property
    def graphql_url(self) -> str:
        return self.base_url + "/graphql"

    @property
    def database_path(self) -> Path:
        """The server's SQLite file (benchmarks that seed their own data write to it directly)."""
        return self.workdir / "bench.db"

    def health(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.base_url + "/healthz", timeout=10) as response:
            return json.load(response)

    def worker_pid(self) -> int | None:
        return self.health().get("inference", {}).get("pid")

    def log_tail(self, lines: int = 30) -> str:
        text = (self.workdir / "server.err").read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])


def _cli(env: dict[str, str], cwd: Path, *args: str) -> str:
    result = subprocess.run(
        [_dynaforge(), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=CLI_TIMEOUT_S
    )
    if result.returncode != 0:
        raise RuntimeError(f"dynaforge {' '.join(args[:2])} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return result.stdout


def _wait_healthy(proc: subprocess.Popen, base_url: str, err_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        with (
            contextlib.suppress(urllib.error.URLError, OSError),
            urllib.request.urlopen(base_url + "/healthz", timeout=2) as response,
        ):
            if response.status == 200:
                return
        time.sleep(0.2)
    log = err_path.read_text(encoding="utf-8", errors="replace")[-3000:]
    state = f"exited with {proc.returncode}" if proc.poll() is not None else "is not healthy"
    raise RuntimeError(f"dynaforge serve {state} after {SERVER_START_TIMEOUT_S:g}s:\n{log}")


POSTGRES_SERVER = os.environ.get("BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432")


@contextlib.asynccontextmanager
async def postgres_database() -> AsyncIterator[str]:
    """A throwaway PostgreSQL database on ``BENCH_POSTGRES`` (default: the local server, user postgres); yields
    its SQLAlchemy async URL and drops it afterwards."""
    import asyncpg

    name = f"dynaforge_bench_{os.getpid()}_{os.urandom(3).hex()}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(POSTGRES_SERVER + "/postgres", timeout=5)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    await admin(f'CREATE DATABASE "{name}"')
    try:
        yield POSTGRES_SERVER.replace("postgresql://", "postgresql+asyncpg://") + f"/{name}"
    finally:
        await admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def serve(threads: int, *, warm_models: bool = True, database_url: str | None = None) -> Iterator[Server]:
    """Migrate a fresh database, create an admin and a token with the CLI, run ``dynaforge serve``.

    The database is a SQLite file in a temporary folder unless ``database_url`` names another (P1 also measures
    on PostgreSQL, see ``postgres_database``). ``warm_models=False`` passes ``--no-warm-models``: the model worker
    then starts only at the first prediction, which the benchmarks that run a second server over seeded data (P5,
    P6's query path) never ask for.
    """
    with tempfile.TemporaryDirectory(prefix="dynaforge-bench-") as tmp:
        workdir = Path(tmp)
        env = server_environment(threads)
        database_url = database_url or f"sqlite+aiosqlite:///{(workdir / 'bench.db').as_posix()}"
        _cli(env, workdir, "db", "upgrade", "--database-url", database_url)
        _cli(
            env,
            workdir,
            "users",
            "create",
            "--username",
            ADMIN,
            "--email",
            "bench-admin@example.org",
            "--password",
            "bench admin password",
            "--admin",
            "--database-url",
            database_url,
        )
        token = _cli(env, workdir, "tokens", "create", "--username", ADMIN, "--database-url", database_url)
        port = _free_port()
        base_url = f"http://127.0.0.1:{port}"
        with open(workdir / "server.out", "wb") as out, open(workdir / "server.err", "wb") as err:
            proc = subprocess.Popen(
                [
                    _dynaforge(),
                    "serve",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--database-url",
                    database_url,
                    *(() if warm_models else ("--no-warm-models",)),
                ],
                env=env,
                cwd=workdir,
                stdout=out,
                stderr=err,
            )
        try:
            _wait_healthy(proc, base_url, workdir / "server.err")
            yield Server(base_url, proc.pid, token.strip().splitlines()[-1], workdir, database_url=database_url)
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=15)


class RawConnection:
    """A bare HTTP/1.1 keep-alive connection sending prepared requests (see ``prepared_post``): a client far lighter
    than ``httpx`` (which spends about 0.5 ms of CPU per call), so that a figure is the server's and not the
    client's. P1 times createExample with it, P5 drives its load with it."""

    def __init__(self, base_url: str):
        host, port = base_url.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, raw: bytes) -> tuple[int, bytes]:
        """Send one prepared request and read its answer; a broken connection is a failed call (RuntimeError, as
        ``closed_loop`` counts them), and the next call opens a new one."""
        try:
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            self.writer.write(raw)
            head = await self.reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await self.reader.readexactly(length)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            await self.close()
            raise RuntimeError(f"connection to {self.host}:{self.port} failed: {exc!r}") from exc
        return int(head[9:12]), body

    async def close(self) -> None:
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


def prepared_post(server: Server, path: str, payload: dict[str, Any], token: str | None = None) -> bytes:
    """The bytes of one HTTP/1.1 POST of ``payload`` as JSON, for ``RawConnection.request``."""
    body = json.dumps(payload).encode()
    host = server.base_url.removeprefix("http://")
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n{auth}"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def prepared_get(server: Server, path: str) -> bytes:
    host = server.base_url.removeprefix("http://")
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()


# --------------------------------------------------------------------------- GraphQL


CREATE_EXAMPLE = """mutation CreateExample($input: CreateExampleInput!) {
  createExample(input: $input) {
    __typename
    ... on ExampleCreated { fooled prediction { label } example { id modelPredictions { latencyMs } } }
    ... on PredictionPending { example { id } }
    ... on Error { message }
  }
}"""

REGISTER = """mutation Register($input: RegisterInput!) {
  register(input: $input) { __typename ... on AuthPayload { token } ... on Error { message } }
}"""

READ_QUERY = "query Rounds { tasks { code currentRound { number collected fooled pending } } }"


def client(connections: int = 64) -> httpx.AsyncClient:
    """One keep-alive HTTP/1.1 client with a connection per concurrent caller."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(limits=limits, timeout=REQUEST_TIMEOUT_S)


async def graphql(
    http: httpx.AsyncClient, server: Server, query: str, token: str | None = None, **variables: Any
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = await http.post(server.graphql_url, json={"query": query, "variables": variables}, headers=headers)
    response.raise_for_status()
    body = response.json()
    if body.get("errors"):
        raise RuntimeError(f"GraphQL errors: {body['errors']}")
    return body["data"]


@dataclass(frozen=True)
class Created:
    """One createExample call as the client saw it."""

    kind: str  # the result's __typename; "ExampleCreated" when the model answered
    latency_ns: int
    model_ms: float | None  # the model's own forward-pass time reported in the example's modelPredictions

    @property
    def ok(self) -> bool:
        return self.kind == "ExampleCreated"


async def create_example(http: httpx.AsyncClient, server: Server, token: str, n: int) -> Created:
    """Submit statement number ``n`` (cycling through STATEMENTS) and time the whole round trip."""
    statement, label = STATEMENTS[n % len(STATEMENTS)]
    fields = {"statement": statement, "label": label}
    started = time.perf_counter_ns()
    data = await graphql(http, server, CREATE_EXAMPLE, token, input={"taskCode": TASK, "fields": fields})
    return _created(data["createExample"], time.perf_counter_ns() - started)


def created_from(status: int, body: bytes, latency_ns: int = 0) -> Created:
    """A createExample answer read from a raw response (``RawConnection``); its kind says what went wrong."""
    if status != 200:
        return Created(f"HTTP {status}", latency_ns, None)
    document = json.loads(body)
    if document.get("errors"):
        return Created(f"GraphQL errors: {document['errors']}", latency_ns, None)
    return _created(document["data"]["createExample"], latency_ns)


def _created(result: dict[str, Any], latency_ns: int) -> Created:
    model_ms = None
    if result["__typename"] == "ExampleCreated":
        members = result["example"]["modelPredictions"] or []
        model_ms = max(float(m["latencyMs"]) for m in members) if members else None
    return Created(result["__typename"], latency_ns, model_ms)


async def read(http: httpx.AsyncClient, server: Server, token: str) -> int:
    """One read query; returns its latency in nanoseconds."""
    started = time.perf_counter_ns()
    await graphql(http, server, READ_QUERY, token)
    return time.perf_counter_ns() - started


async def prepare(http: httpx.AsyncClient, server: Server) -> None:
    """Wait until the model answers (its first load happens in the worker) and register the annotators."""
    deadline = time.monotonic() + MODEL_READY_TIMEOUT_S
    last = ""
    while time.monotonic() < deadline:
        try:
            created = await create_example(http, server, server.admin_token, 0)
            if created.ok:
                break
            last = created.kind
        except (httpx.HTTPError, RuntimeError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        await asyncio.sleep(0.5)
    else:
        raise RuntimeError(
            f"the model never answered within {MODEL_READY_TIMEOUT_S:g}s (last: {last})\n" + server.log_tail()
        )
    run_id = os.urandom(3).hex()

    async def register(i: int) -> str:
        name = f"annotator{i}_{run_id}"
        account = {"username": name, "email": f"{name}@example.org", "password": "bench annotator password"}
        payload = (await graphql(http, server, REGISTER, input=account))["register"]
        if payload["__typename"] != "AuthPayload":
            raise RuntimeError(f"could not register {name}: {payload}")
        return payload["token"]

    server.annotator_tokens = []
    for start in range(0, MAX_ANNOTATORS, 8):  # a few at a time: each costs an Argon2 hash
        server.annotator_tokens += await asyncio.gather(*(register(i) for i in range(start, start + 8)))


# --------------------------------------------------------------------------- worker batching statistics


async def worker_batch_stats(worker_pid: int) -> dict[str, int] | None:
    """The model worker's batching counters (batches, items, forward_passes), summed over its models.

    They are not exposed over HTTP, so this asks the worker directly: a ``ping`` on its Unix socket, whose path is
    on its command line. None when that is not possible (another OS, a worker that restarted meanwhile).
    """
    from dynaforge.inference import protocol

    try:
        args = (await asyncio.to_thread(Path(f"/proc/{worker_pid}/cmdline").read_bytes)).split(b"\0")
        path = args[args.index(b"--socket") + 1].decode()
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(path), 5)
    except (TimeoutError, OSError, ValueError, IndexError):
        return None
    try:
        writer.write(protocol.encode({"id": 1, "op": "ping"}))
        answer = await asyncio.wait_for(protocol.read(reader), 5)
    except (TimeoutError, OSError, protocol.ProtocolError):
        return None
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    if not answer or not answer.get("ok"):
        return None
    totals = {"batches": 0, "items": 0, "forward_passes": 0}
    for stats in answer.get("models", {}).values():
        for key in totals:
            totals[key] += int(stats.get(key, 0))
    return totals


# --------------------------------------------------------------------------- load loops


@dataclass(frozen=True)
class Call:
    started: float  # perf_counter seconds
    ended: float
    latency_ns: int
    ok: bool


@dataclass
class Phase:
    """The calls of one closed-loop phase and the window in which they are counted (after its warm-up)."""

    calls: list[Call]
    window_start: float
    window_end: float

    def counted(self) -> list[Call]:
        """Calls that started after the warm-up (their latencies are this phase's)."""
        return [c for c in self.calls if c.started >= self.window_start]

    def throughput(self) -> float:
        """Successful calls completed inside the window, per second."""
        done = sum(1 for c in self.calls if c.ok and self.window_start <= c.ended <= self.window_end)
        return done / (self.window_end - self.window_start)

    def latencies_ms(self) -> list[float]:
        return [ms(c.latency_ns) for c in self.counted() if c.ok]

    def failures(self) -> int:
        return sum(1 for c in self.counted() if not c.ok)


async def closed_loop(
    callers: int, call: Callable[[int, int], Awaitable[tuple[int, bool]]], *, warmup_s: float, measure_s: float
) -> Phase:
    """``callers`` loops, each sending its next call when the previous one returned, for warmup + measure seconds.

    ``call(caller, k)`` makes the k-th call of a caller and returns (latency in ns, success). The phase ends only
    once every call in flight has returned, so one phase never spills into the next.
    """
    start = time.perf_counter()
    window_start, window_end = start + warmup_s, start + warmup_s + measure_s
    calls: list[Call] = []

    async def loop(caller: int) -> None:
        k = 0
        while time.perf_counter() < window_end:
            began = time.perf_counter()
            try:
                latency, ok = await call(caller, k)
            except (httpx.HTTPError, RuntimeError):
                latency, ok = int((time.perf_counter() - began) * 1e9), False
            calls.append(Call(began, time.perf_counter(), latency, ok))
            k += 1

    await asyncio.gather(*(loop(i) for i in range(callers)))
    return Phase(calls, window_start, window_end)


def annotate(http: httpx.AsyncClient, server: Server) -> Callable[[int, int], Awaitable[tuple[int, bool]]]:
    """A closed-loop call: annotator ``caller`` (its own account) submits its k-th statement."""

    async def call(caller: int, k: int) -> tuple[int, bool]:
        created = await create_example(
            http, server, server.annotator_tokens[caller % len(server.annotator_tokens)], caller * 7 + k
        )
        return created.latency_ns, created.ok

    return call


def prepared_creates(server: Server, token: str) -> list[bytes]:
    """One prepared createExample request per statement of STATEMENTS, signed with ``token``."""
    return [
        prepared_post(
            server,
            "/graphql",
            {
                "query": CREATE_EXAMPLE,
                "variables": {"input": {"taskCode": TASK, "fields": {"statement": statement, "label": label}}},
            },
            token,
        )
        for statement, label in STATEMENTS
    ]


def raw_annotate(server: Server, callers: int) -> Callable[[int, int], Awaitable[tuple[int, bool]]]:
    """``annotate`` through one ``RawConnection`` per annotator with the requests prepared beforehand: on a 2-core
    machine the client shares the cores with the server, and 32 httpx clients would take a large part of one core
    that real annotators, each on a machine of their own, never take from it."""
    tokens = server.annotator_tokens
    connections = [RawConnection(server.base_url) for _ in range(callers)]
    prepared = [prepared_creates(server, tokens[caller % len(tokens)]) for caller in range(callers)]

    async def call(caller: int, k: int) -> tuple[int, bool]:
        raw = prepared[caller][(caller * 7 + k) % len(STATEMENTS)]
        started = time.perf_counter_ns()
        status, body = await connections[caller].request(raw)
        latency = time.perf_counter_ns() - started
        return latency, created_from(status, body, latency).ok

    return call


def reader(http: httpx.AsyncClient, server: Server) -> Callable[[int, int], Awaitable[tuple[int, bool]]]:
    """A closed-loop call: the read query, as the admin."""

    async def call(caller: int, k: int) -> tuple[int, bool]:
        return await read(http, server, server.admin_token), True

    return call


@dataclass
class Context:
    """What ``python -m bench`` hands every benchmark."""

    server: Server
    http: httpx.AsyncClient
    threads: int
    setup_peak_kb: int  # the API process's peak RSS over start-up and the annotators' registrations
    peak_reset: bool  # whether its peak RSS was reset after them, so that VmHWM covers only the serving traffic
    model: Any = None  # the bare model, once loaded (see bare_model)


def sqlite_engine(server: Server):
    """A plain synchronous SQLAlchemy engine on the server's SQLite file, for seeding data straight into it."""
    import sqlalchemy

    return sqlalchemy.create_engine(f"sqlite:///{server.database_path.as_posix()}")


# --------------------------------------------------------------------------- the API in this process, SQL counted


TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


@dataclass
class Statements:
    """The SQL statements one request sent to the database, split into queries and transaction control."""

    all: list[str]

    @property
    def queries(self) -> list[str]:
        return [s for s in self.all if s.lstrip().split(None, 1)[0].upper() not in TRANSACTION_CONTROL]

    @property
    def control(self) -> int:
        return len(self.all) - len(self.queries)

    def summary(self) -> str:
        """'2 queries (+2 BEGIN...)': the queries, and the transaction-control statements beside them."""
        return f"{len(self.queries)} queries (+{self.control} transaction control)"


class InProcessApi:
    """``dynaforge.app.create_app`` built in this process over a server's database, called through
    ``httpx.ASGITransport`` (no network, no lifespan: tasks are already synced by the served process), with every
    statement the database driver executes counted by a ``before_cursor_execute`` listener on both engines (the
    writer and the reader). The served process cannot be counted from outside; this builds the same app and
    settings, so the statements are the ones it sends.
    """

    def __init__(self, server: Server, **settings: Any):
        self.server = server
        self.settings_overrides = settings
        self._statements: list[str] = []

    async def __aenter__(self) -> InProcessApi:
        from sqlalchemy import event

        from dynaforge.app import create_app
        from dynaforge.settings import Settings

        settings = Settings(
            _env_file=None,
            environment="test",
            database_url=f"sqlite+aiosqlite:///{self.server.database_path.as_posix()}",
            load_plugins=TASK,
            examples_per_minute=1_000_000,
            **self.settings_overrides,
        )
        self.app = create_app(settings, sync_tasks=False, run_jobs=False)
        self.platform = self.app.state.platform
        self._engines = {self.platform.db.engine.sync_engine, self.platform.db.read_engine.sync_engine}
        for engine in self._engines:
            event.listen(engine, "before_cursor_execute", self._count)
        self.http = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://in-process", timeout=REQUEST_TIMEOUT_S
        )
        return self

    async def __aexit__(self, *_: object) -> None:
        from sqlalchemy import event

        await self.http.aclose()
        for engine in self._engines:
            event.remove(engine, "before_cursor_execute", self._count)
        await self.platform.close()

    def _count(self, conn, cursor, statement, parameters, context, executemany) -> None:
        self._statements.append(statement)

    async def statements(self, query: str, token: str | None = None, **variables: Any) -> tuple[Statements, dict]:
        """Send one GraphQL request; returns the statements it caused and its data."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._statements = []
        response = await self.http.post("/graphql", json={"query": query, "variables": variables}, headers=headers)
        counted = Statements(list(self._statements))
        response.raise_for_status()
        body = response.json()
        if body.get("errors"):
            raise RuntimeError(f"GraphQL errors: {body['errors']}")
        return counted, body["data"]


def pooled_throughput(phases: list[Phase]) -> float:
    """Successful calls per second over several phases of the same kind, as if they were one."""
    done = sum(p.throughput() * (p.window_end - p.window_start) for p in phases)
    return done / sum(p.window_end - p.window_start for p in phases)


def pooled_latencies(phases: list[Phase]) -> list[float]:
    return [latency for p in phases for latency in p.latencies_ms()]
