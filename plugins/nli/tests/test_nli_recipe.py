"""The nli training recipe: from the platform's examples alone, from a base file and examples, loading the result
by digest, determinism, and the errors for too little data.

Every premise and hypothesis here is written for these tests; nothing needs ../shared/data.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from dynaforge.defaults.backends.python import PythonBackend
from dynaforge.model_artifacts import ArtifactStore
from dynaforge.model_store import content_hash, file_sha256
from dynaforge.tasks.training import TrainingData, run_recipe
from dynaforge_nli import model as nli_model
from dynaforge_nli.plugin import NLITask
from dynaforge_nli.train import (
    DATA_FILE,
    DEFAULT_EXAMPLE_WEIGHT,
    DEFAULT_LORA_EPOCHS,
    DEFAULT_LORA_TIME_LIMIT_S,
    MIN_EXAMPLES,
    group_folds,
    train_recipe,
)

DEFAULTS = {
    "example_weight": DEFAULT_EXAMPLE_WEIGHT,
    "encoder": "lora",
    "lora_epochs": DEFAULT_LORA_EPOCHS,
    "lora_time_limit_s": DEFAULT_LORA_TIME_LIMIT_S,
}

LABELS = ("entailment", "neutral", "contradiction")

# (premise, entailment, neutral, contradiction): the platform's examples for the examples-only recipe
EXAMPLES = (
    (
        "The orchard on the hill grows pears and plums, and the pickers start work at six in the morning.",
        "The orchard grows plums.",
        "The pickers are paid by the hour.",
        "The orchard grows only apples.",
    ),
    (
        "Rosa repaired the old radio in her garage over two weekends in March.",
        "Rosa fixed a radio.",
        "Rosa sold the radio afterwards.",
        "Rosa never touched the radio.",
    ),
    (
        "The choir rehearses every Thursday evening in the hall behind the church.",
        "The choir practises on Thursdays.",
        "The choir has forty singers.",
        "The choir does not rehearse at all.",
    ),
    (
        "A storm knocked down two oak trees in the park, and the paths stayed closed for a week.",
        "Trees fell in the park.",
        "The oak trees were very old.",
        "No trees fell in the park.",
    ),
    (
        "Kofi ran the city marathon in just under four hours, his best time so far.",
        "Kofi finished a marathon.",
        "Kofi trains with a running club.",
        "Kofi did not finish the marathon.",
    ),
    (
        "The village shop sells fresh bread on weekdays and closes early on Saturdays.",
        "The shop sells bread.",
        "The shop is owned by a family.",
        "The shop never sells bread.",
    ),
    (
        "Ingrid painted the fence blue after the landlord agreed to pay for the paint.",
        "The fence was painted.",
        "Ingrid likes the colour blue.",
        "Nobody painted the fence.",
    ),
    (
        "The train from the harbour to the capital takes three hours and runs twice a day.",
        "There is a train to the capital.",
        "The train is usually crowded.",
        "No train goes to the capital.",
    ),
    (
        "Our neighbours adopted a grey cat from the shelter last winter.",
        "The neighbours have a cat.",
        "The cat sleeps on the sofa.",
        "The neighbours have never had a cat.",
    ),
    (
        "The student council voted to move the spring fair from April to May.",
        "The fair was moved to May.",
        "The fair will have a music stage.",
        "The fair stayed in April.",
    ),
    (
        "Two fishermen rescued a swimmer who had drifted past the end of the pier.",
        "A swimmer was rescued.",
        "The swimmer was a tourist.",
        "Nobody was rescued near the pier.",
    ),
    (
        "The factory switched to solar panels in 2021 and cut its power bill by a third.",
        "The factory uses solar panels.",
        "The factory makes furniture.",
        "The factory does not use solar power.",
    ),
)

# (premise, entailment, neutral, contradiction): the base file, in the format train.py reads
BASE = (
    (
        "The bakery opens at seven and sells out of croissants by nine on most days.",
        "The bakery sells croissants.",
        "The croissants are made with butter.",
        "The bakery never sells croissants.",
    ),
    (
        "Mei walked her two dogs along the canal before the rain started.",
        "Mei has dogs.",
        "The dogs were tired afterwards.",
        "Mei has no dogs.",
    ),
    (
        "The library extended its opening hours during the exam weeks in June.",
        "The library stayed open longer in June.",
        "Many students used the library.",
        "The library closed early in June.",
    ),
    (
        "A local band played at the wedding, and the guests danced until midnight.",
        "There was music at the wedding.",
        "The band was expensive.",
        "Nobody danced at the wedding.",
    ),
    (
        "The ferry carried sixty cars across the bay on its first trip of the season.",
        "The ferry carried cars.",
        "The ferry was late.",
        "The ferry carried no cars.",
    ),
    (
        "Hamid planted a row of sunflowers along the garden wall in May.",
        "Hamid planted flowers.",
        "The sunflowers grew very tall.",
        "Hamid did not plant anything.",
    ),
    (
        "The museum lent three paintings to a gallery in Lisbon for the summer.",
        "The museum lent paintings.",
        "The paintings were insured.",
        "The museum kept all its paintings.",
    ),
    (
        "Snow closed the mountain road for two days, so the delivery arrived late.",
        "The road was closed.",
        "The delivery was food.",
        "The road was never closed.",
    ),
    (
        "The swimming pool reopened after the owners replaced the old tiles.",
        "The pool reopened.",
        "The new tiles are blue.",
        "The pool stayed closed.",
    ),
    (
        "Lena won the chess tournament without losing a single game.",
        "Lena won a tournament.",
        "Lena has a chess coach.",
        "Lena lost every game.",
    ),
)

# (premise, entailment phrased with a negation, contradiction that copies most of the premise): examples that go
# against what the base file teaches (there a negation means contradiction, copied words mean entailment)
ADVERSARIAL = (
    (
        EXAMPLES[0][0],
        "The pickers do not start work in the afternoon.",
        "The orchard on the hill grows pears and plums, and the pickers start work at ten in the morning.",
    ),
    (
        EXAMPLES[1][0],
        "The radio did not stay broken.",
        "Rosa repaired the old radio in her kitchen over two weekends in March.",
    ),
    (
        EXAMPLES[2][0],
        "The choir never misses its Thursday rehearsal.",
        "The choir rehearses every Monday evening in the hall behind the church.",
    ),
    (
        EXAMPLES[3][0],
        "The paths were not open the day after the storm.",
        "A storm knocked down five oak trees in the park, and the paths stayed closed for a week.",
    ),
    (
        EXAMPLES[4][0],
        "Kofi did not need more than four hours.",
        "Kofi ran the city marathon in just under three hours, his best time so far.",
    ),
    (
        EXAMPLES[5][0],
        "The shop does not stay open late on Saturdays.",
        "The village shop sells fresh bread on weekends and closes early on Mondays.",
    ),
    (
        EXAMPLES[6][0],
        "Ingrid did not pay for the paint herself.",
        "Ingrid painted the fence green after the landlord agreed to pay for the paint.",
    ),
    (
        EXAMPLES[7][0],
        "The train does not run only once a day.",
        "The train from the harbour to the capital takes six hours and runs twice a day.",
    ),
    (
        EXAMPLES[8][0],
        "The neighbours did not buy the cat from a breeder.",
        "Our neighbours adopted a black cat from the shelter last winter.",
    ),
    (
        EXAMPLES[9][0],
        "The fair will not be held in April.",
        "The student council voted to move the spring fair from May to April.",
    ),
    (
        EXAMPLES[10][0],
        "The swimmer was not left alone in the water.",
        "Two lifeguards rescued a swimmer who had drifted past the end of the pier.",
    ),
    (
        EXAMPLES[11][0],
        "The factory's power bill did not stay the same.",
        "The factory switched to solar panels in 2015 and cut its power bill by a third.",
    ),
)


def examples(triples=EXAMPLES) -> tuple[dict, ...]:
    """The platform's examples as the task's field values (one per hypothesis)."""
    return tuple(
        {"premise": premise, "hypothesis": hypothesis, "label": label}
        for premise, *hypotheses in triples
        for hypothesis, label in zip(hypotheses, LABELS, strict=False)
    )


def adversarial() -> tuple[dict, ...]:
    return tuple(
        {"premise": premise, "hypothesis": hypothesis, "label": label}
        for premise, entailed, contradicted in ADVERSARIAL
        for hypothesis, label in ((entailed, "entailment"), (contradicted, "contradiction"))
    )


def write_base(folder) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / DATA_FILE, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["context", "statement", "gold_label"])
        for premise, *hypotheses in BASE:
            for hypothesis, code in zip(hypotheses, "enc", strict=True):
                writer.writerow([premise, hypothesis, code])


def accuracy(model, rows) -> float:
    outputs = model.predict([{"premise": r["premise"], "hypothesis": r["hypothesis"]} for r in rows])
    return sum(o["label"] == r["label"] for o, r in zip(outputs, rows, strict=True)) / len(rows)


@pytest.fixture(scope="module")
def recipe():
    return NLITask().training_recipe("default")


@pytest.fixture(scope="module")
def from_examples(recipe, tmp_path_factory):
    """The recipe run on the examples alone, through run_recipe (what a training job does)."""
    out = tmp_path_factory.mktemp("nli-recipe") / "out"
    stages: list[tuple[float, str]] = []
    metrics = run_recipe(
        recipe, TrainingData(examples=examples()), out, seed=0, report=lambda f, s: stages.append((f, s))
    )
    return out, metrics, stages


def test_the_recipe_is_declared():
    from dynaforge.defaults.backends.common import import_object

    task = NLITask()
    assert task.check_declaration() == []
    recipe = task.training_recipe()
    assert recipe is not None and recipe.name == "default" and recipe.model == nli_model.MODEL_NAME
    assert import_object(recipe.trainer) is train_recipe and import_object(recipe.factory) is nli_model.load
    assert recipe.hyperparameters == DEFAULTS
    assert recipe.shipped == nli_model.WEIGHTS_DIR and DATA_FILE in recipe.base_data
    assert recipe.check_hyperparameters({"example_weight": 3}) == ({**DEFAULTS, "example_weight": 3.0}, [])
    code = "import sys, dynaforge_nli.plugin; print('torch' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"


def test_recipe_learns_from_the_examples_alone(from_examples):
    out, metrics, stages = from_examples
    n = len(examples())
    assert metrics["holdout_source"] == "examples" and metrics["base_fit_rows"] == 0
    assert metrics["examples"] == n and metrics["examples_fit"] + metrics["examples_holdout"] == n
    assert metrics["holdout_n"] == metrics["examples_holdout"] >= 5
    assert 0.0 <= metrics["holdout_accuracy"] <= 1.0 and metrics["examples_fit_accuracy"] >= 0.8
    metadata = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["data"]["base"] is None and metadata["data"]["premises_in_both_parts"] == 0
    assert metadata["data"]["examples"]["sha256"] == TrainingData(examples=examples()).digest()
    assert metadata["recipe"]["hyperparameters"] == DEFAULTS
    # the encoder was fine-tuned: its adapter beside the head, the run in the metadata
    assert metrics["encoder"] == "lora" and metrics["lora_steps"] > 0 and not metrics["lora_stopped_by_time_limit"]
    assert metadata["encoder_tuning"]["adapter_file"] == "adapter.safetensors"
    assert metadata["encoder_tuning"]["settings"]["epochs"] == DEFAULT_LORA_EPOCHS
    assert sorted(p.name for p in out.iterdir()) == [
        "adapter.safetensors",
        "head.safetensors",
        "metadata.json",
        "training.json",
    ]
    written = "".join(p.read_bytes().decode("utf-8", "replace") for p in out.iterdir())
    assert not any(e["hypothesis"] in written or e["premise"] in written for e in examples())
    fractions = [f for f, _ in stages]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    assert len({s for _, s in stages}) >= 5


def test_result_loads_by_digest_and_gets_its_examples_right(from_examples, recipe, monkeypatch, tmp_path):
    out, _, _ = from_examples
    monkeypatch.setenv("DYNAFORGE_DATA_DIR", str(tmp_path))
    stored = ArtifactStore.from_settings().add_folder(out)
    assert stored.digest == content_hash(out)
    model = PythonBackend().load(recipe.model_spec(stored.digest).config)
    assert model.metadata["weights"]["source"] == "artifact"
    assert model.encoder is not nli_model.shared_minilm()  # the adapter merged in
    (prediction,) = model.predict([{"premise": EXAMPLES[0][0], "hypothesis": "The pickers start at dawn."}])
    assert prediction["label"] in LABELS
    # the examples moved the model toward their gold labels: far more of them right than the shipped head
    shipped = accuracy(nli_model.load(weights_dir=nli_model.WEIGHTS_DIR), examples())
    assert accuracy(model, examples()) >= max(0.8, shipped + 0.2)


def test_same_seed_gives_the_same_digest(from_examples, recipe, tmp_path):
    out, _, _ = from_examples
    run_recipe(recipe, TrainingData(examples=examples()), tmp_path / "again", seed=0)
    assert content_hash(tmp_path / "again") == content_hash(out)


def test_recipe_with_base_data_keeps_its_held_out_part(tmp_path):
    base = tmp_path / "base"
    write_base(base)
    base_only = train_recipe(TrainingData(base_dir=base), tmp_path / "base-only", seed=0)
    # one example on every base premise: those on a held-out premise must be dropped, not fitted
    on_base = tuple({"premise": p, "hypothesis": "Someone saw it happen.", "label": "neutral"} for p, *_ in BASE)
    data = TrainingData(examples=adversarial() + on_base, base_dir=base)
    both = train_recipe(data, tmp_path / "both", seed=0, example_weight=3.0)
    frozen = train_recipe(data, tmp_path / "frozen", seed=0, example_weight=3.0, encoder="frozen")
    assert not (tmp_path / "frozen" / "adapter.safetensors").exists() and frozen["lora_steps"] is None

    rows = [(p, code) for p, *hypotheses in BASE for code in range(len(hypotheses))]
    folds = group_folds([code for _, code in rows], [p for p, _ in rows], 5, seed=0)
    held_premises = {p for (p, _), f in zip(rows, folds, strict=True) if f == 0}
    assert both["holdout_source"] == "base" and both["holdout_n"] == base_only["holdout_n"] == 3 * len(held_premises)
    assert both["examples_dropped"] == len(held_premises)
    assert both["examples_fit"] == len(adversarial()) + len(BASE) - len(held_premises)
    assert both["base_fit_rows"] == base_only["train_rows"] and both["examples_holdout"] == 0
    metadata = json.loads((tmp_path / "both" / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["data"]["base"]["sha256"] == file_sha256(base / DATA_FILE)
    assert metadata["data"]["premises_in_both_parts"] == 0
    assert "platform examples 3.0" in metadata["data"]["row_weights"]
    # the examples go against the base file's cues; with them the head gets far more of them right
    before = accuracy(nli_model.load(weights_dir=tmp_path / "base-only"), adversarial())
    after = accuracy(nli_model.load(weights_dir=tmp_path / "both"), adversarial())
    assert after >= before + 0.3


def test_too_little_data_is_a_clear_error(tmp_path, recipe):
    few = examples()[: MIN_EXAMPLES - 1]
    with pytest.raises(ValueError, match=f"at least {MIN_EXAMPLES} usable examples"):
        train_recipe(TrainingData(examples=few), tmp_path / "out")
    one_label = tuple(e for e in examples() + adversarial() if e["label"] == "entailment")
    assert len(one_label) >= MIN_EXAMPLES
    with pytest.raises(ValueError, match="at least 2 different labels"):
        train_recipe(TrainingData(examples=one_label), tmp_path / "out")
    with pytest.raises(ValueError, match="example_weight must be positive"):
        train_recipe(TrainingData(examples=examples()), tmp_path / "out", example_weight=0.0)
    with pytest.raises(ValueError, match="encoder must be one of lora, frozen"):
        train_recipe(TrainingData(examples=examples()), tmp_path / "out", encoder="full")
    with pytest.raises(ValueError, match="example_weight: must be a number"):
        run_recipe(recipe, TrainingData(examples=examples()), tmp_path / "out", hyperparameters={"example_weight": "x"})
