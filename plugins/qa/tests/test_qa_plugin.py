"""The qa task plugin: its declaration and registration, validation of spans, the fooled rule, its two metrics,
the MiniLM span model on handwritten passages, and training end to end on a tiny handwritten SQuAD file.

Every passage, question and answer here is written for these tests (or taken from the plugin's own demo contexts).
"""

from __future__ import annotations

import json
import math
import re

import pytest

import dynaforge_qa.plugin as qa_plugin
from dynaforge import InvalidInput
from dynaforge.plugins import Plugins
from dynaforge_qa.plugin import QATask
from dynaforge_qa.scoring import normalize_answer, span_exact_match, span_f1, token_f1

PASSAGE = (
    "The Orland lighthouse stands on a granite spur at the northern end of Fenwick Bay. It was lit for the first "
    "time in 1874, and its lamp could be seen from 32 kilometres away in clear weather. The first keeper, Jonas "
    "Brell, kept the light for twenty-six years before handing it to his daughter Ada. An automatic lamp replaced "
    "the keepers in 1963, and the old keeper's cottage is now a small museum of shipwrecks."
)
CONTEXT = {"passage": PASSAGE}


def span(text: str, passage: str = PASSAGE, after: int = 0) -> dict:
    """The span of the first ``text`` in ``passage`` at or after ``after``."""
    start = passage.index(text, after)
    return {"text": text, "start": start}


@pytest.fixture(scope="module")
def plugins():
    p = Plugins(allowlist=set())  # the core defaults only, whatever else is installed
    p.register(qa_plugin, "qa")
    try:
        yield p
    finally:
        p.unregister("qa")


@pytest.fixture(scope="module")
def task(plugins):
    return plugins.task("qa")


@pytest.fixture(scope="module")
def model(plugins, task):
    """The default target model, loaded once through the core's python backend."""
    return plugins.registry.backends["python"].load(task.default_target_models[0].config)


# --------------------------------------------------------------------------- declaration and registration


def test_declaration_and_registration(plugins, task):
    assert "qa" not in plugins.errors
    assert isinstance(task, QATask)
    assert task.check_declaration() == []
    assert (task.code, task.name) == ("qa", "Question answering")
    assert [(f.name, f.role.value) for f in task.fields] == [
        ("passage", "context"),
        ("question", "input"),
        ("answer", "target"),
    ]
    assert task.fields[2].context_field == "passage"
    assert task.fields[0].max_length >= 6000
    # every metric and perturbation the task names is registered, the metrics by this plugin
    assert task.principal_metric == "span_f1" and task.principal_metric in task.metrics
    assert set(task.metrics) <= set(plugins.registry.metrics)
    assert {plugins.registry.owners[("metrics", m)] for m in task.metrics} == {"qa"}
    assert set(task.perturbations) <= set(plugins.registry.perturbations)
    schema = task.json_schema()
    assert schema["properties"]["answer"]["x-span-of"] == "passage"


def test_demo_contexts_are_valid_passages(task):
    assert 5 <= len(task.demo_contexts) <= 6
    for context in task.demo_contexts:
        assert task.validate_context(context) == context
        sentences = re.split(r"(?<=[.!?])\s+", context["passage"])
        assert 4 <= len(sentences) <= 8, context["passage"][:40]
    assert len({c["passage"] for c in task.demo_contexts}) == len(task.demo_contexts)


