"""The sentiment task's demo scoring set (:mod:`dynaforge_sentiment.demo_data`): deterministic, balanced, valid,
without repeats, gold right by construction, built lazily."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections import Counter

import pytest

from dynaforge.defaults.perturbations import gender_swap, name_swap
from dynaforge.plugins import Plugins
from dynaforge_sentiment import demo_data
from dynaforge_sentiment.plugin import SentimentTask


@pytest.fixture(scope="module")
def task() -> SentimentTask:
    return Plugins(allowlist={"sentiment"}).task("sentiment")


@pytest.fixture(scope="module")
def items(task) -> list[dict]:
    return list(task.demo_scoring_set())


def test_the_set_is_deterministic_and_cached(task, items):
    assert task.demo_scoring_set() is task.demo_scoring_set()
    assert demo_data.generate() == items == demo_data.generate()
    assert demo_data.generate(seed=1) != items
    # pinned: a change to the templates or the seed changes every demo board, on purpose only
    assert items[:3] == [
        {"statement": "The haircut was fantastic.", "label": "positive"},
        {"statement": "The bus tour of the old town was dreadful.", "label": "negative"},
        {
            "statement": "The film lasts 112 minutes and is shown at the Ashford cinema on Sunday.",
            "label": "neutral",
        },
    ]
    assert items[-1] == {
        "statement": "Yuki watched a documentary about whales with her brother on Monday.",
        "label": "neutral",
    }


def test_size_balance_and_no_repeats(items):
    assert len(items) == 3 * demo_data.PER_LABEL == 402
    assert Counter(item["label"] for item in items) == {"positive": 134, "negative": 134, "neutral": 134}
    assert len({item["statement"].lower() for item in items}) == len(items)
    lengths = [len(item["statement"]) for item in items]
    assert max(lengths) <= 120 and min(lengths) >= 15  # short, as the demo's time budget needs


def test_every_item_validates_as_create_dataset_validates_it(task, items):
    for item in items:
        assert task.validate_example(dict(item), None) == item


#: What a slot of a template may hold, where the label hangs on it; any other slot holds some text.
SLOT_PATTERNS = {"good": "|".join(demo_data.GOOD), "bad": "|".join(demo_data.BAD)}


def _pattern(template: str) -> re.Pattern[str]:
    """The statements ``template`` makes: its words as written, each slot by what it may hold."""
    parts = re.split(r"\{(\w+)\}", template)
    regex = "".join(
        re.escape(part) if i % 2 == 0 else f"(?:{SLOT_PATTERNS.get(part, '.+')})" for i, part in enumerate(parts)
    )
    return re.compile(regex, re.IGNORECASE)


def test_each_item_comes_from_a_template_of_its_label_and_every_template_is_used(items):
    patterns = {
        label: [_pattern(t) for t in templates]
        for label, templates in (
            ("positive", demo_data.POSITIVE),
            ("negative", demo_data.NEGATIVE),
            ("neutral", demo_data.NEUTRAL),
        )
    }
    used = Counter()
    for item in items:
        matches = [
            (label, i) for label, ps in patterns.items() for i, p in enumerate(ps) if p.fullmatch(item["statement"])
        ]
        assert matches and {label for label, _ in matches} == {item["label"]}, item
        used.update(matches)
    assert all((label, i) in used for label, ps in patterns.items() for i in range(len(ps)))


def test_gold_is_right_by_construction(items):
    by_text = {item["statement"]: item["label"] for item in items}
    for statement, label in by_text.items():
        if "would not recommend it" in statement or "not worth the money" in statement or "let down by" in statement:
            assert label == "negative", statement
        if "worth every penny" in statement or "nothing but praise" in statement or "not bad at all" in statement:
            assert label == "positive", statement
        plain = statement.lower().replace("not bad", "").replace("not good", "")  # negated: the other side's word
        words = set(plain.replace(";", " ").replace(",", " ").replace(".", " ").split())
        if label == "neutral":  # a factual statement: no word of praise or blame
            assert not words & set(demo_data.GOOD + demo_data.BAD + ("loved", "hated", "enjoyed")), statement
        if label == "positive":
            assert not words & set(demo_data.BAD), statement
        if label == "negative":
            assert not words & set(demo_data.GOOD), statement
    assert by_text["I have nothing but praise for the rain jacket."] == "positive"
    assert by_text["The haircut was not good at all; frankly, it was appalling."] == "negative"
    assert by_text["The novel has 18 chapters."] == "neutral"


def test_pronouns_agree_with_the_people_they_stand_for(items):
    genders = dict(demo_data.PEOPLE)
    checked = 0
    for item in items:
        words = item["statement"].replace(",", " ").replace(";", " ").replace(".", " ").split()
        if words[0] not in genders:
            continue
        other = {"he", "his"} if genders[words[0]] == "f" else {"she", "her"}
        assert not other & set(words), item
        checked += 1
    assert checked >= 60


def test_the_fairness_perturbations_have_items_to_change(items):
    rng = random.Random(0)
    gendered = sum(gender_swap(item["statement"], rng) != item["statement"] for item in items)
    named = sum(name_swap(item["statement"], rng) != item["statement"] for item in items)
    assert gendered >= 80 and named >= 100


def test_the_set_is_built_lazily_not_when_the_plugin_is_imported():
    code = "import sys, dynaforge_sentiment.plugin; print('dynaforge_sentiment.demo_data' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
