"""The translation task plugin: its declaration, the chrF rule against references (sacrebleu's own figures), its
demo scoring set, and its target on the openai backend, against a fake engine and, where it is installed, against
the local engine itself (llama.cpp serving Gemma 3 270M).

Every sentence here is written for these tests; nothing needs ../shared/data.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading

import pytest
import sacrebleu

from dynaforge import InvalidInput
from dynaforge.conformance import run_checks
from dynaforge.defaults.backends.openai import OpenAIBackend
from dynaforge.inference import engine
from dynaforge.inference.fakes import fake_openai_app
from dynaforge.plugins import Plugins
from dynaforge_translation.demo_data import SCORING_SET
from dynaforge_translation.plugin import CHRF_THRESHOLD, TranslationTask


@pytest.fixture(scope="module")
def task() -> TranslationTask:
    return Plugins(allowlist={"translation"}).task("translate-fr-en")


def test_it_is_registered_and_conforms_without_models(task):
    results = asyncio.run(run_checks(Plugins(allowlist={"translation"}), ["translate-fr-en"], models=False))
    assert [r.check for r in results if not r.passed] == []
    assert task.metrics[0] == task.principal_metric == "chrf_pp"


@pytest.mark.parametrize(
    ("output", "references"),
    [
        ("The cat eats an apple.", ["The cat eats an apple."]),
        ("the cat is eating an apple", ["The cat eats an apple.", "The cat is eating an apple."]),
        ("The cat eat the apples.", ["The cat eats an apple."]),
        ("A dog runs.", ["The cat eats an apple."]),
    ],
)
def test_fooled_is_sacrebleus_chrf_under_the_threshold(task, output, references):
    expected = sacrebleu.sentence_chrf(output, references).score < CHRF_THRESHOLD
    assert task.is_fooled({"translation": references}, {"translation": output}, {}) is expected
    explained = task.explain_verdict({"translation": references}, {"translation": output}, {})
    assert explained.score == pytest.approx(sacrebleu.sentence_chrf(output, references).score)
    assert (explained.threshold, explained.fooled) == (CHRF_THRESHOLD, expected)


def test_an_empty_or_missing_translation_fools_it(task):
    assert task.is_fooled({"translation": ["Yes."]}, {"translation": "  "}, {}) is True
    assert task.is_fooled({"translation": ["Yes."]}, {}, {}) is True


def test_references_are_checked(task):
    cleaned = task.validate_example({"source": "Il neige.", "translation": [" It is snowing. ", "It snows."]}, None)
    assert cleaned["translation"] == ["It is snowing.", "It snows."]
    with pytest.raises(InvalidInput) as caught:
        task.validate_example({"source": "Il neige.", "translation": ["a", "b", "c", "d"]}, None)
    assert caught.value.field_errors[0].rule == "max_references"


def test_the_demo_scoring_set_is_valid_and_deterministic(task):
    assert len(SCORING_SET) == 24 and task.demo_scoring_set() == list(SCORING_SET)
    for item in SCORING_SET:
        task.validate_example(dict(item), None)
    assert len({item["source"] for item in SCORING_SET}) == 24


@contextlib.contextmanager
def _served(app):
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()


def _target_config(task, url: str) -> dict:
    (spec,) = task.default_target_models
    return {**spec.config, "url": url + "/v1"}


def test_its_target_config_sends_the_system_prompt_and_reads_one_line(task, monkeypatch):
    monkeypatch.setenv("DYNAFORGE_OUTBOUND_ALLOW", "127.0.0.0/8")
    seen = []
    with _served(
        fake_openai_app(lambda prompt: "The cat eats an apple.", models=("gemma-3-270m",), requests=seen)
    ) as url:
        predictor = OpenAIBackend().load(_target_config(task, url))
        try:
            (output,) = predictor.predict([{"source": "Le chat mange une pomme."}])
        finally:
            predictor.close()
    prediction = task.read_model_output(output)
    assert prediction["translation"] == "The cat eats an apple." and prediction["generation"]["tokens"] == 5
    assert seen[0]["prompt"].endswith("French: Le chat mange une pomme.\nEnglish:")
    assert seen[0]["stop"] == ["\n"] and seen[0]["temperature"] == 0
    assert task.is_fooled({"translation": ["The cat eats an apple."]}, prediction, {}) is False


@pytest.mark.skipif(engine.available() is not None, reason=f"the local engine cannot run: {engine.available()}")
def test_the_local_engine_translates_and_the_rule_decides(task, monkeypatch):
    """A real engine process (llama.cpp serving Gemma 3 270M) on a free loopback port."""
    monkeypatch.setenv("DYNAFORGE_OUTBOUND_ALLOW", "127.0.0.0/8")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    process = engine.start(url + "/v1", wait_s=180)
    try:
        predictor = OpenAIBackend().load(_target_config(task, url))
        try:
            outputs = predictor.predict([{"source": item["source"]} for item in SCORING_SET[:3]])
        finally:
            predictor.close()
    finally:
        engine.stop(process)
    for item, output in zip(SCORING_SET[:3], outputs, strict=True):
        prediction = task.read_model_output(output)
        assert isinstance(prediction["translation"], str) and "\n" not in prediction["translation"]
        assert prediction["generation"]["tokens"] >= 1 and prediction["generation"]["ttft_ms"] > 0
        score = sacrebleu.sentence_chrf(prediction["translation"], item["translation"]).score
        assert task.is_fooled(item, prediction, {}) is (score < CHRF_THRESHOLD)
