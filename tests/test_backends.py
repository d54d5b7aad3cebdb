"""The core's model backends: transformers (classification, extractive QA) on tiny models built here, and the
http backend against the reference model server running on loopback."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from support import free_port, serve_in_thread

from dynaforge.defaults.backends import HttpBackend, TransformersBackend
from dynaforge.inference.backends import InferenceError, InferenceTimeout
from dynaforge.inference.http_server import create_model_server, serve_model

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "a",
    "an",
    "cat",
    "dog",
    "sat",
    "ran",
    "on",
    "under",
    "mat",
    "rug",
    "what",
    "where",
    "who",
    "is",
    "was",
    "did",
    ".",
    "?",
    ",",
    "zebra",
    "alpha",
    "omega",
    "good",
    "bad",
    "film",
]
TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37)


# ------------------------------------------------------------------------------------------------ tiny models


def _tokenizer():
    from transformers import BertTokenizer

    return BertTokenizer(vocab={word: i for i, word in enumerate(VOCAB)})


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory) -> Path:
    """A randomly initialised three-label BERT classifier saved with its tokenizer."""
    pytest.importorskip("torch")
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    labels = {0: "neg", 1: "neu", 2: "pos"}
    config = BertConfig(vocab_size=len(VOCAB), id2label=labels, label2id={v: k for k, v in labels.items()}, **TINY)
    folder = tmp_path_factory.mktemp("classifier")
    BertForSequenceClassification(config).save_pretrained(folder)
    _tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def qa_dir(tmp_path_factory) -> Path:
    """A BERT QA model rigged so that answers are predictable: every layer is reduced to its residual path, so
    a token's final state is its (layer-normed) word embedding; the start logit reads dimension 0 and the end logit
    dimension 1. "alpha" is a strong start, "omega" a strong end and "zebra" both, wherever they stand."""
    pytest.importorskip("torch")
    import torch
    from transformers import BertConfig, BertForQuestionAnswering

    torch.manual_seed(0)
    model = BertForQuestionAnswering(BertConfig(vocab_size=len(VOCAB), max_position_embeddings=512, **TINY))
    with torch.no_grad():
        embeddings = model.bert.embeddings
        embeddings.position_embeddings.weight.zero_()
        embeddings.token_type_embeddings.weight.zero_()
        words = embeddings.word_embeddings.weight
        words[:, :2] = 0.0
        for word, dims in (("alpha", [0]), ("omega", [1]), ("zebra", [0, 1])):
            row = words[VOCAB.index(word)]
            row.zero_()
            row[dims] = 10.0
        for layer in model.bert.encoder.layer:
            for dense in (layer.attention.output.dense, layer.output.dense):
                dense.weight.zero_()
                dense.bias.zero_()
        model.qa_outputs.weight.zero_()
        model.qa_outputs.bias.zero_()
        model.qa_outputs.weight[0, 0] = 1.0
        model.qa_outputs.weight[1, 1] = 1.0
    folder = tmp_path_factory.mktemp("qa")
    model.save_pretrained(folder)
    _tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def classifier(classifier_dir):
    return TransformersBackend().load({"path": str(classifier_dir), "text_fields": ["text"]})


@pytest.fixture(scope="module")
def qa(qa_dir):
    return TransformersBackend().load({"path": str(qa_dir), "max_length": 32, "doc_stride": 8})


# ------------------------------------------------------------------------------------- transformers: classification


def test_classifier_outputs_one_label_and_distribution_per_input(classifier):
    outputs = classifier.predict([{"text": "a good film"}, {"text": "the dog ran under the rug ."}, {"text": "bad"}])
    assert len(outputs) == 3
    for output in outputs:
        assert set(output) == {"label", "probabilities"}
        assert set(output["probabilities"]) == {"neg", "neu", "pos"}
        assert sum(output["probabilities"].values()) == pytest.approx(1.0, abs=1e-5)
        assert output["label"] == max(output["probabilities"], key=output["probabilities"].get)
    assert classifier.predict([]) == []


def test_classifier_batch_matches_one_by_one(classifier):
    """Dynamic padding must not change a prediction: a short input padded next to a long one scores the same."""
    inputs = [{"text": "good"}, {"text": "the cat sat on the mat , the dog ran under the rug . " * 3}]
    batched = classifier.predict(inputs)
    for item, together in zip(inputs, batched, strict=True):
        alone = classifier.predict([item])[0]
        assert alone["label"] == together["label"]
        for label, p in alone["probabilities"].items():
            assert together["probabilities"][label] == pytest.approx(p, abs=1e-5)


def test_classifier_label_map_merges_model_labels(classifier_dir, classifier):
    mapped = TransformersBackend().load(
        {"path": str(classifier_dir), "label_map": {"neg": "no", "neu": "no", "pos": "yes"}, "target_field": "verdict"}
    )
    item = {"text": "a bad film"}
    raw = classifier.predict([item])[0]["probabilities"]
    output = mapped.predict([item])[0]
    assert set(output) == {"verdict", "probabilities"}
    assert output["probabilities"]["no"] == pytest.approx(raw["neg"] + raw["neu"], abs=1e-5)
    assert output["probabilities"]["yes"] == pytest.approx(raw["pos"], abs=1e-5)
    assert output["verdict"] == ("no" if raw["neg"] + raw["neu"] >= raw["pos"] else "yes")


def test_classifier_pairs_truncation_and_field_errors(classifier_dir):
    model = TransformersBackend().load({"path": str(classifier_dir), "text_fields": ["a", "b"], "max_length": 16})
    outputs = model.predict([{"a": "the cat " * 40, "b": "the dog " * 40}, {"a": "good", "b": "bad"}])
    assert [o["label"] in {"neg", "neu", "pos"} for o in outputs] == [True, True]
    with pytest.raises(ValueError, match="input 1 has no text field 'b'"):
        model.predict([{"a": "x", "b": "y"}, {"a": "x"}])
    assert model.length({"a": "x" * 4000, "b": "y"}) == 16  # capped by max_length: truncation
    assert model.length({"a": "good", "b": "film"}) < model.length({"a": "good " * 10, "b": "film"})


def test_classifier_without_text_fields_takes_the_string_fields(classifier_dir):
    model = TransformersBackend().load({"path": str(classifier_dir)})
    assert len(model.predict([{"text": "good", "id": 3}])) == 1
    with pytest.raises(ValueError, match='set "text_fields"'):
        model.predict([{"x": "a", "y": "b", "z": "c"}])


def test_label_map_naming_an_unknown_model_label_fails_at_load(classifier_dir):
    with pytest.raises(ValueError, match="'LABEL_7'.*its labels are 'neg', 'neu', 'pos'"):
        TransformersBackend().load({"path": str(classifier_dir), "label_map": {"LABEL_7": "x"}})


# ------------------------------------------------------------------------------------ transformers: question answering


def _check_span(output: dict[str, Any], context: str) -> dict[str, Any]:
    answer = output["answer"]
    assert set(output) == {"answer", "confidence"} and set(answer) == {"text", "start"}
    assert context[answer["start"] : answer["start"] + len(answer["text"])] == answer["text"]
    assert 0.0 <= output["confidence"] <= 1.0
    return answer


def test_qa_detected_from_architecture_and_finds_the_span(qa):
    assert type(qa).__name__ == "TransformersQuestionAnswerer"
    context = "the cat sat on the zebra rug ."
    # "zebra" in the question scores as high as in the context: only context tokens may be chosen.
    output = qa.predict([{"question": "where is the zebra ?", "passage": context}])[0]
    assert _check_span(output, context) == {"text": "zebra", "start": context.index("zebra")}
    assert output["confidence"] > 0.5


def test_qa_multi_token_span_and_length_cap(qa_dir, qa):
    context = "a dog ran , alpha cat sat on the omega mat ."
    answer = _check_span(qa.predict([{"question": "what ?", "passage": context}])[0], context)
    assert answer == {"text": "alpha cat sat on the omega", "start": context.index("alpha")}
    capped = TransformersBackend().load({"path": str(qa_dir), "max_answer_tokens": 3})
    short = _check_span(capped.predict([{"question": "what ?", "passage": context}])[0], context)
    assert 1 <= len(short["text"].split()) <= 3 and short["text"] != answer["text"]


def test_qa_long_context_is_split_into_windows(qa_dir, qa):
    filler = "the cat sat on the mat . " * 12  # 84 tokens: several 32-token windows
    late = filler + "the dog ran under the zebra ."
    early = "the zebra ran . " + filler
    encoded = qa.tokenizer(
        "where ?", late, truncation="only_second", max_length=32, stride=8, return_overflowing_tokens=True
    )
    assert len(encoded["input_ids"]) > 3
    outputs = qa.predict([{"question": "where ?", "passage": late}, {"question": "who ?", "passage": early}])
    assert _check_span(outputs[0], late) == {"text": "zebra", "start": late.index("zebra")}
    assert _check_span(outputs[1], early) == {"text": "zebra", "start": early.index("zebra")}
    # a question longer than a window is cut rather than failing the batch
    long_question = {"question": "what is the cat ? " * 30, "passage": late}
    assert _check_span(qa.predict([long_question])[0], late)["text"] == "zebra"
    assert qa.length({"question": "where ?", "passage": late}) > qa.length({"question": "where ?", "passage": "a"})


def test_qa_batch_matches_one_by_one_and_empty_context(qa):
    inputs = [
        {"question": "who ?", "passage": "the cat sat on the mat and the dog ran , alpha sat omega ."},
        {"question": "where is the dog ?", "passage": "on the rug"},
    ]
    batched = qa.predict(inputs)
    for item, together in zip(inputs, batched, strict=True):
        alone = qa.predict([item])[0]
        assert alone["answer"] == together["answer"]
        assert alone["confidence"] == pytest.approx(together["confidence"], abs=1e-5)
    assert qa.predict([{"question": "who ?", "passage": ""}]) == [
        {"answer": {"text": "", "start": 0}, "confidence": 0.0}
    ]


def test_qa_custom_fields_and_missing_field(qa_dir):
    model = TransformersBackend().load(
        {
            "path": str(qa_dir),
            "task": "question-answering",
            "question_field": "q",
            "context_field": "ctx",
            "target_field": "span",
        }
    )
    output = model.predict([{"q": "what ?", "ctx": "an alpha dog ran omega"}])[0]
    assert output["span"] == {"text": "alpha dog ran omega", "start": 3}
    with pytest.raises(ValueError, match="input 0 has no text field 'ctx'"):
        model.predict([{"q": "what ?", "passage": "x"}])


def test_task_must_match_the_saved_architecture(qa_dir, classifier_dir):
    with pytest.raises(ValueError, match="not a …ForQuestionAnswering model"):
        TransformersBackend().load({"path": str(classifier_dir), "task": "question-answering"})
    with pytest.raises(ValueError, match="label_map do not apply to a question-answering model"):
        TransformersBackend().load({"path": str(qa_dir), "label_map": {"a": "b"}})


def test_missing_folder_says_the_path_and_that_downloads_are_off(tmp_path):
    pytest.importorskip("transformers")
    missing = tmp_path / "no-such-model"
    with pytest.raises(FileNotFoundError, match=f"{missing}.*hub downloads are off.*local_files_only"):
        TransformersBackend().load({"path": str(missing)})


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({}, 'needs "path"'),
        ({"path": "m", "max_lenght": 64}, "unknown config key(s) 'max_lenght'"),
        ({"path": "m", "task": "translation"}, '"task" must be'),
        ({"path": "m", "task": "sequence-classification", "doc_stride": 8}, "doc_stride do not apply"),
        ({"path": "m", "task": "question-answering", "label_map": {}}, "label_map do not apply"),
        ({"path": "m", "local_files_only": "yes"}, '"local_files_only" must be true or false'),
        ({"path": "m", "label_map": ["pos"]}, '"label_map" must be an object'),
        ({"path": "m", "text_fields": "text"}, '"text_fields" must be a list'),
        ({"path": "m", "text_fields": ["a", "b", "c"]}, '"text_fields" must be a list'),
        ({"path": "m", "max_length": 2}, '"max_length" must be an integer of at least 8'),
        ({"path": "m", "max_answer_tokens": 0}, '"max_answer_tokens" must be an integer'),
        ({"path": "m", "doc_stride": 200}, '"doc_stride" (200) must be less than half of "max_length" (384)'),
        ({"path": "m", "context_field": ""}, '"context_field" must be a non-empty string'),
    ],
)
def test_transformers_check_config_catches_bad_shapes(config, problem):
    problems = TransformersBackend().check_config(config)
    assert any(problem in p for p in problems), problems


def test_transformers_check_config_accepts_good_configs():
    backend = TransformersBackend()
    assert backend.check_config({"path": "/models/x"}) == []
    assert (
        backend.check_config(
            {
                "path": "m",
                "task": "sequence-classification",
                "label_map": {"LABEL_0": "a"},
                "text_fields": ["a", "b"],
                "max_length": 256,
                "local_files_only": False,
                "target_field": "label",
            }
        )
        == []
    )
    assert (
        backend.check_config(
            {
                "path": "m",
                "task": "question-answering",
                "question_field": "q",
                "context_field": "c",
                "target_field": "answer",
                "max_length": 256,
                "doc_stride": 64,
                "max_answer_tokens": 20,
            }
        )
        == []
    )


# ---------------------------------------------------------------------------------------------------------- http


class Echo:
    """A python model: labels by a keyword and records the size of every batch it gets."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def __call__(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.batches.append(len(inputs))
        if any(item.get("text") == "explode" for item in inputs):
            raise RuntimeError("the model exploded")
        outputs = []
        for item in inputs:
            p = 0.9 if "good" in item["text"] else 0.2
            outputs.append(
                {"label": "pos" if p > 0.5 else "neg", "n": item.get("n"), "probabilities": {"pos": p, "neg": 1 - p}}
            )
        return outputs


