"""The hate speech plugin: declaration, validation, the fooled rule, the fairness slice, text normalisation, the
shipped target model, and training end to end on a tiny handwritten data folder (never on the shared data)."""

from __future__ import annotations

import csv
import json
import math
from importlib.metadata import entry_points

import pytest

import dynaforge_hatespeech.plugin as hatespeech
from dynaforge import InvalidInput
from dynaforge.plugins import Plugins
from dynaforge_hatespeech.model import LABELS, WEIGHTS_DIR, load, normalise, read_metadata
from dynaforge_hatespeech.train import read_tweets, train

TASK = hatespeech.HateSpeechTask()


@pytest.fixture
def plugins():
    p = Plugins(allowlist=set())
    p.register(hatespeech, "hatespeech")
    try:
        yield p
    finally:
        p.unregister("hatespeech")


@pytest.fixture(scope="module")
def model():
    return load()


def rule_of(exc: pytest.ExceptionInfo) -> list[tuple[str, str]]:
    return [(e.field, e.rule) for e in exc.value.field_errors]


# ---------------------------------------------------------------------------------------------------- declaration


def test_declaration_is_valid_and_registers_with_its_slice(plugins):
    assert TASK.check_declaration() == []
    assert "hatespeech" not in plugins.errors
    task = plugins.task("hatespeech")
    assert task.labels == ("hateful", "not_hateful")
    assert [f.name for f in task.fields] == ["statement", "label", "target_group", "type"]
    assert set(task.metrics) <= set(plugins.registry.metrics) and task.principal_metric == "accuracy"
    assert set(task.perturbations) <= set(plugins.registry.perturbations)
    assert task.fairness_slices == ("target_group",)
    slice_ = plugins.registry.slices["target_group"]
    assert slice_.task_code == "hatespeech"
    assert plugins.registry.owners[("slices", "target_group")] == "hatespeech"
    assert task.demo_contexts == ()
    labels = [TASK.validate_example(values, None)["label"] for values in task.sample_examples]
    assert set(labels) == set(LABELS)


def test_entry_point_is_declared():
    names = {ep.name: ep.value for ep in entry_points(group="dynaforge")}
    assert names.get("hatespeech") == "dynaforge_hatespeech.plugin"


def test_json_schema_offers_the_declared_choices():
    schema = TASK.json_schema()
    assert schema["required"] == ["statement", "label"]
    assert schema["properties"]["label"]["enum"] == ["hateful", "not_hateful"]
    assert schema["properties"]["target_group"]["enum"] == list(hatespeech.TARGET_GROUPS)
    assert schema["properties"]["type"]["enum"] == list(hatespeech.HATE_TYPES)
    assert schema["properties"]["type"]["x-role"] == "metadata"


# ---------------------------------------------------------------------------------------------------- validation


def test_valid_examples_are_cleaned():
    full = TASK.validate_example(
        {
            "statement": "  People like them should not be allowed to live here.  ",
            "label": "hateful",
            "target_group": "immigrants",
            "type": "animosity",
        },
        context=None,
    )
    assert full == {
        "statement": "People like them should not be allowed to live here.",
        "label": "hateful",
        "target_group": "immigrants",
        "type": "animosity",
    }
    minimal = TASK.validate_example({"statement": "I love my weekly chess club.", "label": "not_hateful"}, {})
    assert minimal == {"statement": "I love my weekly chess club.", "label": "not_hateful"}
    # an empty optional choice counts as absent
    blank = TASK.validate_example({"statement": "Nice hat.", "label": "not_hateful", "target_group": " "}, None)
    assert "target_group" not in blank


def test_invalid_examples_name_each_broken_rule():
    with pytest.raises(InvalidInput) as exc:
        TASK.validate_example(
            {"statement": "no", "label": "offensive", "target_group": "aliens", "type": "rudeness", "prompt": "x"},
            context=None,
        )
    assert sorted(rule_of(exc)) == [
        ("label", "choice"),
        ("prompt", "unknown_field"),
        ("statement", "min_length"),
        ("target_group", "choice"),
        ("type", "choice"),
    ]
    with pytest.raises(InvalidInput) as exc:
        TASK.validate_example({"statement": "x" * 501}, context=None)
    assert sorted(rule_of(exc)) == [("label", "required"), ("statement", "max_length")]


@pytest.mark.parametrize(
    ("label", "kind"), [("hateful", "none"), ("not_hateful", "derogation"), ("not_hateful", "threatening")]
)
def test_type_must_agree_with_label(label, kind):
    with pytest.raises(InvalidInput) as exc:
        TASK.validate_example({"statement": "Some statement here.", "label": label, "type": kind}, None)
    assert rule_of(exc) == [("type", "label_agreement")]


