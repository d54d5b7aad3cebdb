"""The model worker: micro-batching and length grouping, and the supervised worker process (timeouts, a killed
worker failing requests fast and coming back, models reloaded after a restart)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support import free_port

from dynaforge.inference.backends import InferenceError, InferenceTimeout
from dynaforge.inference.batching import MicroBatcher, default_length, group_by_length
from dynaforge.inference.remote import InferenceUnavailable, WorkerInferenceClient
from dynaforge.tasks.base import ModelSpec

HERE = Path(__file__).resolve().parent

# Models of tests/worker_models.py, imported by the worker process through the python backend.
ECHO = ModelSpec("echo", "python", {"callable": "worker_models:echo"})
SLOW = ModelSpec("slow", "python", {"callable": "worker_models:slow"})
BROKEN = ModelSpec("broken", "python", {"callable": "worker_models:missing_function"})


# --------------------------------------------------------------------------- batching, in process


class Recorder:
    """A model that records the size and lengths of each forward pass."""

    def __init__(self, delay_s: float = 0.02):
        self.delay_s = delay_s
        self.calls: list[list[str]] = []
        self.lock = threading.Lock()

    def __call__(self, inputs):
        with self.lock:
            self.calls.append([item["text"] for item in inputs])
        time.sleep(self.delay_s)
        return [{"label": item["text"].upper()} for item in inputs]


@pytest.fixture
def executor():
    pool = ThreadPoolExecutor(max_workers=1)
    yield pool
    pool.shutdown(wait=True)


def test_group_by_length_keeps_similar_lengths_together():
    lengths = [5, 100, 6, 9, 180, 11, 40]
    groups = group_by_length(lengths, spread=2.0)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for group in groups:
        sizes = [lengths[i] for i in group]
        assert max(sizes) <= 2.0 * min(sizes)
    assert [sorted(lengths[i] for i in g) for g in groups] == [[5, 6, 9], [11], [40], [100, 180]]


def test_default_length_counts_text_only():
    assert default_length({"text": "a" * 40, "n": 3}) == 12


async def test_a_lone_request_runs_at_once(executor):
    model = Recorder(delay_s=0.0)
    batcher = MicroBatcher("m", model, executor, window_s=0.5)
    started = time.perf_counter()
    for _ in range(3):
        outputs, batch, _ = await batcher.predict([{"text": "hi"}], timeout_s=5)
        assert outputs == [{"label": "HI"}] and batch == 1
    # No window is waited without concurrency: three sequential requests take far less than one window.
    assert time.perf_counter() - started < 0.5
    await batcher.close()


async def test_concurrent_requests_share_forward_passes_up_to_the_cap(executor):
    model = Recorder(delay_s=0.05)
    batcher = MicroBatcher("m", model, executor, max_batch=8, window_s=0.01)
    texts = [f"text {i:02d}" for i in range(40)]
    results = await asyncio.gather(*(batcher.predict([{"text": t}], timeout_s=10) for t in texts))
    assert [r[0][0]["label"] for r in results] == [t.upper() for t in texts]  # each caller gets its own answer
    sizes = [len(call) for call in model.calls]
    assert sum(sizes) == 40 and max(sizes) <= 8
    assert len(model.calls) <= 8, sizes  # batched: far fewer forward passes than requests
    assert batcher.stats.items == 40 and batcher.stats.largest <= 8
    await batcher.close()


async def test_a_batch_is_split_by_length(executor):
    model = Recorder(delay_s=0.0)
    batcher = MicroBatcher("m", model, executor, max_batch=16, window_s=0.05)
    short = [{"text": "tiny " + str(i)} for i in range(4)]
    long = [{"text": "long " * 60 + str(i)} for i in range(4)]
    await asyncio.gather(*(batcher.predict([item], timeout_s=5) for item in short + long))
    for call in model.calls:
        lengths = [default_length({"text": t}) for t in call]
        assert max(lengths) <= 2.0 * min(lengths), call
    await batcher.close()


async def test_requests_past_their_deadline_are_not_run(executor):
    model = Recorder(delay_s=0.3)
    batcher = MicroBatcher("m", model, executor, max_batch=1, window_s=0.0)
    first = asyncio.create_task(batcher.predict([{"text": "first"}], timeout_s=5))
    await asyncio.sleep(0.05)
    with pytest.raises(InferenceTimeout, match="waited past its timeout"):
        await batcher.predict([{"text": "late"}], timeout_s=0.1)
    await first
    await asyncio.sleep(0.35)
    assert ["late"] not in model.calls
    assert batcher.stats.expired == 1
    await batcher.close()


async def test_a_failing_model_fails_its_batch_and_keeps_serving(executor):
    calls = {"n": 0}

    def flaky(inputs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("out of memory")
        return [{"label": "ok"} for _ in inputs]

    batcher = MicroBatcher("m", flaky, executor)
    with pytest.raises(InferenceError, match="RuntimeError: out of memory"):
        await batcher.predict([{"text": "a"}], timeout_s=5)
    assert (await batcher.predict([{"text": "b"}], timeout_s=5))[0] == [{"label": "ok"}]

    batcher2 = MicroBatcher("short", lambda inputs: [{"label": "x"}], executor)
    with pytest.raises(InferenceError, match="1 outputs for 2 inputs"):
        await batcher2.predict([{"text": "a"}, {"text": "b"}], timeout_s=5)
    await batcher.close()
    await batcher2.close()


# --------------------------------------------------------------------------- the worker process


@pytest.fixture
async def worker(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
    client = WorkerInferenceClient(plugins_allowlist="", timeout_s=2.0, load_timeout_s=30, window_ms=5)
    await client.start()
    try:
        yield client
    finally:
        await client.close()


async def test_worker_predicts_in_another_process(worker):
    assert worker.status()["ready"] and worker.pid != os.getpid()
    answer = await worker.predict(ECHO, [{"text": "hello"}, {"text": "there"}])
    assert [o["label"] for o in answer.outputs] == ["HELLO", "THERE"]
    assert answer.outputs[0]["pid"] == worker.pid  # it ran in the worker
    results = await asyncio.gather(*(worker.predict(ECHO, [{"text": f"t{i}"}]) for i in range(24)))
    assert [r.outputs[0]["label"] for r in results] == [f"T{i}" for i in range(24)]
    stats = (await worker.ping())["models"]["echo"]
    assert stats["items"] == 26 and stats["forward_passes"] < 26  # concurrent requests were batched


async def test_worker_reports_load_failures_and_timeouts(worker):
    with pytest.raises(InferenceError, match="failed to load: AttributeError"):
        await worker.predict(BROKEN, [{"text": "x"}])
    with pytest.raises(InferenceTimeout, match="did not answer"):
        await worker.predict(SLOW, [{"text": "x"}])
    # The worker itself is fine.
    assert (await worker.predict(ECHO, [{"text": "ok"}])).outputs[0]["label"] == "OK"


async def test_killed_worker_fails_in_flight_requests_fast_then_comes_back(worker):
    await worker.predict(ECHO, [{"text": "warm"}])
    first_pid = worker.pid
    in_flight = asyncio.create_task(worker.predict(SLOW, [{"text": "x"}]))
    await asyncio.sleep(0.5)
    started = time.perf_counter()
    os.kill(first_pid, signal.SIGKILL)
    with pytest.raises(InferenceUnavailable):
        await in_flight
    assert time.perf_counter() - started < 1.0  # failed at once, not after its 2 s timeout
    with pytest.raises(InferenceUnavailable):  # while restarting, requests fail fast too
        await worker.predict(ECHO, [{"text": "meanwhile"}])
    deadline = time.monotonic() + 30
    while True:
        try:
            answer = await worker.predict(ECHO, [{"text": "back"}])
            break
        except InferenceUnavailable:
            assert time.monotonic() < deadline, "the worker did not come back"
            await asyncio.sleep(0.1)
    assert answer.outputs[0]["label"] == "BACK"
    assert worker.pid not in (None, first_pid) and worker.starts == 2
    # -9 (SIGKILL); asyncio reports 255 when its child watcher finds the process already reaped.
    assert worker.status()["last_exit"] in ("exit status -9", "exit status 255")


async def test_closing_the_client_stops_the_worker(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(HERE))
    client = WorkerInferenceClient(plugins_allowlist="")
    await client.start()
    pid = client.pid
    await client.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(InferenceUnavailable):
        await client.predict(ECHO, [{"text": "x"}])


def test_model_server_command_serves_a_model_to_the_http_backend(tmp_path):
    """`dynaforge model-server` runs a model elsewhere; the http backend puts it in the loop."""
    import subprocess
    import sys

    from dynaforge.defaults.backends import HttpBackend

    port = free_port()
    dynaforge = str(Path(sys.executable).with_name("dynaforge"))
    env = {
        **os.environ,
        "PYTHONPATH": str(HERE),
        "DYNAFORGE_LOAD_PLUGINS": "",
        "DYNAFORGE_MODEL_SERVER_TOKEN": "s3cret",
    }
    err_log = (tmp_path / "err.log").open("wb")
    proc = subprocess.Popen(
        [
            dynaforge,
            "model-server",
            "--backend",
            "python",
            "--config",
            '{"callable": "worker_models:echo"}',
            "--port",
            str(port),
            "--name",
            "echo",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err_log,
    )
    err_log.close()  # the child holds its own descriptor
    try:
        config = {"url": f"http://127.0.0.1:{port}", "headers": {"Authorization": "Bearer s3cret"}, "timeout_s": 5}
        deadline = time.monotonic() + 30
        while True:
            try:
                model = HttpBackend().load(config)
                break
            except InferenceError:
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "err.log").read_text()
                time.sleep(0.2)
        outputs = model.predict([{"text": "far"}, {"text": "away"}])
        assert [o["label"] for o in outputs] == ["FAR", "AWAY"]
        assert outputs[0]["pid"] == proc.pid
        with pytest.raises(InferenceError, match="401"):
            HttpBackend().load({**config, "headers": {}}).predict([{"text": "x"}])
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    bad = subprocess.run(
        [dynaforge, "model-server", "--backend", "python", "--config", "[1]"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0 and "--config must be a JSON object" in bad.stderr


def test_model_server_serves_a_model_from_the_current_folder(tmp_path):
    """As `dynaforge check --plugin` does, `dynaforge model-server` imports from the folder it runs in: a python
    model being written there is served before it is packaged."""
    import subprocess
    import sys

    import httpx

    (tmp_path / "my_model.py").write_text("def predict(inputs):\n    return [{'label': 'good'} for _ in inputs]\n")
    port = free_port()
    dynaforge = str(Path(sys.executable).with_name("dynaforge"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"DYNAFORGE_LOAD_PLUGINS": ""}
    err_log = (tmp_path / "err.log").open("wb")
    config = '{"callable": "my_model:predict"}'
    proc = subprocess.Popen(
        [dynaforge, "model-server", "--backend", "python", "--config", config, "--port", str(port)],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=err_log,
    )  # fmt: skip
    err_log.close()
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                answer = httpx.post(f"http://127.0.0.1:{port}/predict", json={"inputs": [{"text": "x"}]}, timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "err.log").read_text()
                time.sleep(0.2)
        assert answer.json() == {"outputs": [{"label": "good"}]}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class _Waits:
    """A model behind the network: it waits ``seconds`` per call (a judge model that takes its time)."""

    io_bound = True

    def __init__(self, seconds: float):
        self.seconds = seconds

    def predict(self, inputs):
        time.sleep(self.seconds)
        return [{"label": "a"} for _ in inputs]


class _Computes(_Waits):
    """A model that computes here (no ``io_bound``): the worker's one inference thread runs it."""

    io_bound = False


@pytest.mark.parametrize("quick", [_Waits, _Computes])
async def test_a_slow_remote_model_holds_up_no_other_model(quick):
    """A judge that takes a second must not queue the next example's target behind it (G2), whether that target
    is another remote model or one computing in the worker."""
    from dynaforge.inference.backends import ModelBackend
    from dynaforge.inference.worker import ModelHost

    class Backend(ModelBackend):
        name = "fake"

        def load(self, config):
            return _Waits(1.0) if config["slow"] else quick(0.0)

    host = ModelHost(lambda: {"fake": Backend()})
    try:
        slow = asyncio.ensure_future(host.predict(ModelSpec("judge", "fake", {"slow": True}), [{}], 10.0))
        await asyncio.sleep(0.2)  # the judge is waiting for its server
        started = time.perf_counter()
        outputs, _, _ = await host.predict(ModelSpec("target", "fake", {"slow": False}), [{}], 10.0)
        assert outputs == [{"label": "a"}] and time.perf_counter() - started < 0.5
        assert not slow.done()
        await slow
    finally:
        await host.close()