def test_importing_the_plugin_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, dynaforge_qa.plugin; print('torch' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


# --------------------------------------------------------------------------- validation


def test_valid_example_is_kept_exactly(task):
    answer = span("Jonas Brell")
    cleaned = task.validate_example({"question": "  Who was the first keeper?  ", "answer": answer}, CONTEXT)
    assert cleaned == {"question": "Who was the first keeper?", "answer": answer}
    # the passage is the text spans point into: it is kept exactly as written, surrounding spaces included
    passage = "  " + PASSAGE + "\n"
    cleaned = task.validate_example(
        {"passage": passage, "question": "When was it automated?", "answer": span("1963", passage)}, None
    )
    assert cleaned["passage"] == passage


def rules(task, values, context=CONTEXT) -> list[tuple[str, str]]:
    with pytest.raises(InvalidInput) as caught:
        task.validate_example(values, context)
    return [(e.field, e.rule) for e in caught.value.field_errors]


def test_invalid_examples_name_field_and_rule(task):
    good = {"question": "Who was the first keeper?", "answer": span("Jonas Brell")}
    moved = {"text": "Jonas Brell", "start": good["answer"]["start"] + 1}
    assert rules(task, {**good, "answer": moved}) == [("answer", "span_in_context")]
    assert rules(task, {**good, "answer": "Jonas Brell"}) == [("answer", "type")]
    assert rules(task, {**good, "answer": {"text": "Jonas", "start": -1}}) == [("answer", "type")]
    assert rules(task, {"question": "Who?", "answer": good["answer"]}) == [("question", "min_length")]
    assert rules(task, {"question": good["question"]}) == [("answer", "required")]
    assert rules(task, {**good, "passage": PASSAGE}) == [("passage", "role")]
    assert rules(task, {**good, "reason": "x"}) == [("reason", "unknown_field")]
    # a passage that is too short to ask about, when the example brings its own context
    assert ("passage", "min_length") in rules(task, {**good, "passage": "Too short."}, None)


# --------------------------------------------------------------------------- fooled rule and metrics


def test_squad_normalisation_and_f1():
    assert normalize_answer("  The  Orland, lighthouse! ") == "orland lighthouse"
    assert normalize_answer("an apple and a pear") == "apple and pear"
    assert token_f1("the Orland lighthouse", "Orland lighthouse.") == 1.0
    assert token_f1("in 1874", "1874") == pytest.approx(2 / 3)
    assert token_f1("1963", "1874") == 0.0
    assert token_f1("the", "a") == 1.0  # both normalise to nothing


@pytest.mark.parametrize(
    ("guess", "fooled"),
    [
        ("Jonas Brell", False),
        ("jonas brell.", False),  # case and punctuation do not count
        ("The first keeper, Jonas Brell", False),  # F1 2/3
        ("Brell", False),  # F1 2/3
        ("first keeper Jonas Brell kept the light", False),  # precision 2/6, recall 1: F1 0.5
        ("The first keeper, Jonas Brell, kept the light for twenty-six years", True),  # F1 4/11: too long
        ("Ada", True),
    ],
)
def test_fooled_when_word_f1_is_below_0_4(task, guess, fooled):
    example = {"question": "Who was the first keeper?", "answer": span("Jonas Brell")}
    prediction = {"answer": {"text": guess, "start": 0}}
    expected = token_f1(guess, "Jonas Brell") < 0.4
    assert expected is fooled
    assert task.is_fooled(example, prediction, CONTEXT) is fooled
    # The annotate page shows why: the overlap against the threshold that decided.
    explained = task.explain_verdict(example, prediction, CONTEXT)
    assert (explained.score, explained.threshold, explained.fooled) == (token_f1(guess, "Jonas Brell"), 0.4, fooled)


def test_fooled_boundary_is_strict(task):
    example = {"question": "Which colours?", "answer": {"text": "red green blue yellow", "start": 0}}
    # one word of four: precision 1, recall 1/4, F1 exactly 0.4 -> not fooled; one of five: 1/3 -> fooled
    assert task.is_fooled(example, {"answer": {"text": "green", "start": 0}}, {}) is False
    example["answer"]["text"] = "red green blue yellow white"
    assert task.is_fooled(example, {"answer": {"text": "green", "start": 0}}, {}) is True


def test_metrics_are_mean_span_f1_and_exact_match(plugins):
    golds = [span("Jonas Brell"), span("1874"), span("32 kilometres")]
    preds = [span("Jonas Brell"), {"text": "in 1874", "start": 0}, span("1963")]
    f1 = plugins.registry.metrics["span_f1"].compute
    em = plugins.registry.metrics["exact_match"].compute
    assert f1(golds, preds) == pytest.approx((1 + 2 / 3 + 0) / 3)
    assert em(golds, preds) == pytest.approx(1 / 3)
    assert f1(golds, golds) == em(golds, golds) == 1.0
    assert span_f1([], []) == span_exact_match([], []) == 0.0
    assert span_f1([golds[0]], [None]) == 0.0  # no prediction scores nothing
    with pytest.raises(ValueError, match="differ in length"):
        span_f1(golds, preds[:2])


# --------------------------------------------------------------------------- reading model outputs


def test_read_model_output_accepts_spans_of_the_passage(task):
    output = {"answer": span("1874"), "confidence": 0.8, "extra": 1}
    assert task.read_model_output(output) == {"answer": span("1874"), "confidence": 0.8}
    assert task.read_model_output(output, {"passage": PASSAGE, "question": "When?"})["answer"] == span("1874")


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ({"confidence": 0.3}, "lacks the target field 'answer'"),
        ({"answer": "1874"}, "not a span of the passage"),
        ({"answer": {"text": "", "start": 3}}, "non-empty"),
        ({"answer": {"text": "1874", "start": -2}}, "non-negative"),
        ({"answer": {"text": "1874", "start": 0}, "confidence": 1.5}, "between 0 and 1"),
        ({"answer": {"text": "1874", "start": 0}, "confidence": math.nan}, "between 0 and 1"),
    ],
)
def test_read_model_output_rejects_malformed_answers(task, output, message):
    with pytest.raises(ValueError, match=message):
        task.read_model_output(output)


