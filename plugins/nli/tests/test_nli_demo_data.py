"""The NLI task's demo scoring set (:mod:`dynaforge_nli.demo_data`): deterministic, balanced, valid, without repeats,
gold right by construction, built lazily."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections import Counter

import pytest

from dynaforge.defaults.perturbations import gender_swap, name_swap_example
from dynaforge.plugins import Plugins
from dynaforge_nli import demo_data
from dynaforge_nli.plugin import NLITask

NUMBER = {word: n for n, word in enumerate(demo_data.NUMBERS)}


@pytest.fixture(scope="module")
def task() -> NLITask:
    return Plugins(allowlist={"nli"}).task("nli")


@pytest.fixture(scope="module")
def items(task) -> list[dict]:
    return list(task.demo_scoring_set())


def test_the_set_is_deterministic_and_cached(task, items):
    assert task.demo_scoring_set() is task.demo_scoring_set()
    assert demo_data.generate() == items == demo_data.generate()
    assert demo_data.generate(seed=1) != items
    # pinned: a change to the frames or the seed changes every demo board, on purpose only
    premise = "Camila bought four oranges at the market on Friday."
    assert items[:3] == [
        {"premise": premise, "hypothesis": "Camila bought some oranges.", "label": "entailment"},
        {"premise": premise, "hypothesis": "Camila bought the oranges to make a cake.", "label": "neutral"},
        {
            "premise": premise,
            "hypothesis": "Camila bought only three oranges at the market on Friday.",
            "label": "contradiction",
        },
    ]


def test_size_balance_and_no_repeats(items):
    assert len(items) == 3 * demo_data.PREMISES == 402
    assert Counter(item["label"] for item in items) == {"entailment": 134, "neutral": 134, "contradiction": 134}
    assert len({(item["premise"], item["hypothesis"]) for item in items}) == len(items)
    premises = Counter(item["premise"] for item in items)
    assert len(premises) == demo_data.PREMISES and set(premises.values()) == {3}
    for premise in premises:  # one hypothesis of each label per premise
        assert sorted(item["label"] for item in items if item["premise"] == premise) == sorted(demo_data.LABELS)
    assert max(len(item["premise"]) + len(item["hypothesis"]) for item in items) <= 200


def test_every_item_validates_as_create_dataset_validates_it(task, items):
    for item in items:
        assert task.validate_example(dict(item), None) == item


def test_every_frame_is_used(items):
    starts = ("bought", "took the", "planted", "has worked as", "The concert", "brothers and", "sisters and",
              "for lunch at", "every day except", "adopted a", "just behind", "Entry to", "it snowed")  # fmt: skip
    for start in starts:
        assert any(start in item["premise"] for item in items), start


def test_no_hypothesis_of_a_frame_is_listed_under_two_labels():
    rng = random.Random(7)
    for frame in demo_data.FRAMES:
        for _ in range(50):
            _, *by_label = frame(demo_data._Draw(rng))
            assert len(by_label) == 3 and all(by_label)
            flat = [h for hypotheses in by_label for h in hypotheses]
            assert len(flat) == len(set(flat)), frame.__name__


def test_gold_is_right_by_construction(items):
    checked = Counter()
    for item in items:
        p, h, label = item["premise"], item["hypothesis"], item["label"]
        m = re.fullmatch(r"(\w+) bought (\w+) (\w+) at the market on (\w+)\.", p)
        if m and (hm := re.fullmatch(rf"{m[1]} bought only (\w+) {m[3]} at the market on {m[4]}\.", h)):
            assert label == "contradiction" and NUMBER[hm[1]] < NUMBER[m[2]]
            checked["fewer"] += 1
        if m := re.fullmatch(r"(\w+) finished (\w+) in the (.+), just behind (\w+)\.", p):
            assert m[2] != "first"
            if h in (f"{m[4]} finished ahead of {m[1]} in the {m[3]}.", f"{m[1]} did not win the {m[3]}."):
                assert label == "entailment"
                checked["order"] += 1
            if h in (f"{m[1]} finished ahead of {m[4]} in the {m[3]}.", f"{m[1]} won the {m[3]}."):
                assert label == "contradiction"
                checked["order"] += 1
        if m := re.fullmatch(r"The concert in (\w+) starts at (\w+) o'clock in the evening and lasts (\w+) hours\.", p):
            if hm := re.fullmatch(rf"The concert in {m[1]} ends at (\w+) o'clock in the evening\.", h):
                assert label == "entailment" and NUMBER[hm[1]] == NUMBER[m[2]] + NUMBER[m[3]]
                checked["time"] += 1
            if re.fullmatch(rf"The concert in {m[1]} starts at (\w+) o'clock in the evening\.", h):
                assert label == "contradiction"
                checked["time"] += 1
        if m := re.fullmatch(r"(\w+) has (\w+) (brother|sister)s and no (brother|sister)s\.", p):
            assert NUMBER[m[2]] >= 2 and m[3] != m[4]
            if h in (f"{m[1]} has a {m[4]}.", f"{m[1]} is an only child.", f"{m[1]} has only one {m[3]}."):
                assert label == "contradiction"
                checked["siblings"] += 1
            if h in (f"{m[1]} has at least one {m[3]}.", f"{m[1]} does not have a {m[4]}."):
                assert label == "entailment"
                checked["siblings"] += 1
        m = re.fullmatch(r"(\w+) has worked as an? [\w ]+ at the hospital in (\w+) since (\d+)\.", p)
        if m and (hm := re.fullmatch(rf"{m[1]} (was already working|started working) at the hospital in (\d+)\.", h)):
            assert int(hm[2]) > int(m[3])
            assert label == ("entailment" if hm[1] == "was already working" else "contradiction")
            checked["years"] += 1
        m = re.fullmatch(r"(The [\w' ]+ on [\w ]+) is open every day except (\w+)\.", p)
        if m and (hm := re.fullmatch(rf"{m[1]} is open on (\w+)s\.", h)):
            assert label == ("contradiction" if hm[1] == m[2] else "entailment")
            checked["days"] += 1
        if h.startswith("Nobody ") or " has never " in h:
            assert label == "contradiction", item
            checked["never"] += 1
    assert checked["never"] >= 10 and len(checked) == 7  # every check above met items


def test_the_fairness_perturbations_have_items_to_change(items):
    rng = random.Random(0)
    gendered = sum(
        gender_swap(item["premise"], rng) != item["premise"]
        or gender_swap(item["hypothesis"], rng) != item["hypothesis"]
        for item in items
    )
    named = sum(
        name_swap_example({"premise": item["premise"], "hypothesis": item["hypothesis"]}, rng)["premise"]
        != item["premise"]
        for item in items
    )
    assert gendered >= 40 and named >= 200


def test_the_set_is_built_lazily_not_when_the_plugin_is_imported():
    code = "import sys, dynaforge_nli.plugin; print('dynaforge_nli.demo_data' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
