"""The qa training recipe: examples as paragraphs, training from the platform's examples alone and from a base file
with examples, loading the result by digest, determinism, and the errors for too little data.

Every passage, question and answer here is written for these tests (the base file's passages are the plugin's own
demo contexts); nothing needs ../shared/data.
"""

from __future__ import annotations

import json

import pytest

from dynaforge.defaults.backends.python import PythonBackend
from dynaforge.model_artifacts import ArtifactStore
from dynaforge.model_store import content_hash, file_sha256
from dynaforge.tasks.training import TrainingData, run_recipe
from dynaforge_qa import model as qa_model
from dynaforge_qa.plugin import QATask
from dynaforge_qa.scoring import token_f1
from dynaforge_qa.train import (
    DATA_FILE,
    DEFAULT_EXAMPLE_WEIGHT,
    DEFAULTS,
    MIN_EXAMPLES,
    example_paragraphs,
    read_squad,
    split_paragraphs,
    train_recipe,
)

# (passage, ((question, answer), ...)): the platform's examples
PASSAGES = (
    (
        "The Harwick Observatory sits on a ridge above the town of Elsby, 1,140 metres above sea level. It was "
        "founded in 1902 by the astronomer Clara Menzies, who paid for the first telescope with money from her "
        "family's tea business. The main dome, painted white in 1958, houses a reflecting telescope with a mirror "
        "1.2 metres across. Each August the observatory opens its doors for three nights so that visitors can "
        "watch the Perseid meteor shower. In 2016 a storm tore part of the roof away, and repairs took fourteen "
        "months.",
        (
            ("Who founded the observatory?", "Clara Menzies"),
            ("In which year was the observatory founded?", "1902"),
            ("How wide is the telescope's mirror?", "1.2 metres"),
            ("How long did the repairs after the storm take?", "fourteen months"),
            ("How high above sea level is the observatory?", "1,140 metres"),
            ("What paid for the first telescope?", "money from her family's tea business"),
        ),
    ),
    (
        "The Oslin Bridge crosses the River Tarn at its narrowest point, where the water is only ninety metres "
        "wide. Before the bridge opened in 1931, travellers paid a boatman named Edgar Foyle to row them across. "
        "The bridge was designed by the engineer Ruth Calloway and took four years to build. Its central arch is "
        "made of local sandstone, while the railings were cast in iron at a foundry in Pellham. Since 1990 the "
        "bridge has been closed to cars and is used only by walkers and cyclists.",
        (
            ("How wide is the river where the bridge crosses it?", "ninety metres"),
            ("When did the bridge open?", "1931"),
            ("Who rowed travellers across the river before there was a bridge?", "Edgar Foyle"),
            ("Which engineer designed the bridge?", "Ruth Calloway"),
            ("What is the central arch made of?", "local sandstone"),
            ("Who may use the bridge today?", "walkers and cyclists"),
        ),
    ),
    (
        "The Lantern Market of Corvale is held on the last Saturday of November. Around 300 stalls line the old "
        "harbour, selling paper lanterns, roasted chestnuts and woollen gloves. The market began in 1974 as a "
        "fundraiser for the town's lifeboat crew. At dusk the mayor lights the largest lantern, which is nearly "
        "four metres tall, and a brass band from the nearby village of Amsworth plays until ten o'clock. Profits "
        "are now shared between the lifeboat crew and the local school.",
        (
            ("On which day is the Lantern Market held?", "the last Saturday of November"),
            ("How many stalls line the harbour?", "Around 300"),
            ("In which year did the market begin?", "1974"),
            ("Who lights the largest lantern?", "the mayor"),
            ("How tall is the largest lantern?", "nearly four metres"),
            ("Where does the brass band come from?", "the nearby village of Amsworth"),
        ),
    ),
    (
        "The marsh vole of the Leffen Valley is a small rodent about eleven centimetres long, not counting its "
        "tail. It builds round nests of reeds just above the waterline and can swim for several minutes without "
        "rest. Females raise up to four litters a year. The species was first recorded in 1887 by the naturalist "
        "Oskar Brandt, who mistook it for a young water rat. Draining the valley's wetlands for farmland in the "
        "1960s reduced its numbers sharply, and today it is protected by law.",
        (
            ("How long is the marsh vole without its tail?", "about eleven centimetres"),
            ("What does the vole build its nests from?", "reeds"),
            ("How many litters can a female raise in a year?", "up to four"),
            ("Which naturalist first recorded the species?", "Oskar Brandt"),
            ("What did the naturalist mistake the vole for?", "a young water rat"),
            ("When were the wetlands drained for farmland?", "the 1960s"),
        ),
    ),
    (
        "Penrose & Vale, a small printing firm in the city of Dorrick, was started in 1921 by two cousins, Agatha "
        "Penrose and Samuel Vale. For its first thirty years it printed mostly train timetables and theatre "
        "posters. In 1956 the firm bought its first offset press from a supplier in Leipzig. The company now "
        "employs 48 people and prints books for several independent publishers. Its workshop on Canal Street "
        "still contains the hand press on which the cousins printed their first order, a set of wedding "
        "invitations.",
        (
            ("In which city is the printing firm?", "Dorrick"),
            ("When was the firm started?", "1921"),
            ("What did the firm mostly print in its first thirty years?", "train timetables and theatre posters"),
            ("Where did the first offset press come from?", "a supplier in Leipzig"),
            ("How many people does the company employ?", "48"),
            ("What was the cousins' first order?", "a set of wedding invitations"),
        ),
    ),
)