def test_context_is_empty_for_a_task_without_context_fields():
    assert TASK.validate_context({}) == {}
    with pytest.raises(InvalidInput) as exc:
        TASK.validate_context({"statement": "Not a context field."})
    assert rule_of(exc) == [("statement", "role")]


# ---------------------------------------------------------------------------------------------------- judging


def test_fooled_when_the_prediction_differs_from_the_label():
    example = {"statement": "A calm statement.", "label": "not_hateful"}
    assert TASK.is_fooled(example, {"label": "hateful"}, {}) is True
    assert TASK.is_fooled(example, {"label": "not_hateful"}, {}) is False
    assert TASK.is_fooled({**example, "label": "hateful"}, {"label": "not_hateful"}, {}) is True


def test_read_model_output_refuses_unknown_labels():
    with pytest.raises(ValueError, match="not one of"):
        TASK.read_model_output({"label": "offensive"})


def test_slice_groups_examples_by_target_group():
    assert hatespeech.target_group_of({"target_group": "jews", "label": "hateful"}) == "jews"
    assert hatespeech.target_group_of({"label": "not_hateful"}) is None
    assert hatespeech.target_group_of({"target_group": "martians"}) is None


# ---------------------------------------------------------------------------------------------------- normalisation


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("RT @some_user: look at this &amp; that http://t.co/AbC123", "@user: look at this & that http"),
        ("@one @two, @three what a #GreatDay", "@user what a GreatDay"),
        ("double &amp;#8220;escaped&amp;#8221;\n  spaces", "double \u201cescaped\u201d spaces"),
        ("An ordinary sentence stays as written.", "An ordinary sentence stays as written."),
        ("see www.example.org/page now", "see http now"),
    ],
)
def test_normalise(raw, normalised):
    assert normalise(raw) == normalised


# ---------------------------------------------------------------------------------------------------- model


def test_model_predicts_well_formed_outputs(model):
    inputs = [
        {"statement": "Immigrants are vermin and should all be thrown out of this country."},
        {"statement": "What a lovely sunny morning for a walk in the park."},
        {"statement": "RT @someone: check this out &amp; tell me http://t.co/abc #monday"},
    ]
    outputs = model.predict(inputs)
    assert len(outputs) == len(inputs)
    for output in outputs:
        prediction = TASK.read_model_output(output)
        probs = prediction["probabilities"]
        assert set(probs) == set(LABELS) and math.isclose(sum(probs.values()), 1.0)
        assert prediction["label"] == max(probs, key=probs.get)
    assert outputs[0]["probabilities"]["hateful"] > outputs[1]["probabilities"]["hateful"]
    # batching (padding to the longest statement) does not change a statement's score
    [alone] = model.predict(inputs[1:2])
    assert math.isclose(alone["probabilities"]["hateful"], outputs[1]["probabilities"]["hateful"], abs_tol=1e-5)
    assert model.predict([]) == []


def test_model_length_and_bad_input(model):
    assert model.length({"statement": "x" * 40}) == 12
    assert model.length({"statement": "x" * 10_000}) == model.max_length
    with pytest.raises(TypeError, match="statement"):
        model.predict([{"text": "wrong key"}])


def test_shipped_weights_beat_the_majority_baseline_on_macro_f1():
    meta = read_metadata()
    metrics = meta["metrics"]
    # `dynaforge train` (the recipe, the base data under "base") or the trainer's own main (flat) wrote them
    base = meta["data"].get("base", meta["data"])
    assert base.get("limit") is None and len(base["sha256"]) == 64
    assert metrics["holdout"]["macro_f1"] > metrics["holdout_majority_baseline"]["macro_f1"] + 0.1
    assert metrics["holdout"]["per_label"]["hateful"]["recall"] > 0.2
    # the encoder is fine-tuned: the adapter ships beside the head, and its record names the run
    assert meta["encoder"]["fine_tuned"] is True and (WEIGHTS_DIR / meta["encoder"]["adapter"]["file"]).is_file()
    assert not meta["encoder"]["adapter"]["stopped_by_time_limit"]


# ---------------------------------------------------------------------------------------------------- training

