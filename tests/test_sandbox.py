"""What model-running processes get of the server's environment (dynaforge.sandbox): no secrets."""

from __future__ import annotations

import asyncio
import json
import sys

from dynaforge.inference.remote import WorkerInferenceClient
from dynaforge.sandbox import scrubbed_environment

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
