"""The data-selection plugin on its own: the conformance kit, the fixed recipe, the shipped data and what a
selection of it is worth. No server: see test_end_to_end.py for that."""

from __future__ import annotations

import json
import math

import pytest
from dynaforge import DataSelection
from dynaforge.plugins import Plugins
from dynaforge.testing import parametrize_with_checks

from dynaforge_data_selection import data, recipe, selection
from dynaforge_data_selection.plugin import BUDGET, CODE, DataSelectionTask


@parametrize_with_checks([CODE])
def test_the_task_conforms(check):
    check()


@pytest.fixture(scope="module")
def plugins():
    return Plugins(allowlist={CODE})  # loaded from its entry point, as a server loads it


def test_installed_taking_selections_only(plugins):
    assert plugins.errors == {}
    task = plugins.task(CODE)
    assert isinstance(task, DataSelectionTask)
    assert task.submission_kinds == ("selection",)
    assert task.data_selection == DataSelection(
        budget=BUDGET, trainer="dynaforge_data_selection.recipe:fit", description=task.data_selection.description
    )
    assert task.principal_metric == "macro_f1"


def score(plugins, predictor, rows) -> dict[str, float]:
    """The task's metrics of a predictor on rows, computed as an evaluation computes them."""
    task = plugins.task(CODE)
    outputs = predictor.predict([task.build_model_input({}, {"text": row["text"]}) for row in rows])
    preds = [task.read_model_output(output)["label"] for output in outputs]
    golds = [row["label"] for row in rows]
    return {name: plugins.registry.metrics[name].compute(golds, preds) for name in task.metrics}


# -- the recipe


def test_the_recipe_learns_words_and_answers_every_label():
    examples = [
        {"text": "The striker scores a goal.", "label": "sports"},
        {"text": "A goal in the final match!", "label": "sports"},
        {"text": "Chefs bake bread and cake.", "label": "food"},
    ]
    model = recipe.fit(examples, seed=0)
    goal, bread, unknown = model.predict([{"text": "GOAL!"}, {"text": "fresh bread"}, {"text": "zyzzyva"}])
    assert goal["label"] == "sports" and bread["label"] == "food"
    # with no known word, the prior decides (two sports items of three)
    assert unknown["label"] == "sports"
    assert unknown["probabilities"]["sports"] == pytest.approx(2 / 3)
    # every task label has a probability; those the selection lacks have 0
    assert set(goal["probabilities"]) == set(data.LABELS)
    assert goal["probabilities"]["science"] == 0.0 and goal["probabilities"]["travel"] == 0.0
    assert math.fsum(goal["probabilities"].values()) == pytest.approx(1.0)
    # Laplace smoothing by hand: 'goal' is 2 of the 11 sports words, 0 of the 5 food words; 13 distinct words
    sports = 2 / 3 * (2 + 1) / (11 + 13)
    food = 1 / 3 * (0 + 1) / (5 + 13)
    assert goal["probabilities"]["sports"] == pytest.approx(sports / (sports + food)) == pytest.approx(54 / 66)


def test_the_recipe_is_deterministic():
    pool = data.pool()
    texts = [{"text": row["text"]} for row in data.test_set()]
    first = recipe.fit(pool[:BUDGET], seed=0).predict(texts)
    assert recipe.fit(pool[:BUDGET], seed=0).predict(texts) == first
    assert recipe.fit(pool[:BUDGET], seed=7).predict(texts) == first  # naive Bayes draws no random numbers
    assert json.dumps(first)  # outputs are plain JSON


def test_degenerate_selections_still_predict(plugins):
    task = plugins.task(CODE)
    texts = [{"text": "The home team wins."}, {"text": "A comet near the sun."}]
    # nothing selected: every label equally likely, the first label the answer
    for output in recipe.fit([], seed=0).predict(texts):
        assert output == {"label": "sports", "probabilities": dict.fromkeys(data.LABELS, 0.25)}
        assert task.read_model_output(output)["label"] == "sports"
    # one label only: always that label
    only_food = [row for row in data.pool() if row["label"] == "food"][:5]
    assert [o["label"] for o in recipe.fit(only_food, seed=0).predict(texts)] == ["food", "food"]
    # a tie goes to the label that comes first in the task's order
    tie = recipe.fit([{"text": "same words", "label": "travel"}, {"text": "same words", "label": "science"}], seed=0)
    assert tie.predict([{"text": "same words"}])[0]["label"] == "science"