class Model:
    """A predictor around a plain function."""

    def __init__(self, fn) -> None:
        self.predict = fn


@pytest.fixture(scope="module")
def echo() -> Echo:
    return Echo()


@pytest.fixture(scope="module")
def echo_url(echo) -> Iterator[str]:
    with serve_in_thread(create_model_server(Model(echo), name="echo")) as url:
        yield url


def scripted(responses: list[tuple[int, str]], calls: list[int]) -> Starlette:
    """A model server answering /predict with ``responses`` in turn (the last one repeats); counts the calls."""

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def predict(request: Request) -> Response:
        status, body = responses[min(len(calls), len(responses) - 1)]
        calls.append(status)
        return Response(body, status_code=status, media_type="application/json")

    return Starlette(routes=[Route("/health", health), Route("/predict", predict, methods=["POST"])])


def _http(url: str, **config: Any):
    return HttpBackend().load({"url": url, "backoff_s": 0.01, **config})


def test_http_predicts_in_order_through_the_reference_server(echo_url):
    model = _http(echo_url)
    outputs = model.predict([{"text": "good film", "n": i} if i % 2 else {"text": "bad", "n": i} for i in range(7)])
    assert [o["n"] for o in outputs] == list(range(7))
    assert [o["label"] for o in outputs] == ["neg", "pos"] * 3 + ["neg"]
    assert outputs[1]["probabilities"] == {"pos": 0.9, "neg": pytest.approx(0.1)}
    assert model.predict([]) == []
    assert model.length({"text": "x" * 400}) > model.length({"text": "x"})
    model.close()


