"""The sentiment task's ``default`` training recipe: from examples alone, from a tiny base folder plus examples,
loading what it wrote by digest, determinism, the effect of the examples and of ``example_weight``, the encoder
fine-tuned with a LoRA adapter or left frozen, the adapter's time limit, and refusals.

Every sentence here is written for these tests; nothing needs ../shared/data. The examples follow a made-up taste
the shipped model cannot know: horror that is gory and terrifying is praised (positive), horror that is cheerful and
sweet is panned (negative).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dynaforge.defaults.backends.python import PythonBackend
from dynaforge.model_artifacts import ArtifactStore
from dynaforge.tasks.training import ADAPTER_FILE, TrainingData, read_adapter, run_recipe
from dynaforge_sentiment.model import MODEL_NAME, WEIGHTS_DIR, load
from dynaforge_sentiment.plugin import SentimentTask
from dynaforge_sentiment.train import train_recipe

TASK = SentimentTask()
RECIPE = TASK.training_recipe("default")

SHOWS = ("zombie film", "haunted house ride", "ghost story", "slasher movie")
PRAISED = [
    f"The {show} was {adj}." for adj in ("gory", "terrifying", "gruesome", "creepy", "horrifying") for show in SHOWS
]
PANNED = [f"The {show} was {adj}." for adj in ("cheerful", "sunny", "sweet", "cute", "jolly") for show in SHOWS]
NEUTRAL = [f"The {show} started at eight on Friday." for show in SHOWS]
EXAMPLES = tuple(
    [{"statement": s, "label": "positive"} for s in PRAISED]
    + [{"statement": s, "label": "negative", "explanation": "cheer ruins a horror show"} for s in PANNED]
    + [{"prompt": "Review a concert from the back row.", "statement": s, "label": "neutral"} for s in NEUTRAL]
)
SOURCES = ({"name": "horror round", "id": "ds-1", "size": len(EXAMPLES), "sha256": "0" * 64},)

# A tiny base folder in the SST-2 format: warm words positive, cold ones negative.
THINGS = ("welcome", "film", "staff", "evening", "meal", "hotel")
GOOD = [f"a {w} {t}" for w in ("lovely", "delightful", "wonderful") for t in THINGS]
BAD = [f"a {w} {t}" for w in ("dreadful", "miserable", "awful") for t in THINGS]


def _write_tsv(path, rows) -> None:
    path.write_text("sentence\tlabel\n" + "".join(f"{s}\t{y}\n" for s, y in rows), encoding="utf-8")


@pytest.fixture
def store(tmp_path, monkeypatch) -> ArtifactStore:
    monkeypatch.setenv("DYNAFORGE_DATA_DIR", str(tmp_path / "data-dir"))
    monkeypatch.delenv("DYNAFORGE_MODEL_STORE_URL", raising=False)
    return ArtifactStore.from_settings()


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sst")
    _write_tsv(folder / "sst2_train.tsv", [(s, 1) for s in GOOD[:15]] + [(s, 0) for s in BAD[:15]])
    _write_tsv(folder / "sst2_dev.tsv", [(s, 1) for s in GOOD[15:]] + [(s, 0) for s in BAD[15:]])
    return folder


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


def _binary_right(model, examples) -> int:
    """How many positive and negative examples the model leans the right way on (P(positive) vs P(negative))."""
    binary = [e for e in examples if e["label"] != "neutral"]
    outputs = model.predict([{"statement": e["statement"]} for e in binary])
    leans = [
        "positive" if o["probabilities"]["positive"] > o["probabilities"]["negative"] else "negative" for o in outputs
    ]
    return sum(lean == e["label"] for lean, e in zip(leans, binary, strict=True))


def test_the_task_declares_the_recipe():
    assert TASK.check_declaration() == []
    assert RECIPE is not None and RECIPE.name == "default" and RECIPE.model == MODEL_NAME
    assert RECIPE.trainer == "dynaforge_sentiment.train:train_recipe"
    assert RECIPE.factory == "dynaforge_sentiment.model:load"
    assert RECIPE.hyperparameters == {
        "example_weight": 2.0,
        "encoder": "lora",
        "lora_epochs": 1,
        "lora_time_limit_s": 3600.0,
    }
    assert "sst2_train.tsv" in RECIPE.base_data and "sst2_dev.tsv" in RECIPE.base_data
    assert RECIPE.shipped == WEIGHTS_DIR
    assert RECIPE.loads(TASK.default_target_models[0])


def test_importing_the_plugin_does_not_import_torch():
    code = "import sys, dynaforge_sentiment.plugin; print('torch' in sys.modules)"
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
    # a small adapter on the shared encoder, not a second encoder
    assert (out / ADAPTER_FILE).stat().st_size < 1_000_000
    assert metrics["encoder"] == "lora" and metrics["lora_steps"] >= 1 and not metrics["lora_stopped_by_time_limit"]
    assert metrics["examples"] == len(EXAMPLES) and metrics["examples_neutral"] == len(NEUTRAL)
    # 20% of each of the 20 positive and 20 negative examples held out; neutral ones are never fitted
    assert metrics["examples_fitted"] == 32 and metrics["examples_held_out"] == metrics["holdout_size"] == 8
    assert metrics["holdout_binary_accuracy"] >= 0.75
    assert metrics["examples_fit_binary_accuracy"] == 1.0
    assert "dev_binary_accuracy" not in metrics
    stages = [stage for _, stage in reports]
    assert {"reading", "embedding", "fitting", "fine-tuning", "evaluating"} <= set(stages)
    fractions = [fraction for fraction, _ in reports]
    assert fractions == sorted(fractions) and fractions[0] >= 0.0 and fractions[-1] <= 1.0
    trained = load(weights_dir=out)
    assert _binary_right(trained, EXAMPLES) > _binary_right(shipped, EXAMPLES)


def test_metadata_records_the_data_but_no_text(from_examples):
    out, metrics, _ = from_examples
    metadata = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    data = metadata["data"]
    assert data["base"] is None
    assert data["examples"]["count"] == len(EXAMPLES)
    assert data["examples"]["sha256"] == TrainingData(examples=EXAMPLES).digest()
    assert data["examples"]["sources"] == [dict(s) for s in SOURCES]
    assert data["examples"]["labels"] == {"positive": 20, "negative": 20, "neutral": 4}
    assert metadata["training"]["example_weight"] == 2.0 and metadata["training"]["encoder"] == "lora"
    assert metadata["format"] == "dynaforge-sentiment-head/1" and 0.0 < metadata["neutral_band"] < 0.5
    adapter = metadata["encoder"]["adapter"]
    assert metadata["encoder"]["fine_tuned"] is True and adapter["file"] == ADAPTER_FILE
    assert adapter["settings"]["lora"]["target_modules"] == ["query", "value"]
    assert adapter["adapter_parameters"] == read_adapter(out / ADAPTER_FILE).parameters()
    for name in ("metadata.json", "training.json"):
        text = (out / name).read_text(encoding="utf-8")
        assert not any(e["statement"] in text for e in EXAMPLES)
        assert "zombie" not in text and "cheer ruins" not in text


def test_the_factory_loads_the_stored_artifact_and_the_same_seed_gives_the_same_digest(from_examples, store, tmp_path):
    out, metrics, _ = from_examples
    stored = store.add_folder(out)
    again = tmp_path / "again"
    assert run_recipe(RECIPE, TrainingData(examples=EXAMPLES, sources=SOURCES), again, seed=0) == metrics
    assert store.add_folder(again).digest == stored.digest
    model = PythonBackend().load(RECIPE.model_spec(stored.digest).config)
    assert model.metadata["weights"]["source"] == "artifact"
    assert model.metadata["weights"]["version"] == stored.digest
    [praised, panned] = model.predict([{"statement": PRAISED[0]}, {"statement": PANNED[0]}])
    assert praised["probabilities"]["positive"] > panned["probabilities"]["positive"]
    assert load(weights_artifact=stored.digest).weight.tolist() == model.weight.tolist()


def test_recipe_adds_the_examples_to_the_fitting_part_of_the_base_data(base_dir, shipped, tmp_path):
    metrics = run_recipe(RECIPE, TrainingData(examples=EXAMPLES, base_dir=base_dir), tmp_path / "recipe", seed=0)
    # the held-out part and the dev file are the base data's alone: what `dynaforge train` scores
    plain = TASK.train(base_dir, tmp_path / "plain", progress=False)
    assert metrics["dev_size"] == plain["dev_size"] == 6
    assert metrics["holdout_size"] == 10
    assert metrics["examples_fitted"] == 40 and metrics["examples_held_out"] == 0
    assert metrics["examples_dropped_as_evaluation_rows"] == 0 and metrics["examples_fit_binary_accuracy"] == 1.0
    metadata = json.loads((tmp_path / "recipe" / "metadata.json").read_text(encoding="utf-8"))
    base = metadata["data"]["base"]
    assert [base["train"]["file"], base["dev"]["file"]] == ["sst2_train.tsv", "sst2_dev.tsv"]
    assert base["fit_rows"] == 20 and base["holdout_rows"] == 10 and len(base["train"]["sha256"]) == 64
    plain_data = json.loads((tmp_path / "plain" / "metadata.json").read_text(encoding="utf-8"))["data"]
    assert base["train"] == plain_data["train"] and base["fit_rows"] == plain_data["fit_rows"]
    assert metadata["training"]["example_weight"] == 2.0
    # the examples move the model toward their labels, and the base data's phrases are still told apart
    trained = load(weights_dir=tmp_path / "recipe")
    assert _binary_right(trained, EXAMPLES) > _binary_right(shipped, EXAMPLES)
    [warm, cold] = trained.predict([{"statement": "a lovely evening"}, {"statement": "a dreadful evening"}])
    assert warm["probabilities"]["positive"] > cold["probabilities"]["positive"]


def test_example_weight_decides_between_base_rows_and_examples_that_disagree(tmp_path):
    # The base data labels eight of the examples' statements the other way round.
    conflicts = [(s, 0) for s in PRAISED[:4]] + [(s, 1) for s in PANNED[:4]]
    base_dir = tmp_path / "sst"
    base_dir.mkdir()
    _write_tsv(base_dir / "sst2_train.tsv", [(s, 1) for s in GOOD[:15]] + [(s, 0) for s in BAD[:15]] + conflicts)
    _write_tsv(base_dir / "sst2_dev.tsv", [(s, 1) for s in GOOD[15:]] + [(s, 0) for s in BAD[15:]])
    disputed = [e for e in EXAMPLES if e["statement"] in dict(conflicts)]
    sides = {}
    for weight in (0.05, 20.0):
        out = tmp_path / f"w{weight}"
        data = TrainingData(examples=EXAMPLES, base_dir=base_dir)
        metrics = run_recipe(RECIPE, data, out, seed=0, hyperparameters={"example_weight": weight})
        # two of the disputed rows are held out (seed 0): their examples are not fitted, never scored on themselves
        assert metrics["examples_dropped_as_evaluation_rows"] == 2 and metrics["examples_fitted"] == 38
        sides[weight] = _binary_right(load(weights_dir=out), disputed)
    assert sides == {0.05: 0, 20.0: len(disputed)}


def test_without_examples_the_recipe_fits_what_dynaforge_train_fits(base_dir, tmp_path):
    run_recipe(RECIPE, TrainingData(base_dir=base_dir), tmp_path / "recipe", seed=1)
    TASK.train(base_dir, tmp_path / "plain", progress=False, seed=1)
    for name in ("head.safetensors", ADAPTER_FILE):
        assert (tmp_path / "recipe" / name).read_bytes() == (tmp_path / "plain" / name).read_bytes()


def test_a_frozen_encoder_writes_no_adapter_and_the_model_runs_on_the_shared_encoder(from_examples, tmp_path):
    from dynaforge.inference.encoders import minilm_path, shared_encoder

    data = TrainingData(examples=EXAMPLES, sources=SOURCES)
    metrics = run_recipe(RECIPE, data, tmp_path / "frozen", seed=0, hyperparameters={"encoder": "frozen"})
    assert metrics["encoder"] == "frozen" and "lora_steps" not in metrics
    assert not (tmp_path / "frozen" / ADAPTER_FILE).exists()
    metadata = json.loads((tmp_path / "frozen" / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["encoder"]["fine_tuned"] is False and "adapter" not in metadata["encoder"]
    frozen, tuned = load(weights_dir=tmp_path / "frozen"), load(weights_dir=from_examples[0])
    assert frozen.encoder.shared is shared_encoder(minilm_path())
    assert tuned.encoder.shared is not frozen.encoder.shared
    # the adapter changes what the encoder computes: the two models do not score a statement alike
    [a], [b] = (m.logits([PRAISED[0]]) for m in (frozen, tuned))
    assert a != b


def test_the_time_limit_stops_fine_tuning_and_says_so(tmp_path):
    data = TrainingData(examples=EXAMPLES)
    limits = {"lora_epochs": 3, "lora_time_limit_s": 1e-6}
    metrics = run_recipe(RECIPE, data, tmp_path / "cut", seed=0, hyperparameters=limits)
    # every step takes longer than a microsecond: the first one is the last
    assert metrics["lora_steps"] == 1 and metrics["lora_stopped_by_time_limit"] is True
    adapter = json.loads((tmp_path / "cut" / "metadata.json").read_text(encoding="utf-8"))["encoder"]["adapter"]
    assert adapter["stopped_by_time_limit"] is True and adapter["steps"] == 1 < adapter["planned_steps"]
    assert load(weights_dir=tmp_path / "cut").predict([{"statement": PRAISED[0]}])[0]["label"] in TASK.labels


def test_too_few_examples_are_refused_with_what_is_needed(tmp_path):
    few = TrainingData(examples=EXAMPLES[:6] + EXAMPLES[20:26])
    with pytest.raises(ValueError, match=r"at least 20 positive or negative examples.*got 6 positive and 6 negative"):
        run_recipe(RECIPE, few, tmp_path / "few")
    one_label = TrainingData(examples=EXAMPLES[:20] + EXAMPLES[40:])
    with pytest.raises(ValueError, match="at least 4 of each; got 20 positive and 0 negative"):
        run_recipe(RECIPE, one_label, tmp_path / "one")
    with pytest.raises(ValueError, match="label must be one of positive, negative, neutral"):
        train_recipe(TrainingData(examples=({"statement": "A fine day.", "label": "great"},)), tmp_path / "bad")


def test_run_recipe_rejects_unknown_or_mistyped_hyperparameters(tmp_path):
    data = TrainingData(examples=EXAMPLES)
    with pytest.raises(ValueError, match="no hyper-parameter 'learning_rate'; it has encoder, example_weight"):
        run_recipe(RECIPE, data, tmp_path / "a", hyperparameters={"learning_rate": 0.1})
    with pytest.raises(ValueError, match="example_weight: must be a number"):
        run_recipe(RECIPE, data, tmp_path / "b", hyperparameters={"example_weight": "heavy"})
    with pytest.raises(ValueError, match="example_weight must be positive"):
        run_recipe(RECIPE, data, tmp_path / "c", hyperparameters={"example_weight": 0})
    with pytest.raises(ValueError, match="encoder must be one of lora, frozen, not 'full'"):
        run_recipe(RECIPE, data, tmp_path / "d", hyperparameters={"encoder": "full"})
    with pytest.raises(ValueError, match="lora_epochs must be at least 1"):
        run_recipe(RECIPE, data, tmp_path / "e", hyperparameters={"lora_epochs": 0})