# questions about the plugin's demo passages, in their order: the base file
BASE_QUESTIONS = (
    (
        ("Which estuary does the canal reach?", "Hollin Mouth"),
        ("How many locks does the canal have?", "23"),
        ("What did barges carry in the 1840s?", "slate and grain"),
    ),
    (
        ("How wide are the adult moth's wings?", "about four centimetres"),
        ("At what time of day is the moth active?", "at dawn"),
        ("How many adults did the 2019 survey count?", "fewer than 600"),
    ),
    (
        ("When was the guild founded?", "1612"),
        ("How many lamps did each member look after?", "about forty lamps"),
        ("Who was the guild's last master?", "Henri Daubel"),
    ),
    (
        ("How many riders took part in the first edition?", "eleven riders"),
        ("Which pass does the queen stage climb?", "the Passo Grigio"),
        ("What does the winner receive?", "a jersey dyed the blue-green of the largest lake"),
    ),
    (
        ("What is the name of Varga's opera?", "The Salt Bride"),
        ("How long is the shortened version?", "about two and a half hours"),
        ("Who conducted the first performance?", "her brother Pavel"),
    ),
    (
        ("How many bakeries formed the cooperative?", "seven bakeries"),
        ("How long is the Millbrook rye proved?", "eighteen hours"),
        ("How often is the board elected?", "every two years"),
    ),
)
BASE_PASSAGES = tuple(c["passage"] for c in QATask.demo_contexts)


def span(passage: str, text: str) -> dict:
    return {"text": text, "start": passage.index(text)}


def examples(passages=PASSAGES) -> tuple[dict, ...]:
    """The platform's examples as the task's field values."""
    return tuple(
        {"passage": passage, "question": question, "answer": span(passage, answer)}
        for passage, pairs in passages
        for question, answer in pairs
    )


def write_base(folder) -> None:
    """A tiny SQuAD 2.0 file: the demo passages with the base questions."""
    paragraphs = [
        {
            "context": passage,
            "qas": [
                {"id": f"b{p}-{n}", "question": q, "is_impossible": False, "answers": [span(passage, a)]}
                for n, (q, a) in enumerate(pairs)
            ],
        }
        for p, (passage, pairs) in enumerate(zip(BASE_PASSAGES, BASE_QUESTIONS, strict=True))
    ]
    for paragraph in paragraphs:
        for qa in paragraph["qas"]:
            qa["answers"] = [{"text": a["text"], "answer_start": a["start"]} for a in qa["answers"]]
    folder.mkdir(parents=True, exist_ok=True)
    data = {"version": "v2.0", "data": [{"title": "Demo", "paragraphs": paragraphs}]}
    (folder / DATA_FILE).write_text(json.dumps(data), encoding="utf-8")


def mean_f1(model, rows) -> float:
    outputs = model.predict([{"passage": r["passage"], "question": r["question"]} for r in rows])
    return (
        100
        * sum(token_f1(o["answer"]["text"], r["answer"]["text"]) for o, r in zip(outputs, rows, strict=True))
        / len(rows)
    )


