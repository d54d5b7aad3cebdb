"""The sentiment task plugin: its declaration, validation, the three-way rule, the shipped model, the SST-style
importer and the trainer.

Every sentence here is written for these tests; nothing needs ../shared/data.
"""

from __future__ import annotations

import json
import math
from importlib.metadata import entry_points

import pytest

from dynaforge import InvalidInput, Role
from dynaforge.plugins import Plugins
from dynaforge_sentiment.importers import SSTImporter
from dynaforge_sentiment.model import LABELS, WEIGHTS_DIR, load, neutral_logit, read_metadata, three_way
from dynaforge_sentiment.plugin import SentimentTask
from dynaforge_sentiment.train import choose_band, read_tsv

POSITIVE = "What a wonderful, delightful afternoon; I loved every single minute of it and felt truly happy."
NEGATIVE = "This was a horrible, miserable experience and I hated every awful minute of it."

# Short phrases for the trainer, each one different: warm words are positive, cold ones negative.
THINGS = ("welcome", "film", "staff", "evening", "meal", "hotel")
GOOD = [f"a {w} {t}" for w in ("lovely", "delightful", "wonderful") for t in THINGS]
BAD = [f"a {w} {t}" for w in ("dreadful", "miserable", "awful") for t in THINGS]


@pytest.fixture(scope="module")
def task() -> SentimentTask:
    return Plugins(allowlist={"sentiment"}).task("sentiment")


@pytest.fixture(scope="module")
def model():
    return load()


# ------------------------------------------------------------------ declaration and validation


def test_plugin_registers_a_valid_declaration(task):
    assert isinstance(task, SentimentTask)
    assert task.check_declaration() == []
    roles = {f.name: f.role for f in task.fields}
    assert roles == {
        "prompt": Role.CONTEXT,
        "statement": Role.INPUT,
        "label": Role.TARGET,
        "explanation": Role.METADATA,
    }
    assert task.labels == ("positive", "negative", "neutral") and task.principal_metric == "accuracy"
    for context in task.demo_contexts:
        assert task.validate_context(context) == context


def test_entry_point_is_declared():
    names = {ep.name: ep.value for ep in entry_points(group="dynaforge")}
    assert names.get("sentiment") == "dynaforge_sentiment.plugin"


def test_a_good_example_is_cleaned_and_the_prompt_is_not_model_input(task):
    context = task.validate_context({"prompt": "Write about a train journey."})
    cleaned = task.validate_example({"statement": "  The train was late again.  ", "label": "negative"}, context)
    assert cleaned == {"statement": "The train was late again.", "label": "negative"}
    assert task.build_model_input(context, cleaned) == {"statement": "The train was late again."}
    assert task.is_fooled(cleaned, {"label": "positive"}, context) is True
    assert task.is_fooled(cleaned, {"label": "negative"}, context) is False


@pytest.mark.parametrize(
    ("values", "field", "rule"),
    [
        ({"statement": "The train was late.", "label": "furious"}, "label", "choice"),
        ({"label": "neutral"}, "statement", "required"),
        ({"statement": "ok", "label": "neutral"}, "statement", "min_length"),
        ({"statement": "The train was late.", "label": "neutral", "mood": "grey"}, "mood", "unknown_field"),
    ],
)
def test_a_bad_example_names_the_field_and_rule(task, values, field, rule):
    with pytest.raises(InvalidInput) as raised:
        task.validate_example(values, {})
    assert [(e.field, e.rule) for e in raised.value.field_errors] == [(field, rule)]


# ------------------------------------------------------------------ the three-way rule


@pytest.mark.parametrize("z", [-4.0, -0.3, 0.0, 0.2, 3.5])
def test_three_way_probabilities_sum_to_one_and_agree_with_the_label(z):
    out = three_way(z, band=0.1)
    assert tuple(out["probabilities"]) == LABELS
    assert math.isclose(sum(out["probabilities"].values()), 1.0, abs_tol=1e-9)
    assert out["label"] == max(out["probabilities"], key=out["probabilities"].get)


def test_three_way_is_neutral_inside_the_band_only():
    assert three_way(0.0, band=0.1)["label"] == "neutral"
    assert three_way(3.0, band=0.1)["label"] == "positive"
    assert three_way(-3.0, band=0.1)["label"] == "negative"
    no_band = three_way(0.1, band=0.0)
    assert no_band["label"] == "positive" and no_band["probabilities"]["neutral"] == 0.0