def test_the_default_target_is_the_recipe_on_the_seed_set(plugins):
    [spec] = plugins.task(CODE).default_target_models
    assert spec.backend == "python" and spec.config == {"factory": "dynaforge_data_selection.recipe:load_seed"}
    model = plugins.registry.backends["python"].load(spec.config)
    texts = [{"text": row["text"]} for row in data.test_set()]
    assert model.predict(texts) == recipe.fit(data.seed_set(), seed=0).predict(texts)


# -- the data


def test_the_shipped_files_are_the_templates_built_afresh():
    assert data.stale() == [], "run python -m dynaforge_data_selection.data build"
    assert data.read_jsonl(data.POOL_FILE) == data.pool()
    assert data.read_jsonl(data.TEST_FILE) == data.test_set()
    assert data.read_jsonl(data.SEED_FILE) == data.seed_set()


def test_the_sets_are_valid_and_shaped_as_documented(plugins, tmp_path):
    task = plugins.task(CODE)
    seed, pool, test = data.seed_set(), data.pool_items(), data.test_set()
    for row in [*seed, *(item.fields for item in pool), *test]:
        assert task.validate_example(row, None) == row
    assert [len(seed), len(pool), len(test)] == [12, 202, 60]
    kinds = [item.kind for item in pool]
    assert {kind: kinds.count(kind) for kind in set(kinds)} == {"clean": 140, "mislabelled": 32, "duplicate": 30}
    assert sorted(row["label"] for row in test) == sorted(data.LABELS * 15)
    # the test set's headlines appear nowhere else, whatever their case and marks
    seen = {tuple(recipe.words(row["text"])) for row in [*seed, *(item.fields for item in pool)]}
    assert not seen & {tuple(recipe.words(row["text"])) for row in test}
    # what write_jsonl writes is what dynaforge datasets import --format jsonl reads
    path = data.write_jsonl(tmp_path / "pool.jsonl", data.pool())
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert first == {"format": "dynaforge.example/1", "status": "ACCEPTED", "fields": pool[0].fields}


# -- what a selection is worth


def test_a_careful_selection_beats_careless_ones(plugins):
    items = data.pool_items()
    pool = [item.fields for item in items]
    test = data.test_set()

    def worth(rows):
        return score(plugins, recipe.fit(rows, seed=0), test)["macro_f1"]

    clean = [item.fields for item in items if item.kind == "clean"]
    balanced_clean = [row for label in data.LABELS for row in [r for r in clean if r["label"] == label][:10]]
    noisy = [item.fields for item in items if item.kind != "clean"][:BUDGET]
    one_label = [row for row in clean if row["label"] == "sports"][:BUDGET]
    first = pool[:BUDGET]
    assert len(balanced_clean) == len(noisy) == len(one_label) == len(first) == BUDGET

    assert worth(balanced_clean) == pytest.approx(0.9338524, abs=1e-6)
    assert worth(first) == pytest.approx(0.4743590, abs=1e-6)  # 16 copies or wrong labels, 18 sports items
    assert worth(one_label) == pytest.approx(0.1)  # sports always: F1 0.4 on one label of four
    assert worth(noisy) < 0.2  # wrong labels teach wrong topics
    # the seed set's twelve clean items do better than the pool's first forty
    assert worth(data.seed_set()) == pytest.approx(0.6152421, abs=1e-6)


def test_the_baseline_strategy_finds_the_noise_without_being_told():
    items = data.pool_items()
    pool = [item.fields for item in items]
    kept = selection.deduplicate(pool)
    # one copy of each duplicated headline stays
    assert len(kept) == len(pool) - 27
    checked = selection.consistent(pool, kept)
    assert [items[p].kind for p in checked].count("mislabelled") == 0
    chosen = selection.careful(pool, BUDGET)
    assert len(chosen) == BUDGET == len(set(chosen))
    labels = [pool[p]["label"] for p in chosen]
    assert all(labels.count(label) == BUDGET // len(data.LABELS) for label in data.LABELS)
    assert selection.careless(pool, BUDGET) == list(range(BUDGET))
    model = recipe.fit([pool[p] for p in chosen], seed=0)
    gold = [row["label"] for row in data.test_set()]
    guesses = [o["label"] for o in model.predict([{"text": row["text"]} for row in data.test_set()])]
    assert sum(g == p for g, p in zip(gold, guesses, strict=True)) / len(gold) > 0.9