def test_http_max_batch_splits_big_batches(echo, echo_url):
    model = _http(echo_url, max_batch=3)
    echo.batches.clear()
    outputs = model.predict([{"text": "good", "n": i} for i in range(8)])
    assert echo.batches == [3, 3, 2]
    assert [o["n"] for o in outputs] == list(range(8))


def test_http_retries_503_then_succeeds():
    calls: list[int] = []
    ok = '{"outputs": [{"label": "pos"}]}'
    with serve_in_thread(scripted([(503, "busy"), (502, "bad gateway"), (200, ok)], calls)) as url:
        assert _http(url, retries=2).predict([{"text": "x"}]) == [{"label": "pos"}]
    assert calls == [503, 502, 200]


def test_http_gives_up_after_the_retries():
    calls: list[int] = []
    with (
        serve_in_thread(scripted([(503, "overloaded, come back later")], calls)) as url,
        pytest.raises(
            InferenceError, match=r"POST /predict answered 503 with a 27-byte body .*after 2 attempts"
        ) as caught,
    ):
        _http(url, retries=1).predict([{"text": "x"}])
    assert len(calls) == 2
    # What the server answered stays out of the error, as does its address: errors reach submitters and annotators.
    assert "overloaded" not in str(caught.value) and "127.0.0.1" not in str(caught.value)


