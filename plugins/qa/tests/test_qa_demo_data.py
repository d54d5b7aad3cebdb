"""The QA task's demo scoring set (:mod:`dynaforge_qa.demo_data`): deterministic, the intended size, valid, without
repeats, every answer the one span of its passage that answers the question, built lazily."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections import Counter

import pytest

import dynaforge_qa.plugin as qa
from dynaforge.defaults.perturbations import gender_swap, name_swap_example
from dynaforge_qa import demo_data

TASK = qa.QATask()


@pytest.fixture(scope="module")
def items() -> list[dict]:
    return list(TASK.demo_scoring_set())


def test_the_set_is_deterministic_and_cached(items):
    assert TASK.demo_scoring_set() is TASK.demo_scoring_set()
    assert demo_data.generate() == items == demo_data.generate()
    assert demo_data.generate(seed=1) != items
    # pinned: a change to the frames or the seed changes every demo board, on purpose only
    passage = (
        "Akiko Brandt was born in Dunmere in 1874. She trained as a watchmaker and opened a clock shop on Quay Street "
        "in 1911. After six years she sold it to her nephew Aditya, who kept its name."
    )
    assert items[0] == {
        "passage": passage,
        "question": "Where was Akiko Brandt born?",
        "answer": {"text": "Dunmere", "start": 25},
    }
    assert items[6] == {
        "passage": passage,
        "question": "How many years did Akiko keep the clock shop?",
        "answer": {"text": "six years", "start": 124},
    }


def test_size_and_no_repeats(items):
    passages = Counter(item["passage"] for item in items)
    assert len(passages) == demo_data.PASSAGES == 56
    assert len(items) == 382 and set(passages.values()) <= {6, 7}
    assert len({(item["passage"], item["question"]) for item in items}) == len(items)
    assert max(map(len, passages)) <= 300  # short passages: QA is the demo's slowest model per item


def test_every_item_validates_as_create_dataset_validates_it(items):
    for item in items:
        assert TASK.validate_example(dict(item), None) == item


def test_every_answer_is_the_only_place_it_sits_in_its_passage(items):
    for item in items:
        passage, answer = item["passage"], item["answer"]
        assert passage.count(answer["text"]) == 1
        assert passage.index(answer["text"]) == answer["start"]
        assert answer["text"] == answer["text"].strip() and not answer["text"].endswith((".", ","))


def test_every_frame_is_used_and_the_task_has_no_unanswerable_questions(items):
    openings = ("was born in", "Bridge over the", "the village of", "lives only on the island", "The cargo ship",
                "was founded in")  # fmt: skip
    for opening in openings:
        assert any(opening in item["passage"] for item in items), opening
    assert all(item["answer"]["text"] for item in items)


#: (what the passage says, with the answer as its last group; how the questions that it answers begin)
STATED = {
    "engineer": (r"the engineer (\w+ \w+), also planned", ("Who designed", "Which engineer")),
    "length": (r"It is (\d+ metres) long", ("How long is", "What is the length")),
    "captain": (r"Captain (\w+ \w+) steered", ("Who was the captain", "Who steered")),
    "days": (r"reached [\w ]+? (\w+ days) later", ("How long did", "How many days")),
    "president": (r"Its president, (\w+ \w+), has won", ("Who is the president", "Who leads")),
    "food": (r"feed mainly on ([\w ]+)\.", ("What does the", "What is the main food")),
}


def test_gold_is_right_by_construction(items):
    checked = Counter()
    for item in items:
        p, q, a = item["passage"], item["question"], item["answer"]["text"]
        if m := re.match(r"(\w+ \w+) was born in (\w+) in (\d{4})\.", p):
            if q in (f"Where was {m[1]} born?", f"In which town was {m[1]} born?"):
                assert a == m[2]
                checked["born"] += 1
            if q in (f"In what year was {m[1]} born?", f"When was {m[1]} born?"):
                assert a == m[3]
                checked["born"] += 1
        for name, (stated, asked) in STATED.items():
            if (m := re.search(stated, p)) and q.startswith(asked):
                assert a == m[1], item
                checked[name] += 1
    assert len(checked) == 7 and sum(checked.values()) >= 40


def test_the_fairness_perturbations_have_items_to_change(items):
    rng = random.Random(0)
    passages = {item["passage"] for item in items}
    gendered = sum(gender_swap(p, rng) != p for p in passages)
    named = sum(name_swap_example({"passage": p}, rng)["passage"] != p for p in passages)
    assert gendered >= 5 and named == len(passages)  # every passage names a person


def test_the_set_is_built_lazily_not_when_the_plugin_is_imported():
    code = "import sys, dynaforge_qa.plugin; print('dynaforge_qa.demo_data' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
