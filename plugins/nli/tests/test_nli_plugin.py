"""The nli task plugin: its declaration, validation, the fooled rule, the default target model and its training.

Every premise and hypothesis here is written for these tests; nothing needs ../shared/data.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter

import pytest

from dynaforge import InvalidInput, Role
from dynaforge.plugins import Plugins
from dynaforge_nli import model as nli_model
from dynaforge_nli.plugin import NLITask
from dynaforge_nli.train import DATA_FILE, group_folds, read_rows

LABELS = ("entailment", "neutral", "contradiction")
PREMISE = "The night bus leaves the station at ten and stops at every village on the coast road."

# (premise, entailment, neutral, contradiction): ten handwritten premises with one hypothesis per label.
TOY_DATA = (
    (
        "Nadia baked three loaves of rye bread on Sunday and gave one to her neighbour.",
        "Nadia gave away a loaf.",
        "The neighbour loves rye bread.",
        "Nadia baked bread on Monday.",
    ),
    (
        "The museum is closed on Mondays and opens at nine on the other days.",
        "The museum opens at nine on Tuesdays.",
        "The museum is popular with tourists.",
        "The museum is open every day of the week.",
    ),
    (
        "Tom missed the last train, so he walked home through the park in the rain.",
        "Tom got home on foot.",
        "Tom was angry about missing the train.",
        "Tom took the last train home.",
    ),
    (
        "The river flooded the lower town twice in 1998, but the new dam has held since 2004.",
        "The lower town flooded in 1998.",
        "The dam cost a lot of money.",
        "The lower town flooded in 2010.",
    ),
    (
        "Every student in the class passed the exam except Lena, who was ill that week.",
        "Lena did not pass the exam.",
        "Lena will retake the exam in June.",
        "All students passed the exam.",
    ),
    (
        "The cafe sells only vegetarian food, and its soup changes every morning.",
        "The cafe does not sell meat dishes.",
        "The cafe's soup is made by the owner.",
        "The cafe serves the same soup every day.",
    ),
    (
        "Amir has played the cello for twenty years and teaches at the music school on Fridays.",
        "Amir teaches music.",
        "Amir also plays the piano.",
        "Amir started the cello last year.",
    ),
    (
        "The ferry was cancelled because of the storm, and the passengers waited in the harbour hall.",
        "There was a storm.",
        "The harbour hall was cold.",
        "The ferry left on time.",
    ),
    (
        "Our team won four of its six matches this season and lost the other two.",
        "The team lost two matches.",
        "The team has a new coach.",
        "The team did not lose a match.",
    ),
    (
        "The bridge was painted red in the spring; before that it had been grey for decades.",
        "The bridge used to be grey.",
        "The painters worked at night.",
        "The bridge has always been red.",
    ),
)


def _write_toy_csv(folder) -> None:
    """The toy data in the source format: the columns train.py reads plus one it ignores."""
    with open(folder / DATA_FILE, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["context", "statement", "reason", "gold_label"])
        for premise, *hypotheses in TOY_DATA:
            for hypothesis, code in zip(hypotheses, "enc", strict=False):
                writer.writerow([premise, hypothesis, "written for a unit test", code])


@pytest.fixture(scope="module")
def task():
    return Plugins().task("nli")


@pytest.fixture(scope="module")
def loaded():
    return nli_model.load()


# ------------------------------------------------------------------ declaration and validation


def test_plugin_registers_a_valid_declaration(task):
    assert isinstance(task, NLITask)
    assert task.check_declaration() == []
    roles = {f.name: f.role for f in task.fields}
    assert roles == {"premise": Role.CONTEXT, "hypothesis": Role.INPUT, "label": Role.TARGET, "reason": Role.METADATA}
    assert task.labels == LABELS and task.principal_metric == "accuracy"
    assert 6 <= len(task.demo_contexts) <= 8
    for context in task.demo_contexts:
        assert task.validate_context(context) == context


def test_a_good_example_is_cleaned(task):
    context = task.validate_context({"premise": PREMISE})
    cleaned = task.validate_example(
        {"hypothesis": "  The night bus stops in coastal villages. ", "label": "entailment", "reason": ""},
        context,
    )
    # surrounding spaces go, an empty optional field is dropped
    assert cleaned == {"hypothesis": "The night bus stops in coastal villages.", "label": "entailment"}


@pytest.mark.parametrize(
    ("values", "field", "rule"),
    [
        ({"hypothesis": "The bus is late.", "label": "maybe"}, "label", "choice"),
        ({"label": "neutral"}, "hypothesis", "required"),
        ({"hypothesis": "Yes", "label": "neutral"}, "hypothesis", "min_length"),
        ({"hypothesis": "The bus is late.", "label": "neutral", "premise": "Another text."}, "premise", "role"),
        ({"hypothesis": "The bus is late.", "label": "neutral", "score": 3}, "score", "unknown_field"),
    ],
)
def test_a_bad_example_names_the_field_and_rule(task, values, field, rule):
    with pytest.raises(InvalidInput) as raised:
        task.validate_example(values, {"premise": PREMISE})
    assert [(e.field, e.rule) for e in raised.value.field_errors] == [(field, rule)]


def test_model_input_is_the_pair_and_fooled_means_another_label(task):
    context = {"premise": PREMISE}
    example = {"hypothesis": "The bus skips some villages.", "label": "contradiction", "reason": "negation"}
    assert task.build_model_input(context, example) == {"premise": PREMISE, "hypothesis": example["hypothesis"]}
    assert task.is_fooled(example, {"label": "entailment"}, context) is True
    assert task.is_fooled(example, {"label": "contradiction"}, context) is False


# ------------------------------------------------------------------ the shipped model


def test_model_predicts_labels_with_probabilities(task, loaded):
    inputs = [
        {"premise": PREMISE, "hypothesis": "The night bus leaves at ten."},
        {"premise": PREMISE, "hypothesis": "The night bus never stops in villages."},
        {
            "premise": "Lina planted four apple trees behind the school last autumn.",
            "hypothesis": "The apple trees will give fruit next year.",
        },
    ]
    outputs = loaded.predict(inputs)
    assert len(outputs) == len(inputs)
    for out in outputs:
        probs = out["probabilities"]
        assert tuple(probs) == LABELS
        assert math.isclose(sum(probs.values()), 1.0, abs_tol=1e-5)
        assert out["label"] == max(probs, key=probs.get)
        assert task.read_model_output(out)["label"] == out["label"]
    # a pair gets the same answer alone as inside a padded batch
    alone = loaded.predict(inputs[2:])[0]
    assert alone["label"] == outputs[2]["label"]
    for label in LABELS:
        assert alone["probabilities"][label] == pytest.approx(outputs[2]["probabilities"][label], abs=1e-4)
    assert loaded.predict([]) == []


def test_model_length_and_bad_inputs(loaded):
    short = {"premise": "A cat sleeps.", "hypothesis": "An animal rests."}
    long = {"premise": PREMISE * 3, "hypothesis": "The bus leaves at ten."}
    assert 0 < loaded.length(short) < loaded.length(long)
    with pytest.raises(ValueError, match="hypothesis"):
        loaded.predict([{"premise": PREMISE}])


def test_shipped_weights_beat_the_majority_baseline():
    metadata = nli_model.read_metadata()
    holdout = metadata["metrics"]["holdout"]
    assert metadata["scalar_features"] == list(nli_model.SCALAR_FEATURES)
    assert holdout["n"] >= 100 and metadata["data"]["premises_in_both_parts"] == 0
    assert holdout["accuracy"] > holdout["majority_baseline_accuracy"]


# ------------------------------------------------------------------ training


def test_group_folds_keep_premises_whole_and_labels_even():
    groups = [f"p{i // 3}" for i in range(60)]
    labels = [i % 3 for i in range(60)]
    folds = group_folds(labels, groups, 5, seed=0)
    for g in set(groups):
        assert len({folds[i] for i, h in enumerate(groups) if h == g}) == 1
    for k in range(5):
        assert Counter(labels[i] for i in range(60) if folds[i] == k) == {0: 4, 1: 4, 2: 4}


def test_read_rows_rejects_an_unknown_label(tmp_path):
    (tmp_path / DATA_FILE).write_text("context,statement,gold_label\nA premise.,A hypothesis.,x\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r":2: gold_label must be one of e, n, c"):
        read_rows(tmp_path / DATA_FILE)


def test_train_end_to_end_on_a_tiny_folder(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    _write_toy_csv(data)
    metrics = NLITask().train(data, out, progress=False, limit=27)
    assert metrics["train_rows"] + metrics["holdout_n"] == 27
    assert 0.0 <= metrics["holdout_accuracy"] <= 1.0 and 0.0 <= metrics["majority_baseline_accuracy"] <= 1.0
    metadata = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["data"]["rows_in_file"] == 30 and metadata["data"]["premises_in_both_parts"] == 0
    assert len(metadata["data"]["sha256"]) == 64
    assert (out / "head.safetensors").stat().st_size < 5 * 2**20
    retrained = nli_model.load(weights_dir=out)
    (out_pred,) = retrained.predict([{"premise": TOY_DATA[0][0], "hypothesis": TOY_DATA[0][1]}])
    assert out_pred["label"] in LABELS
