"""Targets a model writes: text fields with normalisation and several references, numbers with a tolerance, the
text metrics (checked against sacrebleu's and rouge-score's own figures, with bootstrap intervals), the
``metric_below`` fooled rule, and the ``openai`` and ``kserve`` backends against fake servers on loopback."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from dynaforge.defaults.backends.kserve import KServeBackend
from dynaforge.defaults.backends.openai import OpenAIBackend, parse_reply, render
from dynaforge.defaults.text_metrics import sentence_score, words
from dynaforge.errors import InvalidInput
from dynaforge.evaluation import scoring
from dynaforge.inference.backends import InferenceError, UnusableOutput
from dynaforge.inference.fakes import fake_kserve_app, fake_openai_app
from dynaforge.plugins import Plugins
from dynaforge.tasks.base import Task
from dynaforge.tasks.declarative import load_declaration
from dynaforge.tasks.fields import NumberField, ReferencesField, Role, TextField, normalize_text
from tests.support import serve_in_thread

METRICS = Plugins(load_entry_points=False).registry.metrics


class Translate(Task):
    code = "translate-toy"
    name = "Translate (toy)"
    instructions = "Write a French sentence the model translates badly into English."
    fields = (
        TextField(name="source", role=Role.INPUT, max_length=300),
        ReferencesField(name="translation", role=Role.TARGET, normalize=("case", "punctuation", "whitespace")),
    )
    metrics = ("chrf", "chrf_pp", "bleu", "ter", "rouge_l", "token_f1", "normalized_exact_match")
    principal_metric = "chrf"


class Count(Task):
    code = "count-toy"
    name = "Count (toy)"
    instructions = "Ask how many; the model answers a number."
    fields = (
        TextField(name="question", role=Role.INPUT),
        NumberField(name="answer", role=Role.TARGET, tolerance=0.5),
    )
    metrics = ("within_tolerance", "mae")
    principal_metric = "within_tolerance"


TRANSLATE, COUNT = Translate(), Count()


# --------------------------------------------------------------------------------------------------------- fields
def test_normalisation_rules_apply_in_their_order() -> None:
    assert normalize_text("  Le  Chien, est BLANC. ", ("case", "punctuation", "whitespace")) == "le chien est blanc"
    assert normalize_text("ﬁne Ｗｏｒｄ", ("unicode",)) == "fine Word"
    assert normalize_text("Straße", ("case",)) == normalize_text("STRASSE", ("case",))
    assert normalize_text("a,b", ()) == "a,b"
    with pytest.raises(ValueError, match="normalize must be a list among"):
        TextField(name="t", role=Role.TARGET, normalize=("stemming",))


def test_a_normalised_text_target_matches_what_exact_match_would_call_fooled() -> None:
    gold = {"source": "Le chien est blanc.", "translation": "The dog is white."}
    assert TRANSLATE.is_fooled(gold, {"translation": "the dog is white"}, {}) is False
    assert TRANSLATE.is_fooled(gold, {"translation": "The cat is white."}, {}) is True
    several = {**gold, "translation": ["The dog is white.", "The dog's white."]}
    assert TRANSLATE.is_fooled(several, {"translation": "the dog s white"}, {}) is False
    assert TRANSLATE.is_fooled(several, {"translation": None}, {}) is True


def test_references_are_checked_one_by_one_and_stripped() -> None:
    cleaned = TRANSLATE.validate_example({"source": "Bonjour", "translation": [" Hello ", "Hi"]}, None)
    assert cleaned["translation"] == ["Hello", "Hi"]
    for bad, rule in (
        ([], "type"),
        (["Hi", "Hi"], "unique"),
        (["a"] * 2 + ["b", "c", "d"], "max_references"),
        (["Hello", 3], "type"),
        (["Hello", " "], "min_length"),
    ):
        with pytest.raises(InvalidInput) as caught:
            TRANSLATE.validate_example({"source": "Bonjour", "translation": bad}, None)
        assert caught.value.field_errors[0].rule == rule, bad
    schema = TRANSLATE.json_schema(Role.TARGET)["properties"]["translation"]
    assert schema["x-references"] is True and schema["x-normalize"] == ["case", "punctuation", "whitespace"]
    assert schema["oneOf"][1]["maxItems"] == 4


def test_a_model_must_write_text_for_a_text_target() -> None:
    assert TRANSLATE.read_model_output({"translation": "Hello", "generation": {"tokens": 1}})["generation"]
    with pytest.raises(ValueError, match="must be text"):
        TRANSLATE.read_model_output({"translation": ["Hello"]})
    with pytest.raises(ValueError, match="does not match"):
        TRANSLATE.read_model_output({"unusable": "the reply does not match the parser's pattern"})


def test_numbers_match_within_their_tolerance() -> None:
    assert COUNT.is_fooled({"answer": 3}, {"answer": 3.5}, {}) is False
    assert COUNT.is_fooled({"answer": 3}, {"answer": 3.51}, {}) is True
    assert COUNT.is_fooled({"answer": 3}, {"answer": True}, {}) is True
    with pytest.raises(ValueError, match="tolerance"):
        NumberField(name="n", role=Role.TARGET, tolerance=-1)


# -------------------------------------------------------------------------------------------------------- metrics
HYPOTHESES = ["the dog is white", "A cat sleeps on the mat.", "", "Good morning to you all", "I am very tired today"]
REFERENCES = [
    ["The dog is white.", "The dog's white."],
    "The cat sleeps on the mat.",
    "It rains.",
    ["Good morning, everyone.", "Hello all", "Morning, all."],
    "I'm really tired today.",
]


def _gold() -> list[dict[str, Any]]:
    return [{"source": "x", "translation": r} for r in REFERENCES]


def _preds() -> list[dict[str, Any] | None]:
    return [None if h == "" else {"translation": h} for h in HYPOTHESES]


def _streams() -> list[list[str | None]]:
    refs = [r if isinstance(r, list) else [r] for r in REFERENCES]
    return [[r[j] if j < len(r) else None for r in refs] for j in range(3)]


def test_sacrebleu_metrics_equal_sacrebleus_own_corpus_figures() -> None:
    values = scoring.score(TRANSLATE, None, _gold(), _preds(), metrics=METRICS)
    assert values["chrf"] == pytest.approx(sacrebleu.corpus_chrf(HYPOTHESES, _streams()).score)
    assert values["chrf_pp"] == pytest.approx(sacrebleu.corpus_chrf(HYPOTHESES, _streams(), word_order=2).score)
    assert values["bleu"] == pytest.approx(sacrebleu.corpus_bleu(HYPOTHESES, _streams()).score)
    assert values["ter"] == pytest.approx(sacrebleu.corpus_ter(HYPOTHESES, _streams()).score)
    assert METRICS["ter"].higher_is_better is False


def test_rouge_token_f1_and_exact_match() -> None:
    values = scoring.score(TRANSLATE, None, _gold(), _preds(), metrics=METRICS)

    class Words:
        def tokenize(self, text: str) -> list[str]:
            return words(text)

    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=Words())
    expected = [
        max(scorer.score(r, h)["rougeL"].fmeasure for r in (rs if isinstance(rs, list) else [rs]))
        for rs, h in zip(REFERENCES, HYPOTHESES, strict=True)
    ]
    assert values["rouge_l"] == pytest.approx(sum(expected) / len(expected))
    # Only the first matches a reference after case, punctuation and whitespace rules.
    assert values["normalized_exact_match"] == pytest.approx(1 / 5)
    # Best F1 per item: "the dog is white" 1; "a cat sleeps on the mat" against "the cat sleeps on the mat" 5/6;
    # nothing 0; "good morning to you all" against "morning all" (P 2/5, R 1); "i am very tired today" against
    # "i m really tired today" (3 of 5 words each way).
    f1_morning = 2 * (2 / 5) * 1 / (2 / 5 + 1)
    assert values["token_f1"] == pytest.approx((1 + 5 / 6 + 0 + f1_morning + 3 / 5) / 5)


def test_rouge_reads_words_beyond_ascii() -> None:
    gold = [{"source": "x", "translation": "Die Straße ist naß"}]
    assert scoring.score(TRANSLATE, ["rouge_l"], gold, [{"translation": "die straße ist naß"}], metrics=METRICS)[
        "rouge_l"
    ] == pytest.approx(1.0)


def test_corpus_metric_intervals_use_the_fast_statistic_with_the_same_figures() -> None:
    golds, preds = _gold() * 8, _preds() * 8
    for name in ("chrf", "bleu", "ter"):
        fast = scoring.metric_interval(TRANSLATE, name, golds, preds, metrics=METRICS, seed=3, resamples=200)
        slow_metrics = {**METRICS, name: replace(METRICS[name], statistic=None)}
        slow = scoring.metric_interval(TRANSLATE, name, golds, preds, metrics=slow_metrics, seed=3, resamples=200)
        assert fast.low == pytest.approx(slow.low) and fast.high == pytest.approx(slow.high), name
        value = scoring.score(TRANSLATE, [name], golds, preds, metrics=METRICS)[name]
        assert fast.low <= value <= fast.high


def test_number_metrics() -> None:
    golds = [{"question": "q", "answer": a} for a in (1, 2, 3, 4)]
    preds = [{"answer": 1.2}, {"answer": 3}, None, {"answer": 4.5}]
    values = scoring.score(COUNT, None, golds, preds, metrics=METRICS)
    assert values["within_tolerance"] == pytest.approx(2 / 4)
    assert values["mae"] == pytest.approx((0.2 + 1 + 0.5) / 3)
    interval = scoring.metric_interval(COUNT, "within_tolerance", golds, preds, metrics=METRICS, seed=1)
    assert 0 <= interval.low <= 0.5 <= interval.high <= 1
    with pytest.raises(InvalidInput, match="applies to a task whose one target is a TextField"):
        scoring.score(COUNT, ["normalized_exact_match"], golds, preds, metrics=METRICS)


# --------------------------------------------------------------------------------------------- declared metric rule
def declaration(**fooled: Any) -> dict[str, Any]:
    return {
        "code": "fr-en-toy",
        "name": "French to English (toy)",
        "instructions": "Write a French sentence; the model translates it into English. Give one or more references.",
        "fields": [
            {"name": "source", "type": "text", "role": "input", "max_length": 300},
            {
                "name": "translation",
                "type": "references",
                "role": "target",
                "normalize": ["case", "punctuation", "whitespace"],
                "max_references": 3,
            },
        ],
        "metrics": ["chrf", "bleu"],
        "fooled": fooled or {"rule": "metric_below", "field": "translation", "metric": "chrf", "threshold": 60},
        "target_models": [
            {
                "name": "llm",
                "backend": "openai",
                "config": {
                    "url": "https://llm.example.org/v1",
                    "model": "m",
                    "prompt": "Translate into English: {source}",
                    "parse": {"type": "text", "field": "translation"},
                },
            }
        ],
        "sample_examples": [
            {"source": "Le chien est blanc.", "translation": ["The dog is white.", "The dog's white."]},
            {"source": "Il pleut.", "translation": "It is raining."},
        ],
    }


@pytest.mark.parametrize(
    ("output", "references"),
    [
        ("The dog is white.", ["The dog is white."]),  # exact
        ("The dog is whte.", ["The dog is white."]),  # a near miss
        ("The hound looks pale.", ["The dog is white.", "The dog's white."]),  # a miss
        ("", ["It is raining."]),
    ],
)
def test_metric_below_is_decided_by_sacrebleus_own_chrf(output: str, references: list[str]) -> None:
    task = load_declaration(declaration())
    expected = sacrebleu.sentence_chrf(output, references).score < 60
    assert task.is_fooled({"translation": references}, {"translation": output}, {}) is expected
    assert sentence_score("chrf", references, output) == pytest.approx(
        sacrebleu.sentence_chrf(output, references).score
    )


def test_owners_threshold_decides_and_tuning_again_starts_from_the_declared_task() -> None:
    task = load_declaration(declaration())
    example, output = {"translation": ["The dog is white."]}, {"translation": "The dog is whte."}
    score = sacrebleu.sentence_chrf(output["translation"], example["translation"]).score
    assert task.fooled_threshold == 60.0 and task.fooled_threshold_range == (0.0, 100.0)
    stricter = task.tuned(fooled_threshold=score + 1)
    assert stricter.is_fooled(example, output, {}) is True and task.is_fooled(example, output, {}) is False
    assert stricter.tuned(fooled_threshold=None) is task and task.tuned(fooled_threshold=60.0) is task
    assert stricter.tuned(fooled_threshold=10.0).fooled_threshold == 10.0 and task.fooled_threshold == 60.0
    assert task.tuned(judge_rubric="ignored: no judge") is task  # a rule without a judge has no rubric to set
    assert Task.fooled_threshold is None  # the default rule (targets differ) has no threshold


def test_metric_below_sentence_bleu_uses_effective_order() -> None:
    assert sentence_score("bleu", "the dog", "the dog") == pytest.approx(100.0)
    assert sentence_score("bleu", ["a b c d"], "a b x d") == pytest.approx(
        sacrebleu.sentence_bleu("a b x d", ["a b c d"]).score
    )


@pytest.mark.parametrize(
    ("fooled", "message"),
    [
        ({"rule": "metric_below", "field": "translation", "threshold": 50}, "needs `metric`"),
        ({"rule": "metric_below", "field": "translation", "metric": "ter", "threshold": 50}, "needs `metric`"),
        ({"rule": "metric_below", "field": "translation", "metric": "token_f1", "threshold": 50}, "0-1 scale"),
        ({"rule": "metric_below", "field": "translation", "metric": "chrf", "threshold": 150}, "0-100 scale"),
        ({"rule": "metric_below", "field": "source", "metric": "chrf", "threshold": 50}, "target field"),
        ({"rule": "target_differs", "metric": "chrf"}, "takes no `metric`"),
    ],
)
def test_metric_below_problems_are_named(fooled: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        load_declaration(declaration(**fooled))
    assert message in caught.value.message


def test_declared_references_and_target_differs_normalise() -> None:
    task = load_declaration(declaration(rule="target_differs"))
    assert task.is_fooled({"translation": ["It is raining."]}, {"translation": "it is raining"}, {}) is False
    assert task.is_fooled({"translation": ["It is raining."]}, {"translation": "It rains."}, {}) is True


# -------------------------------------------------------------------------------------------------- openai backend
def translator(prompt: str) -> str:
    table = {"Le chien est blanc.": "The dog is white.", "Il pleut.": "It rains heavily today."}
    source = prompt.rsplit(": ", 1)[-1]
    return table.get(source, "I do not know.")


def openai_config(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "url": url + "/v1",
        "model": "fake",
        "prompt": "Translate into English: {source}",
        "system": "You translate French into English.",
        "parse": {"type": "text", "field": "translation"},
        "temperature": 0,
        "seed": 7,
        "max_tokens": 32,
        "headers": {"Authorization": "Bearer sk-test"},
        "retries": 0,
        **extra,
    }


@pytest.mark.parametrize("api", ["chat", "completions"])
@pytest.mark.parametrize("stream", [True, False])
def test_openai_backend_generates_parses_and_measures(api: str, stream: bool) -> None:
    seen: list[dict[str, Any]] = []
    with serve_in_thread(fake_openai_app(translator, ttft_s=0.05, token_s=0.01, requests=seen)) as url:
        predictor = OpenAIBackend().load(openai_config(url, api=api, stream=stream))
        try:
            outputs = predictor.predict([{"source": "Le chien est blanc."}, {"source": "Il pleut."}])
        finally:
            predictor.close()
    assert [o["translation"] for o in outputs] == ["The dog is white.", "It rains heavily today."]
    first = outputs[0]["generation"]
    assert first["text"] == "The dog is white." and first["tokens"] == 4 and first["finish_reason"] == "stop"
    assert first["ttft_ms"] >= 50 and first["total_ms"] >= first["ttft_ms"]
    if stream:
        assert first["total_ms"] >= first["ttft_ms"] + 25  # three more words, 10 ms apart
    body = next(b for b in seen if "Le chien" in json.dumps(b))
    assert body["seed"] == 7 and body["temperature"] == 0 and body["max_tokens"] == 32
    assert body.get("stream", False) is stream
    if api == "chat":
        assert body["messages"][0] == {"role": "system", "content": "You translate French into English."}
        assert body["messages"][1]["content"] == "Translate into English: Le chien est blanc."
    else:
        assert body["prompt"].endswith("Translate into English: Le chien est blanc.")
    TRANSLATE.read_model_output(outputs[0])


async def test_the_inline_client_hands_streamed_pieces_to_the_sink_in_order() -> None:
    """The path of the annotator's reply stream in inline mode (the worker's is the end-to-end test's): each piece
    the engine streams reaches ``on_token`` while the prediction runs, and the pieces make the reply."""
    from dynaforge.inference.client import LocalInferenceClient
    from dynaforge.tasks.base import ModelSpec

    pieces: list[tuple[str, float]] = []
    client = LocalInferenceClient({"openai": OpenAIBackend()}, timeout_s=10)
    with serve_in_thread(fake_openai_app(translator, ttft_s=0.05, token_s=0.05)) as url:
        spec = ModelSpec(name="translator", backend="openai", config=openai_config(url))
        try:
            answer = await client.predict(
                spec, [{"source": "Le chien est blanc."}], on_token=lambda t: pieces.append((t, time.perf_counter()))
            )
            ended = time.perf_counter()
            silent = await client.predict(spec, [{"source": "Il pleut."}])  # no sink: nothing is sent anywhere
        finally:
            await client.close()
    assert "".join(t for t, _ in pieces) == answer.outputs[0]["translation"] == "The dog is white."
    assert len(pieces) == 4 and ended - pieces[0][1] >= 0.1  # the first arrived while the others were written
    assert silent.outputs[0]["translation"] == "It rains heavily today." and len(pieces) == 4


def test_openai_batches_run_concurrently() -> None:
    with serve_in_thread(fake_openai_app(translator, ttft_s=0.2)) as url:
        predictor = OpenAIBackend().load(openai_config(url, concurrency=4))
        try:
            started = time.perf_counter()
            outputs = predictor.predict([{"source": "Il pleut."}] * 4)
            elapsed = time.perf_counter() - started
        finally:
            predictor.close()
    assert len(outputs) == 4 and elapsed < 0.6  # four requests of 0.2 s each, at once


def test_openai_parsers() -> None:
    assert parse_reply({"type": "json"}, '```json\n{"label": "yes"}\n```') == {"label": "yes"}
    assert parse_reply({"type": "regex", "pattern": r"Answer:\s*(?P<answer>\w+)"}, "Think... Answer: Paris") == {
        "answer": "Paris"
    }
    assert parse_reply({"type": "regex", "pattern": r"\[(.*?)\]", "field": "label"}, "so [positive].") == {
        "label": "positive"
    }
    for parse, reply in (
        ({"type": "json"}, "not json"),
        ({"type": "json"}, "[1]"),
        ({"type": "regex", "pattern": "x(y)", "field": "a"}, "z"),
    ):
        with pytest.raises(UnusableOutput):
            parse_reply(parse, reply)
    assert render("Q: {question} ({n})", {"question": "Why?", "n": 2}) == "Q: Why? (2)"
    with pytest.raises(UnusableOutput, match="lacks"):
        render("{missing}", {})


def test_an_unreadable_reply_is_one_items_unusable_output() -> None:
    config = openai_config("", parse={"type": "json"})
    with serve_in_thread(fake_openai_app(lambda p: '{"translation": "ok"}' if "Il" in p else "nope")) as url:
        predictor = OpenAIBackend().load({**config, "url": url + "/v1"})
        try:
            good, bad = predictor.predict([{"source": "Il pleut."}, {"source": "Le chien est blanc."}])
        finally:
            predictor.close()
    assert good["translation"] == "ok"
    assert "not JSON" in bad["unusable"] and bad["generation"]["text"] == "nope"
    with pytest.raises(ValueError, match="not JSON"):
        TRANSLATE.read_model_output(bad)


def test_openai_config_problems_and_outbound_policy() -> None:
    backend = OpenAIBackend()
    problems = backend.check_config(
        {
            "url": "ftp://x",
            "prompt": "{a.b}",
            "parse": {"type": "regex", "pattern": "("},
            "temperature": 3,
            "seed": 1.5,
            "stop": ["a"] * 5,
            "nope": 1,
        }
    )
    text = " | ".join(problems)
    for expected in (
        "unknown config key",
        '"url"',
        '"model"',
        "plain field name",
        "regular expression",
        '"temperature"',
        '"seed"',
        '"stop"',
    ):
        assert expected in text, expected
    assert backend.check_config(openai_config("http://127.0.0.1:1")) == []
    assert backend.outbound_urls({"url": "https://x.example/v1"}) == ["https://x.example/v1"]
    with pytest.raises(InferenceError, match="outbound policy"):
        backend.load(openai_config("http://10.0.0.1"))
    with pytest.raises(InferenceError, match="unreachable"):
        backend.load(openai_config("http://127.0.0.1:9"))


# -------------------------------------------------------------------------------------------------- kserve backend
def nli_infer(inputs: dict[str, list[Any]]) -> dict[str, list[Any]]:
    labels = ["entailment" if "dog" in h else "contradiction" for h in inputs["text_input"]]
    probabilities = [[0.8, 0.2] if label == "entailment" else [0.1, 0.9] for label in labels]
    return {"label": labels, "probs": probabilities}


def test_kserve_backend_sends_tensors_and_reads_outputs() -> None:
    seen: list[dict[str, Any]] = []
    with serve_in_thread(fake_kserve_app("nli", nli_infer, requests=seen)) as url:
        config = {
            "url": url,
            "model": "nli",
            "inputs": {"hypothesis": "text_input"},
            "outputs": {"label": "label"},
            "probabilities": {"tensor": "probs", "labels": ["entailment", "contradiction"]},
            "max_batch": 2,
        }
        assert KServeBackend().check_config(config) == []
        predictor = KServeBackend().load(config)
        try:
            outputs = predictor.predict(
                [{"hypothesis": "a dog", "n": 1}, {"hypothesis": "a cat", "n": 2}, {"hypothesis": "dogs", "n": 3}]
            )
        finally:
            predictor.close()
        with pytest.raises(InferenceError, match="not ready"):
            KServeBackend().load({**config, "model": "other"})
    assert [o["label"] for o in outputs] == ["entailment", "contradiction", "entailment"]
    assert outputs[1]["probabilities"] == {"entailment": 0.1, "contradiction": 0.9}
    assert len(seen) == 2  # max_batch 2: three inputs in two requests
    tensors = {t["name"]: t for t in seen[0]["inputs"]}
    assert tensors["text_input"] == {
        "name": "text_input",
        "shape": [2],
        "datatype": "BYTES",
        "data": ["a dog", "a cat"],
    }
    assert tensors["n"]["datatype"] == "INT64"
    assert {o["name"] for o in seen[0]["outputs"]} == {"label", "probs"}


def test_kserve_config_problems() -> None:
    problems = " | ".join(KServeBackend().check_config({"url": "x", "outputs": {}, "probabilities": {"tensor": "p"}}))
    for expected in ('"url"', '"model"', '"outputs" must name', '"probabilities"'):
        assert expected in problems, expected


def test_a_stream_cut_short_is_an_error_not_a_short_reply() -> None:
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    async def models(request):
        return JSONResponse({"data": []})

    async def cut(request):
        async def events():
            yield b'data: {"choices": [{"index": 0, "delta": {"content": "The"}, "finish_reason": null}]}\n\n'

        return StreamingResponse(events(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/models", models), Route("/v1/chat/completions", cut, methods=["POST"])])
    with serve_in_thread(app) as url:
        predictor = OpenAIBackend().load(openai_config(url))
        try:
            with pytest.raises(InferenceError, match="stream ended before the reply did"):
                predictor.predict([{"source": "Il pleut."}])
        finally:
            predictor.close()