@pytest.fixture(scope="module")
def recipe():
    return QATask().training_recipe("default")


@pytest.fixture
def task_qa():
    return QATask()


@pytest.fixture(scope="module")
def from_examples(recipe, tmp_path_factory):
    """The recipe run on the examples alone with its default hyper-parameters, through run_recipe."""
    out = tmp_path_factory.mktemp("qa-recipe") / "out"
    stages: list[tuple[float, str]] = []
    metrics = run_recipe(
        recipe, TrainingData(examples=examples()), out, seed=0, report=lambda f, s: stages.append((f, s))
    )
    return out, metrics, stages


def test_the_recipe_is_declared(recipe):
    from dynaforge.defaults.backends.common import import_object

    assert QATask().check_declaration() == []
    assert recipe.name == "default" and recipe.model == qa_model.MODEL_NAME
    assert import_object(recipe.trainer) is train_recipe and import_object(recipe.factory) is qa_model.load
    assert recipe.hyperparameters == {"example_weight": DEFAULT_EXAMPLE_WEIGHT, "epochs": DEFAULTS["epochs"]}
    assert recipe.shipped == qa_model.WEIGHTS_DIR and DATA_FILE in recipe.base_data
    assert recipe.check_hyperparameters({"epochs": 3, "example_weight": 1})[1] == []
    assert [e.field for e in recipe.check_hyperparameters({"epochs": 2.5})[1]] == ["hyperparameters.epochs"]


def test_examples_become_paragraphs_of_their_passage():
    first, second = PASSAGES[0][0], PASSAGES[1][0]
    rows = [
        {"passage": first, "question": "Who founded it?", "answer": span(first, "Clara Menzies")},
        {"passage": second, "question": "Who designed it?", "answer": [span(second, "Ruth Calloway")] * 2},
        {"passage": first, "question": "When?", "answer": [{"text": "1902", "start": 0}, span(first, "1902")]},
        {"passage": first, "question": "Where?", "answer": {"text": "Elsby", "start": 3}},  # not at its offset
        {"passage": first, "answer": span(first, "Elsby")},  # no question
    ]
    paragraphs, skipped = example_paragraphs(rows)
    assert [p.context for p in paragraphs] == [first, second]
    assert [[q.question for q in p.questions] for p in paragraphs] == [
        ["Who founded it?", "When?"],
        ["Who designed it?"],
    ]
    assert paragraphs[0].questions[1].answers == [("1902", first.index("1902"))]
    assert paragraphs[1].questions[0].answers == [("Ruth Calloway", second.index("Ruth Calloway"))]
    assert skipped == {
        "answers_not_in_passage": 2,
        "examples_without_usable_answer": 1,
        "examples_without_passage_or_question": 1,
    }


def test_recipe_learns_from_the_examples_alone(from_examples):
    out, metrics, stages = from_examples
    n = len(examples())
    assert metrics["holdout_source"] == "examples" and metrics["examples"] == metrics["examples_usable"] == n
    assert metrics["examples_fit"] + metrics["examples_holdout"] == n and metrics["examples_dropped"] == 0
    assert metrics["holdout_questions"] == metrics["examples_holdout"] > 0 and metrics["holdout_paragraphs"] == 1
    assert 0.0 <= metrics["holdout_f1"] <= 100.0 and len(metrics["validation_f1_by_epoch"]) == DEFAULTS["epochs"]
    metadata = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["head"]["start"].startswith("the shipped head")
    assert metadata["data"]["base"] is None
    assert metadata["data"]["examples"]["sha256"] == TrainingData(examples=examples()).digest()
    assert metadata["recipe"]["hyperparameters"] == {"example_weight": DEFAULT_EXAMPLE_WEIGHT, "epochs": 30}
    assert sorted(p.name for p in out.iterdir()) == ["head.safetensors", "metadata.json", "training.json"]
    written = "".join(p.read_bytes().decode("utf-8", "replace") for p in out.iterdir())
    assert not any(
        e["question"] in written or e["answer"]["text"] in written for e in examples() if len(e["answer"]["text"]) > 4
    )
    assert not any(passage[:60] in written for passage, _ in PASSAGES)
    fractions = [f for f, _ in stages]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    assert sum("epoch" in s for _, s in stages) == DEFAULTS["epochs"] + metrics["epochs"]