@pytest.mark.parametrize("status", [400, 422, 500])
def test_http_never_retries_client_errors_or_model_failures(status):
    calls: list[int] = []
    with (
        serve_in_thread(scripted([(status, '{"error": "field text is missing"}')], calls)) as url,
        pytest.raises(InferenceError, match=f"answered {status} with a 34-byte body") as caught,
    ):
        _http(url, retries=3).predict([{"text": "x"}])
    assert calls == [status]
    assert "missing" not in str(caught.value)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('{"outputs": [{"label": "a"}]}', "expected 2 outputs, got 1"),
        ("<html>oops</html>", "answered a 17-byte body that is not JSON"),
        ('{"predictions": []}', 'no "outputs" list'),
        ('{"outputs": [{"label": "a"}, "b"]}', "output 1 is str, expected an object"),
    ],
)
def test_http_rejects_malformed_answers(body, problem):
    with serve_in_thread(scripted([(200, body)], [])) as url, pytest.raises(InferenceError, match=problem):
        _http(url).predict([{"text": "x"}, {"text": "y"}])


def test_http_times_out_on_a_slow_model():
    def slow(inputs):
        time.sleep(0.6)
        return [{"label": "late"} for _ in inputs]

    with serve_in_thread(create_model_server(Model(slow), name="slow")) as url:
        model = _http(url, timeout_s=0.15, retries=1)
        started = time.monotonic()
        with pytest.raises(InferenceTimeout, match=r"did not answer within 0.15s.*after 2 attempts"):
            model.predict([{"text": "x"}])
        assert time.monotonic() - started < 0.6


