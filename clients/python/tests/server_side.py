"""Helpers the client's tests run with the *server's* Python (``DYNAFORGE_SERVER_PYTHON``), never imported by them:
the client's own virtualenv has neither asyncpg nor torch.

    python server_side.py create-db NAME     an empty PostgreSQL database on DYNAFORGE_TEST_POSTGRES
    python server_side.py drop-db NAME
    python server_side.py tiny-model FOLDER  a randomly initialised two-label BERT for the sentiment task, saved with
                                             safetensors weights as a model builder saves one (the browser tests'
                                             web/e2e/tiny_model.py)
    python server_side.py fake-engine PORT   an OpenAI-compatible engine on loopback (dynaforge.inference.fakes)
                                             that translates a few French sentences, answers a few questions and
                                             judges answers about capital cities, streaming word by word
"""

from __future__ import annotations

import asyncio
import json
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


TRANSLATIONS = {"Le chien est blanc.": "The dog is white.", "Il pleut.": "It is snowing."}
ANSWERS = {"What is the capital of Peru?": "The capital of Peru is Quito."}


def engine_reply(prompt: str) -> str:
    if "The model's answer:" in prompt:  # the platform's judge prompt
        answer = prompt.split("The model's answer:\n", 1)[1].split("\n\n", 1)[0]
        wrong = "Quito" in answer
        return json.dumps({"fooled": wrong, "rationale": "Lima is Peru's capital." if wrong else "Right."})
    text = prompt.strip()
    return TRANSLATIONS.get(text) or ANSWERS.get(text) or "I do not know."


def fake_engine(port: int) -> None:
    import uvicorn

    from dynaforge.inference.fakes import fake_openai_app

    uvicorn.run(
        fake_openai_app(engine_reply, ttft_s=0.02, token_s=0.005), host="127.0.0.1", port=port, log_level="warning"
    )


def main(argv: list[str]) -> None:
    command, argument = argv
    if command == "create-db":
        asyncio.run(_pg(f"CREATE DATABASE {argument}"))
    elif command == "drop-db":
        asyncio.run(_pg(f"DROP DATABASE IF EXISTS {argument} WITH (FORCE)"))
    elif command == "tiny-model":
        tiny_model(Path(argument))
    elif command == "fake-engine":
        fake_engine(int(argument))
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv[1:])