# Handwritten rows in the source format. The "hateful" class is played by sentences about rain and the rest by
# sentences about food or sport, so the pipeline has an easy signal to learn without writing hate speech.
_RAIN = [
    "It has been raining all day in the valley",
    "RT @weatherfan: more rain tonight &amp; tomorrow",
    "Heavy rain flooded the road to the village",
    "@bob the storm brought rain and thunder again",
    "Grey clouds and drizzle all afternoon",
    "The rain will not stop this week #wet",
    "Umbrellas out, another downpour http://t.co/x1",
    "A cold rain fell on the station roof",
    "Rainy mornings make the bus late",
    "Showers and wind are forecast for the weekend",
    "The river rose after three days of rain",
    "Drizzle again, the garden is soaked",
    "@ann it poured down during the whole match",
    "Thunderstorms and rain expected overnight",
    "Wet streets and rain in the city again",
]
_OTHER = [
    "I cooked pasta with tomato sauce tonight",
    "RT @chef: fresh bread &amp; butter for breakfast",
    "The team scored twice in the second half",
    "We ate pancakes with honey this morning",
    "@joe the striker missed a penalty",
    "Soup and a sandwich for lunch today #hungry",
    "She won the tennis final in three sets",
    "Chocolate cake for my sister's birthday",
    "The marathon runners crossed the bridge",
    "Grilled fish with lemon and rice",
    "Our club lost the derby on Saturday",
    "A bowl of noodles with spicy broth",
    "He trains at the swimming pool every day",
    "Apple pie and custard for dessert",
    "The cyclists climbed the mountain pass",
    "Roast chicken with potatoes and carrots",
    "The goalkeeper saved a late header",
    "A salad of beans, feta and olives",
    "She ran five kilometres before work",
    "Curry with naan bread at the corner shop",
    "The basketball game went to overtime",
    "Strawberries and cream in the garden",
    "The boxer won on points",
    "Porridge with berries for breakfast",
    "Our relay team took the silver medal",
    "Tacos with salsa and lime",
    "The chess final ended in a draw",
    "Omelette with mushrooms and cheese",
    "The rowing crew trained at dawn",
    "Pizza with olives and peppers",
]


def _write_csv(path, rows):
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "count", "hate_speech", "offensive_language", "neither", "class", "tweet"])
        writer.writerows(rows)


def _tiny_data(folder):
    folder.mkdir()
    rows = [(i, 3, 3, 0, 0, 0, text) for i, text in enumerate(_RAIN)]
    rows += [(100 + i, 3, 0, 1, 2, 1 + i % 2, text) for i, text in enumerate(_OTHER)]
    _write_csv(folder / "davidson_2017.csv", rows)
    return folder


def test_train_end_to_end_on_tiny_data(tmp_path):
    data = _tiny_data(tmp_path / "data")
    out = tmp_path / "weights"
    metrics = TASK.train(data, out, progress=False, limit=40)
    meta = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    assert (out / "head.safetensors").stat().st_size < 5 * 1024 * 1024
    assert meta["data"]["rows_used"] == 40 and meta["data"]["limit"] == 40
    assert meta["data"]["train_rows"] + meta["data"]["holdout_rows"] <= 40
    assert metrics["holdout_n"] == meta["metrics"]["holdout"]["n"] > 0
    assert metrics["weight_decay"] in [s["weight_decay"] for s in meta["head"]["search"]]
    # the topic signal is easy: the head beats always answering not_hateful
    assert metrics["holdout_macro_f1"] > metrics["baseline_macro_f1"]
    trained = load(weights_dir=out)
    [rain, food] = trained.predict(
        [{"statement": "Rain and more rain all night long"}, {"statement": "Cheese on toast for supper"}]
    )
    assert rain["label"] == "hateful" and food["label"] == "not_hateful"


def test_train_refuses_bad_data(tmp_path):
    _write_csv(tmp_path / "davidson_2017.csv", [(1, 3, 0, 0, 3, 7, "a sentence")])
    with pytest.raises(ValueError, match="class must be 0, 1 or 2"):
        read_tweets(tmp_path / "davidson_2017.csv")
    (tmp_path / "davidson_2017.csv").write_text("id,text\n1,hello\n", encoding="utf-8")
    with pytest.raises(ValueError, match="missing column"):
        read_tweets(tmp_path / "davidson_2017.csv")
    rows = [(i, 3, 0, 0, 3, 2, text) for i, text in enumerate(_OTHER)] + [(99, 3, 3, 0, 0, 0, _RAIN[0])]
    _write_csv(tmp_path / "davidson_2017.csv", rows)
    with pytest.raises(ValueError, match="hateful rows"):
        train(tmp_path, tmp_path / "out", progress=False)
    with pytest.raises(FileNotFoundError, match="davidson_2017.csv"):
        train(tmp_path / "missing", tmp_path / "out", progress=False)