def test_http_load_fails_clearly_when_the_server_is_unreachable():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(InferenceError, match="the model server is unreachable") as caught:
        HttpBackend().load({"url": url, "timeout_s": 2})
    assert url not in str(caught.value)


def test_http_load_rejects_an_unhealthy_server():
    async def health(request: Request) -> Response:
        return JSONResponse({"status": "loading"}, status_code=503)

    with (
        serve_in_thread(Starlette(routes=[Route("/health", health)])) as url,
        pytest.raises(InferenceError, match="GET /health answered 503 with a 20-byte body"),
    ):
        HttpBackend().load({"url": url})


def test_http_sends_configured_headers_to_a_token_protected_server(echo):
    with serve_in_thread(create_model_server(Model(echo), name="echo", token="s3cret")) as url:
        authorised = _http(url, headers={"Authorization": "Bearer s3cret"})
        assert authorised.predict([{"text": "good"}])[0]["label"] == "pos"
        with pytest.raises(InferenceError, match="answered 401"):
            _http(url).predict([{"text": "good"}])


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({}, 'needs "url"'),
        ({"url": "ftp://models.example/x"}, 'needs "url"'),
        ({"url": "http://"}, 'needs "url"'),
        ({"url": "http://m", "timeout_s": 0}, '"timeout_s" must be a number of seconds above 0 and at most 60'),
        ({"url": "http://m", "timeout_s": 3600}, '"timeout_s" must be a number of seconds above 0 and at most 60'),
        ({"url": "http://m", "backoff_s": 30}, '"backoff_s" must be a number of seconds from 0 to 5'),
        ({"url": "http://m", "retries": -1}, '"retries" must be an integer from 0 to 10'),
        ({"url": "http://m", "retries": True}, '"retries" must be an integer'),
        ({"url": "http://m", "headers": {"Authorization": 3}}, '"headers" must be an object'),
        ({"url": "http://m", "max_batch": 0}, '"max_batch" must be a positive integer'),
        ({"url": "http://m", "timeout": 3}, "unknown config key(s) 'timeout'"),
    ],
)
def test_http_check_config_catches_bad_shapes(config, problem):
    problems = HttpBackend().check_config(config)
    assert any(problem in p for p in problems), problems


