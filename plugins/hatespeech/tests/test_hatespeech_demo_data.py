"""The hate speech task's demo scoring set (:mod:`dynaforge_hatespeech.demo_data`): deterministic, the intended size
and share of hateful statements, valid, without repeats, gold right by construction, built lazily."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections import Counter

import pytest

import dynaforge_hatespeech.plugin as hatespeech
from dynaforge.defaults.perturbations import gender_swap, name_swap
from dynaforge_hatespeech import demo_data

TASK = hatespeech.HateSpeechTask()
GROUP_OF = {group.lower(): target_group for group, target_group in demo_data.GROUPS}
GROUP_RE = "|".join(re.escape(group) for group in GROUP_OF)

#: (kind, label, templates): every statement comes from the templates of its own kind and no other.
KINDS = (
    ("hateful", "hateful", tuple(template for template, _ in demo_data.HATEFUL_TEMPLATES)),
    *((kind, "not_hateful", templates) for kind, templates, _ in demo_data.NOT_HATEFUL_PARTS),
)


@pytest.fixture(scope="module")
def items() -> list[dict]:
    return list(TASK.demo_scoring_set())


def _pattern(template: str) -> re.Pattern[str]:
    """The statements ``template`` makes: its words as written, the group among the groups, other slots any text."""
    parts = re.split(r"\{(\w+)\}", template)
    regex = "".join(
        re.escape(part) if i % 2 == 0 else f"({GROUP_RE})" if part == "G" else "(?:.+)" for i, part in enumerate(parts)
    )
    return re.compile(regex, re.IGNORECASE)


def _kind(statement: str) -> list[tuple[str, str, int, str | None]]:
    """(kind, label, template index, the group it names) of every template that makes ``statement``."""
    found = []
    for kind, label, templates in KINDS:
        for i, template in enumerate(templates):
            match = _pattern(template).fullmatch(statement)
            if match:
                group = next((g.lower() for g in match.groups() if g and g.lower() in GROUP_OF), None)
                found.append((kind, label, i, group))
    return found


def test_the_set_is_deterministic_and_cached(items):
    assert TASK.demo_scoring_set() is TASK.demo_scoring_set()
    assert demo_data.generate() == items == demo_data.generate()
    assert demo_data.generate(seed=1) != items
    # pinned: a change to the templates or the seed changes every demo board, on purpose only
    assert items[:2] == [
        {
            "statement": "Many Ostrelian families work as nurses and teachers in Hollin.",
            "label": "not_hateful",
            "target_group": "other",
            "type": "none",
        },
        {
            "statement": "Chen and his husband are painting the fence this weekend.",
            "label": "not_hateful",
            "type": "none",
        },
    ]
    assert items[-1] == {
        "statement": "Immigrants from Varnholt are vermin, and they should be driven out of Kestley.",
        "label": "hateful",
        "target_group": "immigrants",
        "type": "dehumanisation",
    }


def test_size_share_of_hateful_and_no_repeats(items):
    assert len(items) == demo_data.SIZE == 400
    assert Counter(item["label"] for item in items) == {"hateful": 120, "not_hateful": 280}
    assert 0.25 <= demo_data.HATEFUL_SHARE <= 0.35
    assert len({item["statement"].lower() for item in items}) == len(items)
    assert max(len(item["statement"]) for item in items) <= 140


def test_every_item_validates_as_create_dataset_validates_it(items):
    for item in items:
        assert TASK.validate_example(dict(item), None) == item


def test_gold_and_metadata_are_right_by_construction(items):
    used = set()
    for item in items:
        found = _kind(item["statement"])
        assert found and {label for _, label, _, _ in found} == {item["label"]}, item
        kind, _, index, group = found[0]
        used.add((kind, index))
        if item["label"] == "hateful":
            assert item["type"] == demo_data.HATEFUL_TEMPLATES[index][1] != "none"
        else:
            assert item["type"] == "none"
        if kind in ("hateful", "counter", "mention"):
            assert group is not None and item["target_group"] == GROUP_OF[group], item
        else:
            assert "target_group" not in item and not re.search(GROUP_RE, item["statement"], re.IGNORECASE), item
    assert used == {(kind, i) for kind, _, templates in KINDS for i in range(len(templates))}


def test_specific_items(items):
    by_text = {item["statement"]: item for item in items}
    assert by_text["Calling Kellmark islanders vermin is disgusting, and I will say so every time I hear it."] == {
        "statement": "Calling Kellmark islanders vermin is disgusting, and I will say so every time I hear it.",
        "label": "not_hateful",
        "target_group": "other",
        "type": "none",
    }
    assert by_text["Never trust migrants from Tavrenia; lying is in their blood."]["label"] == "hateful"
    assert by_text["Kellmark islanders are liars and thieves, every last one of them."]["type"] == "derogation"
    assert by_text["My husband forgot my birthday again; what a selfish fool."] == {
        "statement": "My husband forgot my birthday again; what a selfish fool.",
        "label": "not_hateful",
        "type": "none",
    }


def test_the_fairness_perturbations_have_items_to_change(items):
    rng = random.Random(0)
    gendered = sum(gender_swap(item["statement"], rng) != item["statement"] for item in items)
    named = sum(name_swap(item["statement"], rng) != item["statement"] for item in items)
    assert gendered >= 80 and named >= 100
    hateful_named = [
        item for item in items if item["label"] == "hateful" and name_swap(item["statement"], rng) != item["statement"]
    ]
    assert hateful_named  # a name swap reaches hateful statements too


def test_the_set_is_built_lazily_not_when_the_plugin_is_imported():
    code = "import sys, dynaforge_hatespeech.plugin; print('dynaforge_hatespeech.demo_data' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
