"""The client on tasks whose target writes: an OpenAI-compatible engine (the server's fake, on loopback, started with
the server's Python) behind two tasks an admin declares. A writer sends several references, follows the model's
reply as it is written and reads it back with its tokens and time to first token; on a judged task the example
waits for the judge, its verdict is read with the judge's rationale, and the admin overrules it."""

from __future__ import annotations

import asyncio
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from conftest import HERE, SERVER_PYTHON, free_port

from dynaforge_client import AsyncClient, errors

DECLARE = """mutation($input: DeclareTaskInput!) { declareTask(input: $input) { __typename
  ... on Error { message } ... on InvalidInput { fieldErrors { field message } } } }"""


@pytest.fixture(scope="module")
def engine() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen([str(SERVER_PYTHON), str(HERE / "server_side.py"), "fake-engine", str(port)])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url + "/v1/models", timeout=2):
                    break
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail("the fake engine did not start")
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _target(url: str, field: str, source: str) -> dict:
    return {
        "name": "fake-writer",
        "backend": "openai",
        "config": {"url": f"{url}/v1", "model": "fake", "prompt": "{" + source + "}",
                   "parse": {"type": "text", "field": field}, "temperature": 0, "max_tokens": 32},
    }  # fmt: skip


def translation(code: str, url: str) -> dict:
    return {
        "code": code,
        "name": "French to English (client test)",
        "instructions": "Write a French sentence the model translates wrongly; give good translations, one per line.",
        "fields": [
            {"name": "source", "type": "text", "role": "input"},
            {
                "name": "translation",
                "type": "references",
                "role": "target",
                "max_references": 3,
                "normalize": ["case", "punctuation", "whitespace"],
            },
        ],  # fmt: skip
        "metrics": ["chrf"],
        "fooled": {"rule": "metric_below", "field": "translation", "metric": "chrf", "threshold": 50},
        "target_models": [_target(url, "translation", "source")],
        "sample_examples": [
            {"source": "Il pleut.", "translation": ["It is raining."]},
            {"source": "Le chien est blanc.", "translation": ["The dog is white."]},
        ],  # fmt: skip
    }


def judged(code: str, url: str) -> dict:
    return {
        "code": code,
        "name": "Capitals (client test)",
        "instructions": "Ask the assistant about a capital city. A judge model then decides whether its answer is "
        "wrong under the task's rubric; the example counts once the judge has decided.",
        "fields": [
            {"name": "question", "type": "text", "role": "input"},
            {"name": "answer", "type": "text", "role": "target", "required": False},
        ],
        "metrics": ["token_f1"],
        "fooled": {
            "rule": "judge",
            "rubric": "The answer is wrong when it names the wrong capital.",
            "judge": {
                "name": "fake-judge",
                "backend": "openai",
                "config": {"url": f"{url}/v1", "model": "fake", "temperature": 0},
            },  # fmt: skip
        },
        "target_models": [_target(url, "answer", "question")],
        "sample_examples": [{"question": "One?", "answer": "1"}, {"question": "Two?", "answer": "2"}],
    }


async def test_references_replies_and_judge_verdicts(server, engine, unique):
    async with AsyncClient(server.url, token=server.token) as admin, AsyncClient(server.url) as writer:
        for definition in (translation(f"fr-en-{unique}", engine), judged(f"capitals-{unique}", engine)):
            declared = (await admin.execute(DECLARE, {"input": {"definition": definition}}))["declareTask"]
            assert declared["__typename"] == "TaskDeclared", declared
        await writer.register(f"writer{unique}", f"writer{unique}@example.org", "writer password 123")

        # Several references; the reply is read with its tokens and time to first token.
        # The reply streams to on_reply as it is written, before create_example returns.
        references = ["The dog is white.", "The dog's white."]
        pieces: list[str] = []
        right = await writer.create_example(
            f"fr-en-{unique}", {"source": "Le chien est blanc.", "translation": references}, on_reply=pieces.append
        )
        assert pieces == ["The", " dog", " is", " white."]
        assert right.fields["translation"] == references and right.fooled is False
        generation = right.prediction.generation
        assert generation.text == "The dog is white." and generation.tokens == 4 and generation.finish_reason == "stop"
        assert generation.time_to_first_token_ms >= 20 and generation.total_ms >= generation.time_to_first_token_ms
        wrong = await writer.create_example(f"fr-en-{unique}", {"source": "Il pleut.", "translation": "It is raining."})
        assert wrong.fooled is True and wrong.prediction.fields["translation"] == "It is snowing."
        with pytest.raises(errors.InvalidInput) as refused:
            await writer.create_example(f"fr-en-{unique}", {"source": "Il pleut.", "translation": ["a", "b", "c", "d"]})
        assert "translation" in str(refused.value)

        # A judged task: the example waits, the judge's verdict and rationale arrive, an admin overrules it.
        asked = await writer.create_example(f"capitals-{unique}", {"question": "What is the capital of Peru?"})
        assert asked.status.value == "PENDING_VERDICT" and asked.fooled is None
        assert asked.verdict.decided_by.value == "JUDGE" and asked.verdict.decided is False
        deadline = time.monotonic() + 30
        while not (decided := await writer.example(asked.id)).verdict.decided:
            assert time.monotonic() < deadline, "the judge did not decide"
            await asyncio.sleep(0.2)
        assert decided.fooled is True and decided.verdict.rationale == "Lima is Peru's capital."
        assert decided.verdict.judge_model == "fake-judge"
        with pytest.raises(errors.Forbidden):
            await writer.overrule_verdict(asked.id, fooled=False, reason="mine")
        overruled = await admin.overrule_verdict(asked.id, fooled=False, reason="Quito was named as a trick.")
        assert overruled.fooled is False and overruled.verdict.overruled is True
        assert overruled.verdict.overrule_reason == "Quito was named as a trick." and overruled.verdict.fooled is True