@pytest.mark.parametrize("band", [0.0, 0.5, -0.1])
def test_neutral_logit_refuses_a_band_outside_the_open_interval(band):
    with pytest.raises(ValueError, match="band must be in"):
        neutral_logit(band)


def test_choose_band_keeps_the_requested_share_inside():
    p = [0.5 + d for d in (0.01, -0.02, 0.03, 0.2, -0.3, 0.4, -0.45, 0.1, -0.15, 0.25)]
    band = choose_band(p, share=0.3)
    assert sum(abs(v - 0.5) < band for v in p) == 3
    with pytest.raises(ValueError, match="no held-out rows"):
        choose_band([])


# ------------------------------------------------------------------ the shipped model


def test_model_reads_clear_sentiment_and_answers_in_the_task_shape(task, model):
    outputs = model.predict([{"statement": POSITIVE}, {"statement": NEGATIVE}])
    assert [o["label"] for o in outputs] == ["positive", "negative"]
    for out in outputs:
        assert task.read_model_output(out)["label"] == out["label"]
    assert model.predict([]) == []
    with pytest.raises(ValueError, match="statement"):
        model.predict([{"text": POSITIVE}])


def test_shipped_weights_say_what_they_are():
    metadata = read_metadata()
    assert metadata["format"] == "dynaforge-sentiment-head/1"
    assert 0.0 < metadata["neutral_band"] < 0.5
    dev = metadata["metrics"]["dev"]
    assert dev["binary_accuracy"] > dev["majority_baseline_accuracy"]
    # the encoder is fine-tuned: the adapter ships beside the head, and its record names the run
    assert metadata["encoder"]["fine_tuned"] is True
    assert (WEIGHTS_DIR / metadata["encoder"]["adapter"]["file"]).is_file()
    assert not metadata["encoder"]["adapter"]["stopped_by_time_limit"]


# ------------------------------------------------------------------ importer and trainer


def _write_tsv(path, rows) -> None:
    path.write_text("sentence\tlabel\n" + "".join(f"{s}\t{y}\n" for s, y in rows), encoding="utf-8")


def test_importer_converts_rows_and_skips_fragments(task, tmp_path):
    path = tmp_path / "rows.tsv"
    _write_tsv(path, [("a lovely warm welcome", 1), ("ok", 0), ("truly awful noise", 0)])
    importer = SSTImporter()
    converted = [importer.convert(text, where, task) for where, text in importer.records(path)]
    assert [getattr(c, "fields", None) for c in converted] == [
        {"statement": "a lovely warm welcome", "label": "positive"},
        None,
        {"statement": "truly awful noise", "label": "negative"},
    ]
    assert "shorter than the 3 characters" in converted[1].reason


def test_importer_and_reader_refuse_a_wrong_header_or_label(tmp_path):
    path = tmp_path / "rows.tsv"
    path.write_text("text\tscore\na sentence\t1\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="header"):
        list(SSTImporter().records(path))
    with pytest.raises(ValueError, match="expected header"):
        read_tsv(path)
    _write_tsv(path, [("a sentence", 7)])
    with pytest.raises(ValueError, match=r":2: expected 'sentence<TAB>0\|1'"):
        read_tsv(path)


def test_train_end_to_end_on_tiny_data(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    _write_tsv(data / "sst2_train.tsv", [(s, 1) for s in GOOD[:15]] + [(s, 0) for s in BAD[:15]])
    _write_tsv(data / "sst2_dev.tsv", [(s, 1) for s in GOOD[15:]] + [(s, 0) for s in BAD[15:]])
    metrics = SentimentTask().train(data, out, progress=False, limit=24)
    metadata = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["data"]["train_rows_used"] == 24 and metadata["data"]["limit"] == 24
    assert metrics["dev_size"] == 6 and 0.0 < metrics["neutral_band"] < 0.5
    assert (out / "head.safetensors").stat().st_size < 5 * 2**20
    trained = load(weights_dir=out)
    assert trained.metadata["weights"]["path"] == str(out)
    [warm, cold] = trained.predict([{"statement": "a lovely wonderful meal"}, {"statement": "a dreadful awful meal"}])
    assert warm["probabilities"]["positive"] > cold["probabilities"]["positive"]