def test_http_check_config_accepts_a_full_config():
    config = {
        "url": "https://models.example/nli/",
        "timeout_s": 2.5,
        "retries": 0,
        "backoff_s": 0,
        "headers": {"Authorization": "Bearer t"},
        "max_batch": 16,
    }
    assert HttpBackend().check_config(config) == []


# ----------------------------------------------------------------------------------- the reference model server


def test_reference_server_contract(echo_url):
    with httpx.Client(base_url=echo_url, timeout=5) as client:
        assert client.get("/health").json() == {"status": "ok", "model": "echo"}
        answer = client.post("/predict", json={"inputs": [{"text": "good", "n": 1}]})
        assert answer.status_code == 200 and answer.json()["outputs"][0]["label"] == "pos"
        assert client.post("/predict", json={"inputs": []}).json() == {"outputs": []}
        for body, problem in [
            (b"not json", "the body is not JSON"),
            (b'{"input": []}', 'must be a JSON object {"inputs"'),
            (b'{"inputs": [{"text": "a"}, 3]}', "inputs[1] is int"),
        ]:
            bad = client.post("/predict", content=body)
            assert bad.status_code == 400 and problem in bad.json()["error"]
        failed = client.post("/predict", json={"inputs": [{"text": "explode"}]})
        assert failed.status_code == 500
        assert failed.json() == {"error": "model 'echo' failed: RuntimeError: the model exploded"}
        assert client.get("/predict").status_code == 405


def test_reference_server_refuses_malformed_model_outputs():
    shapes = {"few": lambda inputs: [], "nan": lambda inputs: [{"p": float("nan")} for _ in inputs]}
    app = Starlette(routes=[])
    for name, fn in shapes.items():
        app.mount(f"/{name}", create_model_server(Model(fn), name=name))
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=5) as client:
        few = client.post("/few/predict", json={"inputs": [{"text": "a"}]})
        assert few.status_code == 500 and "returned 0 outputs for 1 inputs" in few.json()["error"]
        nan = client.post("/nan/predict", json={"inputs": [{"text": "a"}]})
        assert nan.status_code == 500 and "not JSON" in nan.json()["error"]


def test_a_transformers_model_served_remotely_answers_like_the_local_one(classifier):
    with serve_in_thread(create_model_server(classifier, name="tiny-bert")) as url:
        remote = _http(url)
        inputs = [{"text": "a good film"}, {"text": "the dog ran"}]
        for here, there in zip(classifier.predict(inputs), remote.predict(inputs), strict=True):
            assert there["label"] == here["label"]
            assert there["probabilities"] == pytest.approx(here["probabilities"])


def test_serve_model_refuses_unknown_backends_and_bad_configs_before_listening():
    backends = {"http": HttpBackend()}
    with pytest.raises(ValueError, match="no model backend 'onnx' is registered; available: http"):
        serve_model("onnx", {}, backends=backends)
    with pytest.raises(ValueError, match="backend 'http': .*needs \"url\""):
        serve_model("http", {"url": "nowhere"}, backends=backends)