def test_read_model_output_rejects_a_span_not_in_the_passage(task):
    wrong = {"answer": {"text": "1874", "start": 3}}
    with pytest.raises(ValueError, match="does not occur at offset 3 of passage"):
        task.read_model_output(wrong, {"passage": PASSAGE, "question": "When was it first lit?"})


# --------------------------------------------------------------------------- the default target model

LONG_PASSAGE = " ".join(c["passage"] for c in QATask.demo_contexts) + " " + PASSAGE  # several encoder windows


def test_model_answers_with_spans_of_each_passage(task, model):
    inputs = [
        {"passage": PASSAGE, "question": "In which year was the lighthouse first lit?"},
        {"passage": PASSAGE, "question": "Who was the first keeper?"},
        {"passage": PASSAGE, "question": "When did an automatic lamp replace the keepers?"},
        {"passage": LONG_PASSAGE, "question": "What is the old keeper's cottage used for now?"},
        {"passage": LONG_PASSAGE, "question": "Who found the lost copy of the score of The Salt Bride?"},
    ]
    outputs = model.predict(inputs)
    assert len(outputs) == len(inputs)
    for item, output in zip(inputs, outputs, strict=False):
        assert set(output) == {"answer", "confidence"}
        answer = output["answer"]
        assert (
            answer["text"]
            and item["passage"][answer["start"] : answer["start"] + len(answer["text"])] == answer["text"]
        )
        assert 0.0 <= output["confidence"] <= 1.0
        assert task.read_model_output(output, item)["answer"] == answer
    # a trained head, not a random one: it gets most of the plainly worded questions right
    answers = [o["answer"]["text"] for o in outputs[:3]]
    assert sum(a == gold for a, gold in zip(answers, ["1874", "Jonas Brell", "1963"], strict=False)) >= 2, answers


def test_long_passages_are_split_into_windows_that_map_back(model):
    from dynaforge_qa.model import encode_windows

    windows = encode_windows(
        model.encoder, ["Who kept the light?"], [LONG_PASSAGE], max_length=model.max_length, stride=model.stride
    )
    assert windows.states.shape[0] >= 3 and set(windows.sample.tolist()) == {0}
    spans = [windows.offsets[w][windows.passage[w]].tolist() for w in range(windows.states.shape[0])]
    assert spans[0][0][0] == 0 and spans[-1][-1][1] == len(LONG_PASSAGE.rstrip())
    for before, after in zip(spans, spans[1:], strict=False):
        assert after[0][0] < before[-1][1]  # consecutive windows overlap
    words = {LONG_PASSAGE[a:b].lower() for window in spans for a, b in window}
    assert {"canal", "moth", "opera", "lighthouse"} <= words  # from the first passage to the last


def test_model_batch_does_not_change_answers(model):
    alone = {"passage": PASSAGE, "question": "How far away could the lamp be seen?"}
    other = {"passage": LONG_PASSAGE, "question": "How many locks does the canal have?"}
    [single] = model.predict([alone])
    batched = model.predict([other, alone])[1]
    assert batched["answer"] == single["answer"]
    assert batched["confidence"] == pytest.approx(single["confidence"], abs=1e-4)


def test_model_length_and_bad_inputs(model):
    short = model.length({"passage": PASSAGE, "question": "Who?"})
    assert isinstance(short, int) and 0 < short < model.length({"passage": LONG_PASSAGE, "question": "Who?"})
    assert model.predict([]) == []
    with pytest.raises(ValueError, match="question"):
        model.predict([{"passage": PASSAGE}])
    with pytest.raises(ValueError, match="passage"):
        model.predict([{"passage": "  ", "question": "Who kept the light?"}])


