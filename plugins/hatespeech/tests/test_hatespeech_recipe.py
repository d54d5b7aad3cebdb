"""The hate speech task's ``default`` training recipe: from examples alone, from a tiny base folder plus examples,
loading what it wrote by digest, determinism, the effect of the examples and of ``example_weight``, the encoder
fine-tuned with a LoRA adapter (its threshold chosen on the validation fold) or left frozen, and refusals.

Every sentence here is written for these tests; nothing needs ../shared/data, and no sentence is hateful: as in the
plugin's other tests, the "hateful" label is played by sentences about the weather and "not_hateful" by sentences
about food, a signal the shipped model cannot know.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from dynaforge.defaults.backends.python import PythonBackend
from dynaforge.model_artifacts import ArtifactStore
from dynaforge.tasks.training import ADAPTER_FILE, TrainingData, read_adapter, run_recipe
from dynaforge_hatespeech.model import MODEL_NAME, WEIGHTS_DIR, load
from dynaforge_hatespeech.plugin import HateSpeechTask
from dynaforge_hatespeech.train import train_recipe

TASK = HateSpeechTask()
RECIPE = TASK.training_recipe("default")

WEATHER = [
    f"{what} {where}"
    for what in ("Rain", "Drizzle", "A downpour", "Sleet", "Thunder and rain", "Heavy showers", "A cold drizzle")
    for where in ("all morning over the harbour", "again over the village")
]
FOOD = [
    f"{what} {where}"
    for what in ("Pancakes", "A bowl of soup", "Fresh bread", "Grilled fish", "Apple pie", "Lentil curry", "Toast")
    for where in ("for breakfast at the cafe", "again at my aunt's house")
]
EXAMPLES = tuple(
    [{"statement": s, "label": "hateful", "target_group": "other", "type": "animosity"} for s in WEATHER]
    + [{"statement": s, "label": "not_hateful", "type": "none"} for s in FOOD]
)
SOURCES = ({"name": "weather round", "id": "ds-7", "size": len(EXAMPLES), "sha256": "1" * 64},)

# The base folder's tweets, in the Davidson et al. CSV format: storms are class 0, sport classes 1 and 2.
STORMS = [
    f"RT @fan{i}: {w} hit the {p} tonight"
    for i, (w, p) in enumerate(
        (w, p) for w in ("A storm", "Thunder", "Hail") for p in ("coast", "valley", "city", "hills", "port")
    )
]
SPORT = [
    f"@coach{i} the {t} {v} on Saturday #sport"
    for i, (t, v) in enumerate(
        (t, v)
        for t in ("team", "striker", "goalkeeper", "relay squad", "rowing crew")
        for v in ("won", "trained", "scored", "lost", "celebrated")
    )
]


def _write_csv(path, rows) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "count", "hate_speech", "offensive_language", "neither", "class", "tweet"])
        writer.writerows(rows)


def _base(folder, extra=()):
    """A base folder: STORMS hateful (class 0), SPORT not (classes 1 and 2), then ``extra`` ``(text, class)``."""
    folder.mkdir()
    rows = [(i, 3, 3, 0, 0, 0, text) for i, text in enumerate(STORMS)]
    rows += [(100 + i, 3, 0, 1, 2, 1 + i % 2, text) for i, text in enumerate(SPORT)]
    rows += [(200 + i, 3, 0, 0, 3, cls, text) for i, (text, cls) in enumerate(extra)]
    _write_csv(folder / "davidson_2017.csv", rows)
    return folder


@pytest.fixture
def store(tmp_path, monkeypatch) -> ArtifactStore:
    monkeypatch.setenv("DYNAFORGE_DATA_DIR", str(tmp_path / "data-dir"))
    monkeypatch.delenv("DYNAFORGE_MODEL_STORE_URL", raising=False)
    return ArtifactStore.from_settings()


@pytest.fixture(scope="module")
def shipped():
    return load(weights_dir=WEIGHTS_DIR)


@pytest.fixture(scope="module")
def from_examples(tmp_path_factory):
    """The recipe run on the examples alone: (out folder, metrics, reports)."""
    out = tmp_path_factory.mktemp("from-examples")
    reports: list[tuple[float, str]] = []
    data = TrainingData(examples=EXAMPLES, sources=SOURCES)
    metrics = run_recipe(RECIPE, data, out, seed=0, report=lambda f, s: reports.append((f, s)))
    return out, metrics, reports


def _right(model, examples) -> int:
    outputs = model.predict([{"statement": e["statement"]} for e in examples])
    return sum(o["label"] == e["label"] for o, e in zip(outputs, examples, strict=True))


def test_the_task_declares_the_recipe():
    assert TASK.check_declaration() == []
    assert RECIPE is not None and RECIPE.name == "default" and RECIPE.model == MODEL_NAME
    assert RECIPE.trainer == "dynaforge_hatespeech.train:train_recipe"
    assert RECIPE.factory == "dynaforge_hatespeech.model:load"
    assert RECIPE.hyperparameters == {
        "example_weight": 2.0,
        "encoder": "lora",
        "lora_epochs": 4,
        "lora_time_limit_s": 3600.0,
    }
    assert "davidson_2017.csv" in RECIPE.base_data
    assert RECIPE.shipped == WEIGHTS_DIR
    assert RECIPE.loads(TASK.default_target_models[0])


def test_importing_the_plugin_does_not_import_torch():
    code = "import sys, dynaforge_hatespeech.plugin; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_recipe_learns_from_examples_alone(from_examples, shipped):
    out, metrics, reports = from_examples
    assert sorted(p.name for p in out.iterdir()) == [
        "adapter.safetensors",
        "head.safetensors",
        "metadata.json",
        "training.json",
    ]
    assert (out / ADAPTER_FILE).stat().st_size < 1_000_000
    assert metrics["encoder"] == "lora" and metrics["lora_steps"] >= 1 and not metrics["lora_stopped_by_time_limit"]
    assert metrics["examples"] == 28 and metrics["examples_hateful"] == metrics["examples_not_hateful"] == 14
    # 20% of each label's 14 examples held out (3), the rest cross-validated and fitted
    assert metrics["examples_fitted"] == 22 and metrics["examples_held_out"] == metrics["holdout_n"] == 6
    assert metrics["holdout_macro_f1"] > metrics["baseline_macro_f1"]
    assert metrics["examples_fit_accuracy"] == 1.0
    stages = [stage for _, stage in reports]
    assert {"reading", "embedding", "fitting", "fine-tuning", "evaluating"} <= set(stages)
    fractions = [fraction for fraction, _ in reports]
    assert fractions == sorted(fractions) and fractions[0] >= 0.0 and fractions[-1] <= 1.0
    trained = load(weights_dir=out)
    assert _right(trained, EXAMPLES) > _right(shipped, EXAMPLES)


def test_metadata_records_the_data_but_no_text(from_examples):
    out, _, _ = from_examples
    metadata = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["format"] == "dynaforge-hatespeech-head/1"
    data = metadata["data"]
    assert data["base"] is None
    assert data["examples"]["count"] == 28 and data["examples"]["labels"] == {"hateful": 14, "not_hateful": 14}
    assert data["examples"]["sha256"] == TrainingData(examples=EXAMPLES).digest()
    assert data["examples"]["sources"] == [dict(s) for s in SOURCES]
    assert metadata["training"]["example_weight"] == 2.0 and metadata["training"]["encoder"] == "lora"
    adapter = metadata["encoder"]["adapter"]
    assert metadata["encoder"]["fine_tuned"] is True and adapter["file"] == ADAPTER_FILE
    assert adapter["adapter_parameters"] == read_adapter(out / ADAPTER_FILE).parameters()
    # the threshold is the validation fold's: 11 fitted examples of each label dealt round-robin into five folds
    validation = metadata["head"]["validation"]
    assert validation["fold"] == 0 and validation["rows"] == 6
    assert metadata["head"]["decision_threshold"] == validation["threshold"]
    for name in ("metadata.json", "training.json"):
        text = (out / name).read_text(encoding="utf-8")
        assert not any(e["statement"] in text for e in EXAMPLES)
        assert "harbour" not in text and "breakfast" not in text


def test_the_factory_loads_the_stored_artifact_and_the_same_seed_gives_the_same_digest(from_examples, store, tmp_path):
    out, metrics, _ = from_examples
    stored = store.add_folder(out)
    again = tmp_path / "again"
    assert run_recipe(RECIPE, TrainingData(examples=EXAMPLES, sources=SOURCES), again, seed=0) == metrics
    assert store.add_folder(again).digest == stored.digest
    model = PythonBackend().load(RECIPE.model_spec(stored.digest).config)
    assert model.metadata["weights"]["source"] == "artifact"
    assert model.metadata["weights"]["version"] == stored.digest
    [wet, fed] = model.predict([{"statement": "Rain over the harbour again"}, {"statement": "Soup at the cafe"}])
    assert wet["label"] == "hateful" and fed["label"] == "not_hateful"
    assert load(weights_artifact=stored.digest).weight.tolist() == model.weight.tolist()


def test_recipe_adds_the_examples_to_the_training_part_of_the_base_data(shipped, tmp_path):
    base_dir = _base(tmp_path / "base")
    metrics = run_recipe(RECIPE, TrainingData(examples=EXAMPLES, base_dir=base_dir), tmp_path / "recipe", seed=0)
    # the held-out tweets are those `dynaforge train` holds out with the same seed
    plain = TASK.train(base_dir, tmp_path / "plain", progress=False)
    assert metrics["holdout_n"] == plain["holdout_n"] == 8
    assert metrics["examples_fitted"] == 28 and metrics["examples_held_out"] == 0
    assert metrics["examples_dropped_as_holdout_rows"] == 0 and metrics["examples_fit_accuracy"] == 1.0
    metadata = json.loads((tmp_path / "recipe" / "metadata.json").read_text(encoding="utf-8"))
    base = metadata["data"]["base"]
    plain_data = json.loads((tmp_path / "plain" / "metadata.json").read_text(encoding="utf-8"))["data"]
    assert base["file"] == "davidson_2017.csv" and base["sha256"] == plain_data["sha256"]
    assert base["train_rows"] == plain_data["train_rows"] == 32
    assert metadata["training"]["example_weight"] == 2.0
    trained = load(weights_dir=tmp_path / "recipe")
    assert _right(trained, EXAMPLES) > _right(shipped, EXAMPLES)
    [storm, match] = trained.predict(
        [{"statement": "A storm hit the harbour tonight"}, {"statement": "The team won the final"}]
    )
    assert storm["label"] == "hateful" and match["label"] == "not_hateful"


def test_example_weight_decides_between_base_rows_and_examples_that_disagree(tmp_path):
    # The base data labels six of the examples' statements the other way round.
    disputed = [e for e in EXAMPLES if e["statement"] in WEATHER[:3] + FOOD[:3]]
    base_dir = _base(tmp_path / "base", [(s, 2) for s in WEATHER[:3]] + [(s, 0) for s in FOOD[:3]])
    sides = {}
    for weight in (0.05, 20.0):
        out = tmp_path / f"w{weight}"
        data = TrainingData(examples=EXAMPLES, base_dir=base_dir)
        metrics = run_recipe(RECIPE, data, out, seed=0, hyperparameters={"example_weight": weight})
        # no disputed row is held out (seed 0), so every example is fitted next to the row it disputes
        assert metrics["examples_dropped_as_holdout_rows"] == 0 and metrics["examples_fitted"] == 28
        sides[weight] = _right(load(weights_dir=out), disputed)
    assert sides == {0.05: 0, 20.0: len(disputed)}
    # with seed 1 one disputed row is held out: its example is left out, not trained on and scored at once
    metrics = run_recipe(RECIPE, TrainingData(examples=EXAMPLES, base_dir=base_dir), tmp_path / "seed1", seed=1)
    assert metrics["examples_dropped_as_holdout_rows"] == 1 and metrics["examples_fitted"] == 27


def test_without_examples_the_recipe_fits_what_dynaforge_train_fits(tmp_path):
    base_dir = _base(tmp_path / "base")
    run_recipe(RECIPE, TrainingData(base_dir=base_dir), tmp_path / "recipe", seed=1)
    TASK.train(base_dir, tmp_path / "plain", progress=False, seed=1)
    for name in ("head.safetensors", ADAPTER_FILE):
        assert (tmp_path / "recipe" / name).read_bytes() == (tmp_path / "plain" / name).read_bytes()


def test_a_frozen_encoder_writes_no_adapter_and_keeps_the_cross_validated_threshold(tmp_path):
    from dynaforge.inference.encoders import minilm_path, shared_encoder

    data = TrainingData(examples=EXAMPLES, sources=SOURCES)
    metrics = run_recipe(RECIPE, data, tmp_path / "frozen", seed=0, hyperparameters={"encoder": "frozen"})
    assert metrics["encoder"] == "frozen" and "lora_steps" not in metrics
    assert not (tmp_path / "frozen" / ADAPTER_FILE).exists()
    metadata = json.loads((tmp_path / "frozen" / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["encoder"]["fine_tuned"] is False and "validation" not in metadata["head"]
    chosen = max(metadata["head"]["search"], key=lambda s: s["cv_macro_f1"])
    assert metadata["head"]["decision_threshold"] == chosen["cv_threshold"] == metrics["decision_threshold"]
    frozen = load(weights_dir=tmp_path / "frozen")
    assert frozen.encoder is shared_encoder(minilm_path())
    [wet, fed] = frozen.predict([{"statement": "Rain over the harbour again"}, {"statement": "Soup at the cafe"}])
    assert wet["label"] == "hateful" and fed["label"] == "not_hateful"


def test_too_few_examples_are_refused_with_what_is_needed(tmp_path):
    few = TrainingData(examples=EXAMPLES[:8] + EXAMPLES[14:22])
    with pytest.raises(ValueError, match=r"at least 20 examples, at least 6 of each label; got 8 hateful and 8"):
        run_recipe(RECIPE, few, tmp_path / "few")
    one_sided = TrainingData(examples=EXAMPLES[:14] + EXAMPLES[14:19])
    with pytest.raises(ValueError, match="got 14 hateful and 5 not_hateful"):
        run_recipe(RECIPE, one_sided, tmp_path / "one")
    with pytest.raises(ValueError, match="label must be one of hateful, not_hateful"):
        train_recipe(TrainingData(examples=({"statement": "A fine day.", "label": "rude"},)), tmp_path / "bad")


def test_run_recipe_rejects_unknown_or_mistyped_hyperparameters(tmp_path):
    data = TrainingData(examples=EXAMPLES)
    with pytest.raises(ValueError, match="no hyper-parameter 'threshold'; it has encoder, example_weight"):
        run_recipe(RECIPE, data, tmp_path / "a", hyperparameters={"threshold": 0.5})
    with pytest.raises(ValueError, match="example_weight: must be a number"):
        run_recipe(RECIPE, data, tmp_path / "b", hyperparameters={"example_weight": True})
    with pytest.raises(ValueError, match="encoder must be one of lora, frozen, not 'LoRA'"):
        run_recipe(RECIPE, data, tmp_path / "c", hyperparameters={"encoder": "LoRA"})
    with pytest.raises(ValueError, match="lora_time_limit_s must be positive"):
        run_recipe(RECIPE, data, tmp_path / "d", hyperparameters={"lora_time_limit_s": 0})
