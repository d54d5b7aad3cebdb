"""What model-running processes get of the server's environment (dynaforge.sandbox): no secrets."""

from __future__ import annotations

import asyncio
import json
import math
import os
import socket
import sys

import pytest
from support import HERE

from dynaforge.evaluation.predictor import Limits, ModelError, ModelProcess, network_isolation
from dynaforge.inference.remote import WorkerInferenceClient
from dynaforge.sandbox import scrubbed_environment
from dynaforge.services.evaluation_runner import Runner
from dynaforge.settings import Settings

SERVER = {
    "PATH": "/usr/bin",
    "HOME": "/home/dynaforge",
    "DYNAFORGE_SECRET_KEY": "k" * 40,
    "DYNAFORGE_DATABASE_URL": "postgresql+asyncpg://dynaforge:pw@db/dynaforge",
    "DYNAFORGE_BROKER_URL": "redis://:pw@redis:6379/0",
    "DYNAFORGE_ENVIRONMENT": "production",
    "DYNAFORGE_DATA_DIR": "/srv/dynaforge",
    "DYNAFORGE_OUTBOUND_ALLOW": "10.0.0.0/8",
    "DYNAFORGE_EVAL_CHUNK_SIZE": "64",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "HF_TOKEN": "hf_x",
    "SMTP_PASSWORD": "pw",
    "OPENAI_API_KEY": "sk-x",
    "OMP_NUM_THREADS": "1",
}


def test_secrets_and_unneeded_settings_are_left_out():
    child = scrubbed_environment(SERVER)
    assert child == {
        "PATH": "/usr/bin",
        "HOME": "/home/dynaforge",
        "DYNAFORGE_DATA_DIR": "/srv/dynaforge",
        "DYNAFORGE_OUTBOUND_ALLOW": "10.0.0.0/8",
        "DYNAFORGE_EVAL_CHUNK_SIZE": "64",
        "OMP_NUM_THREADS": "1",
    }
    kept = scrubbed_environment(SERVER, keep={"DYNAFORGE_DATABASE_URL"})
    assert kept["DYNAFORGE_DATABASE_URL"] == SERVER["DYNAFORGE_DATABASE_URL"] and "DYNAFORGE_SECRET_KEY" not in kept


def test_the_model_worker_starts_without_the_servers_secrets(monkeypatch, tmp_path):
    """The worker process itself: its environment, read from /proc, has none of the secrets this process holds."""
    monkeypatch.setenv("DYNAFORGE_SECRET_KEY", "s" * 40)
    monkeypatch.setenv("DYNAFORGE_DATABASE_URL", "postgresql+asyncpg://u:secretpw@db/x")
    monkeypatch.setenv("DYNAFORGE_ENVIRONMENT", "production")

    async def environment_of_worker() -> dict[str, str]:
        client = WorkerInferenceClient(plugins_allowlist="", start_timeout_s=60, python=sys.executable)
        try:
            await client.start()
            assert client.pid is not None
            with open(f"/proc/{client.pid}/environ", "rb") as f:
                pairs = [item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item]
            return {k.decode(): v.decode() for k, v in pairs}
        finally:
            await client.close()

    seen = asyncio.run(environment_of_worker())
    assert "DYNAFORGE_SECRET_KEY" not in seen and "DYNAFORGE_DATABASE_URL" not in seen
    assert not any("secretpw" in value for value in seen.values()), json.dumps(sorted(seen))


def _model_environment(**extra: str) -> dict[str, str]:
    """What a job's runner hands a model's process: its own environment scrubbed, with the test models importable."""
    base = {**os.environ, "PYTHONPATH": str(HERE), "DYNAFORGE_LOAD_PLUGINS": "", **extra}
    return scrubbed_environment(base)


def _listener() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    return server


@pytest.mark.parametrize("network", [False, True], ids=["isolated", "open"])
def test_a_model_that_needs_no_network_gets_none(network):
    """A loopback port that the test listens on: reachable from a model process with the network, unreachable from
    one in a network namespace."""
    if not network and (why := network_isolation()) is not None:
        pytest.skip(f"network namespaces are not available here: {why}")
    with _listener() as server:
        port = server.getsockname()[1]
        model = ModelProcess(
            "python",
            {"callable": "eval_models:report_confinement"},
            Limits(memory_mb=4096, cpu_s=120, open_files=128, network=network),
            environment=_model_environment(DYNAFORGE_EVAL_PROBE_PORT=str(port)),
            timeout_s=60,
        )
        try:
            outputs, seconds = model.predict([{"text": "good day"}, {"text": "bad day"}])
        finally:
            model.close()
    assert [o["label"] for o in outputs] == ["good", "bad"] and seconds >= 0
    report = outputs[0]["report"]
    assert (report["memory"], report["cpu"], report["open_files"]) == (4096 * 1024**2, 120, 128)
    if network:
        assert model.network == "open" and report["connection"] == "connected"
    else:
        assert model.network == "isolated" and report["connection"] == "OSError: Network is unreachable"


def test_a_model_that_does_not_answer_in_time_is_stopped():
    # The time limit covers the whole evaluation, loading included: enough for a loaded machine to start the process.
    model = ModelProcess(
        "python", {"callable": "eval_models:hang"}, Limits(), environment=_model_environment(), timeout_s=10
    )
    with pytest.raises(ModelError, match="did not answer before EVAL_TIMEOUT_S"):
        model.predict([{"text": "good"}])
    assert model.process.poll() is not None


def test_a_model_that_fails_to_load_says_why():
    with pytest.raises(ModelError, match="no_such_model"):
        ModelProcess("python", {"callable": "eval_models:no_such_model"}, Limits(), environment=_model_environment())
    with pytest.raises(ModelError, match="no model backend 'nope'"):
        ModelProcess("nope", {}, Limits(), environment=_model_environment())


def test_which_models_run_without_network():
    """Backends say whether a configuration calls out; the runner cuts off the others, unless the operator turned
    isolation off."""
    runner = Runner(Settings(database_url="sqlite+aiosqlite:///:memory:"))
    assert runner.limits("transformers", {"path": "org/model", "revision": "a" * 40}).network is False
    assert runner.limits("transformers", {"path": "org/model", "local_files_only": False}).network is True
    assert runner.limits("http", {"url": "https://models.example/predict"}).network is True
    assert runner.limits("python", {"callable": "m:f"}).network is True
    assert runner.limits("unknown", {}).network is True
    limits = runner.limits("transformers", {"path": "org/model"})
    assert limits.memory_mb == 16384 and limits.open_files == 1024
    assert limits.cpu_s == math.ceil(runner.settings.eval_timeout_s * (os.cpu_count() or 1))
    runner.settings.eval_isolate_network = False
    assert runner.limits("transformers", {"path": "org/model"}).network is True