# --------------------------------------------------------------------------- training end to end

# (question, answer) pairs about the plugin's demo passages and PASSAGE, in the order of PASSAGES below
QUESTIONS = [
    [
        ("When did work on the canal begin?", "1788"),
        ("Who was the canal's engineer?", "Agnes Pell"),
        ("How many locks are at Crane Hill?", "nine"),
    ],
    [
        ("Where does the pale lantern moth live?", "the cloud forests of the Serra Alta"),
        ("What do the caterpillars eat?", "the leaves of the mountain laurel"),
    ],
    [("When was the guild disbanded?", "1889"), ("How long did apprentices serve?", "five years")],
    [("How long is the race?", "about 780 kilometres"), ("Who won three editions in a row?", "Marta Ilves")],
    [("Who conducted the premiere?", "her brother Pavel"), ("Where was the lost copy found?", "in the attic")],
    [("When was the cooperative formed?", "1978"), ("How many people does it employ?", "about 210 people")],
    [("Who was the first keeper?", "Jonas Brell"), ("When was the automatic lamp installed?", "1963")],
]
PASSAGES = [c["passage"] for c in QATask.demo_contexts] + [PASSAGE]


def write_squad(folder):
    """A tiny SQuAD 2.0 file: two articles, one unanswerable question and one answer at a wrong offset."""
    paragraphs = []
    for p, (passage, pairs) in enumerate(zip(PASSAGES, QUESTIONS, strict=False)):
        qas = [
            {
                "id": f"q{p}-{n}",
                "question": q,
                "is_impossible": False,
                "answers": [{"text": a, "answer_start": passage.index(a)}],
            }
            for n, (q, a) in enumerate(pairs)
        ]
        paragraphs.append({"context": passage, "qas": qas})
    paragraphs[0]["qas"].append(
        {
            "id": "none",
            "question": "Who painted the locks?",
            "is_impossible": True,
            "answers": [],
            "plausible_answers": [{"text": "Agnes Pell", "answer_start": 0}],
        }
    )
    paragraphs[1]["qas"][0]["answers"].append({"text": "Serra Alta", "answer_start": 0})  # not at offset 0
    data = {
        "version": "v2.0",
        "data": [
            {"title": "Invented", "paragraphs": paragraphs[:4]},
            {"title": "Also invented", "paragraphs": paragraphs[4:]},
        ],
    }
    folder.mkdir()
    (folder / "squad_v2_dev_sample.json").write_text(json.dumps(data), encoding="utf-8")


def test_train_end_to_end_on_a_tiny_file(tmp_path, task):
    import hashlib

    from dynaforge_qa.model import load

    write_squad(tmp_path / "data")
    out = tmp_path / "weights"
    metrics = task.train(tmp_path / "data", out, progress=False, epochs=2)
    assert metrics["holdout_paragraphs"] == 1 and metrics["holdout_questions"] >= 2
    assert metrics["epochs"] in (1, 2) and len(metrics["validation_f1_by_epoch"]) == 2
    for key in ("holdout_f1", "holdout_exact_match", "baseline_first_sentence_f1", "baseline_sliding_window_f1"):
        assert 0.0 <= metrics[key] <= 100.0
    head = out / "head.safetensors"
    assert 0 < head.stat().st_size < 5 * 1024 * 1024
    meta = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    data_file = tmp_path / "data" / "squad_v2_dev_sample.json"
    assert meta["data"]["file"]["sha256"] == hashlib.sha256(data_file.read_bytes()).hexdigest()
    assert meta["data"]["skipped"] == {"unanswerable_questions": 1, "answers_not_at_their_offset": 1}
    split = meta["data"]
    assert split["fit"]["paragraphs"] + split["validation"]["paragraphs"] + split["holdout"]["paragraphs"] == 7
    assert meta["metrics"]["holdout"]["model"]["f1"] == metrics["holdout_f1"]
    # the trained head loads and answers with spans of the passage
    trained = load(weights_dir=out)
    [output] = trained.predict([{"passage": PASSAGE, "question": "Who was the first keeper?"}])
    assert task.read_model_output(output, {"passage": PASSAGE})["answer"]["text"]


def test_train_reports_a_missing_data_file(tmp_path, task):
    with pytest.raises(FileNotFoundError, match="squad_v2_dev_sample.json"):
        task.train(tmp_path, tmp_path / "weights", progress=False)