def test_result_loads_by_digest_and_answers_its_examples_better(from_examples, recipe, task_qa, monkeypatch, tmp_path):
    out, _, _ = from_examples
    monkeypatch.setenv("DYNAFORGE_DATA_DIR", str(tmp_path))
    stored = ArtifactStore.from_settings().add_folder(out)
    assert stored.digest == content_hash(out)
    model = PythonBackend().load(recipe.model_spec(stored.digest).config)
    assert model.metadata["weights"]["source"] == "artifact"
    passage = PASSAGES[2][0]
    (output,) = model.predict([{"passage": passage, "question": "What do the stalls sell?"}])
    assert task_qa.read_model_output(output, {"passage": passage})["answer"]["text"]
    # fine-tuned on them, the head answers its examples far better than the shipped head it started from
    shipped = mean_f1(qa_model.load(weights_dir=qa_model.WEIGHTS_DIR), examples())
    assert mean_f1(model, examples()) >= shipped + 10


def test_same_seed_gives_the_same_digest(tmp_path):
    data = TrainingData(examples=examples())
    train_recipe(data, tmp_path / "a", seed=3, epochs=2)
    train_recipe(data, tmp_path / "b", seed=3, epochs=2)
    assert content_hash(tmp_path / "a") == content_hash(tmp_path / "b")


def test_recipe_with_base_data_keeps_its_held_out_part(tmp_path):
    base = tmp_path / "base"
    write_base(base)
    # one more example about every base passage: about a held-out one it is dropped, about a validation one it
    # joins the final fit only, about a fitting one the fit
    on_base = tuple(
        {"passage": passage, "question": "What is this passage about?", "answer": span(passage, passage.split()[1])}
        for passage in BASE_PASSAGES
    )
    metrics = train_recipe(
        TrainingData(examples=examples() + on_base, base_dir=base),
        tmp_path / "out",
        seed=0,
        epochs=3,
        example_weight=3.0,
    )
    fit_par, val_par, hold_par = split_paragraphs(read_squad(base / DATA_FILE)[0], 0)
    assert metrics["holdout_source"] == "base" and metrics["holdout_paragraphs"] == len(hold_par)
    assert metrics["holdout_questions"] == sum(len(p.questions) for p in hold_par)
    assert metrics["examples_dropped"] == len(hold_par) and metrics["examples_holdout"] == 0
    assert metrics["examples_fit"] == len(examples()) + len(fit_par) + len(val_par)
    assert metrics["examples_fit_f1"] is not None and 0.0 <= metrics["examples_fit_f1"] <= 100.0
    metadata = json.loads((tmp_path / "out" / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["data"]["holdout"]["paragraph_keys"] == [p.key for p in hold_par]
    assert metadata["data"]["base"]["file"]["sha256"] == file_sha256(base / DATA_FILE)
    assert "3.0" in metadata["data"]["loss_weights"] and "start" not in metadata["head"]
    assert qa_model.load(weights_dir=tmp_path / "out").predict(
        [{"passage": BASE_PASSAGES[0], "question": "How many locks does the canal have?"}]
    )


def test_too_little_data_is_a_clear_error(tmp_path, recipe):
    few = examples()[: MIN_EXAMPLES - 1]
    with pytest.raises(ValueError, match=f"at least {MIN_EXAMPLES} usable examples about at least 3"):
        train_recipe(TrainingData(examples=few), tmp_path / "out")
    two_passages = examples(PASSAGES[:2]) * 2
    assert len(two_passages) >= MIN_EXAMPLES
    with pytest.raises(ValueError, match=r"about 2 passage\(s\)"):
        train_recipe(TrainingData(examples=two_passages), tmp_path / "out")
    misplaced = tuple({**e, "answer": {**e["answer"], "start": e["answer"]["start"] + 1}} for e in examples())
    with pytest.raises(ValueError, match="answers_not_in_passage 30"):
        train_recipe(TrainingData(examples=misplaced), tmp_path / "out")
    with pytest.raises(ValueError, match="epochs must be at least 1"):
        train_recipe(TrainingData(examples=examples()), tmp_path / "out", epochs=0)
    with pytest.raises(ValueError, match="example_weight must be positive"):
        run_recipe(recipe, TrainingData(examples=examples()), tmp_path / "out", hyperparameters={"example_weight": -1})
