"""Helpers the client's tests run with the *server's* Python (``DYNAFORGE_SERVER_PYTHON``), never imported by them:
the client's own virtualenv has neither asyncpg nor torch.

    python server_side.py create-db NAME     an empty PostgreSQL database on DYNAFORGE_TEST_POSTGRES
    python server_side.py drop-db NAME
    python server_side.py tiny-model FOLDER  a randomly initialised two-label BERT for the sentiment task, saved with
                                             safetensors weights as a model builder saves one (the browser tests'
                                             web/e2e/tiny_model.py)
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

PG_SERVER = os.environ.get("DYNAFORGE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432").replace(
    "postgresql+asyncpg://", "postgresql://"
)


async def _pg(statement: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(PG_SERVER + "/postgres", timeout=10)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


def tiny_model(folder: Path) -> None:
    tiny = Path(__file__).resolve().parents[3] / "web" / "e2e" / "tiny_model.py"
    subprocess.run([sys.executable, str(tiny), str(folder), "negative", "positive"], check=True)


def main(argv: list[str]) -> None:
    command, argument = argv
    if command == "create-db":
        asyncio.run(_pg(f"CREATE DATABASE {argument}"))
    elif command == "drop-db":
        asyncio.run(_pg(f"DROP DATABASE IF EXISTS {argument} WITH (FORCE)"))
    elif command == "tiny-model":
        tiny_model(Path(argument))
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv[1:])
