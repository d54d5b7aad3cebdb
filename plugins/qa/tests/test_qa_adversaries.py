"""The qa plugin's template adversary (``qa-templates``): each template's questions and the answer span they claim
(valid against the passage), the drafts a template leaves alone, determinism under a seed, registration, and an
attack through a fake oracle.

Every passage and question here is written for these tests; nothing needs ../shared/data.
"""

from __future__ import annotations

import random

import pytest

from dynaforge.adversaries.base import AttackRequest, Oracle
from dynaforge.adversaries.templates import TemplateAdversary
from dynaforge.plugins import Plugins
from dynaforge.tasks.outputs import judge
from dynaforge_qa import adversaries
from dynaforge_qa.plugin import QATask

TASK = QATask()
PASSAGE = (
    "The Orland lighthouse stands on a granite spur at the northern end of Fenwick Bay. The Orland lighthouse was "
    "first lit in 1874. Its first keeper, Jonas Brell, kept the light for twenty-six years. The old cottage was built "
    "in 1851. The museum has 32 rooms. The guide to the bay was written by Ada Brell."
)
CONTEXT = {"passage": PASSAGE}


def span(text: str) -> dict:
    return {"text": text, "start": PASSAGE.index(text)}


YEAR_DRAFT = {"question": "In what year was the Orland lighthouse first lit?", "answer": span("1874")}
WHO_DRAFT = {"question": "Who was the first keeper of the lighthouse?", "answer": span("Jonas Brell")}
WHAT_DRAFT = {"question": "What stands on a granite spur?", "answer": span("The Orland lighthouse")}


def by_name(name: str):
    return next(t for t in adversaries.TEMPLATES if t.name == name)


def apply(name: str, draft: dict | None, context: dict | None = None, seed: int = 0) -> list[dict]:
    """The template's rewrites, each checked valid for the task (the span sits at its offset)."""
    context = CONTEXT if context is None else context
    out = []
    for fields, rationale in by_name(name).apply(dict(context), dict(draft) if draft else None, random.Random(seed)):
        assert TASK.validate_example(fields, context or None) == fields, fields
        assert rationale
        out.append(fields)
    return out


def questions(name: str, draft: dict | None, context: dict | None = None) -> list[str]:
    rewrites = apply(name, draft, context)
    if draft is not None:
        assert all(r["answer"] == draft["answer"] for r in rewrites)  # every question rewrite claims the same span
    return [r["question"] for r in rewrites]


# --------------------------------------------------------------------------------------- question rewrites


def test_according_to_frames_the_same_question():
    assert questions("according_to", YEAR_DRAFT) == [
        "According to the passage, in what year was the Orland lighthouse first lit?",
        "Based on the passage, in what year was the Orland lighthouse first lit?",
    ]
    assert questions("according_to", {**WHO_DRAFT, "question": "Jonas Brell kept the light for how long?"}) == []
    assert questions("according_to", {**WHO_DRAFT, "question": "According to the passage, who kept it?"}) == []


def test_wh_synonym_asks_the_same_with_another_wh_phrase():
    assert questions("wh_synonym", YEAR_DRAFT) == ["In which year was the Orland lighthouse first lit?"]
    assert questions("wh_synonym", WHO_DRAFT) == ["Which person was the first keeper of the lighthouse?"]
    when = {"question": "When was the old cottage built?", "answer": span("1851")}
    assert questions("wh_synonym", when) == ["In what year was the old cottage built?"]
    which = {"question": "Which keeper was the first one?", "answer": span("Jonas Brell")}
    assert questions("wh_synonym", which) == ["What keeper was the first one?"]
    assert questions("wh_synonym", WHAT_DRAFT) == []  # "What stands": no noun after the wh-word
    assert questions("wh_synonym", {**when, "answer": span("The old cottage")}) == []  # not a year


def test_wh_fronting_makes_an_echo_question():
    assert questions("wh_fronting", WHO_DRAFT) == ["The first keeper of the lighthouse was who?"]
    assert questions("wh_fronting", YEAR_DRAFT) == []
    assert questions("wh_fronting", {**WHO_DRAFT, "question": "Who was the keeper who came first?"}) == []


def test_distractor_clause_names_another_entity_of_the_answer_kind():
    assert questions("distractor_clause", YEAR_DRAFT) == [
        "Although the passage also mentions 1851, in what year was the Orland lighthouse first lit?"
    ]
    names = questions("distractor_clause", WHO_DRAFT)
    assert len(names) == 2
    assert names[0].startswith("Although the passage also mentions ")
    assert names[1].startswith("The passage mentions ") and names[1].endswith(
        ", but who was the first keeper of the lighthouse?"
    )
    for q in names:
        assert "Jonas Brell" not in q
    assert questions("distractor_clause", {"question": "What did the keeper keep?", "answer": span("the light")}) == []


def test_question_rewrites_need_a_draft_with_an_answer():
    for name in ("according_to", "wh_synonym", "wh_fronting", "distractor_clause", "distractor_sentence"):
        assert apply(name, None) == []
        assert apply(name, {"question": "Who kept the light?"}) == []


# ------------------------------------------------------------------------------------- distractor sentence


def test_distractor_sentence_follows_a_passage_the_draft_carries():
    draft = {"passage": PASSAGE, **YEAR_DRAFT}
    rewrites = apply("distractor_sentence", draft, {})
    assert len(rewrites) == 1
    fields = rewrites[0]
    assert fields["answer"] == YEAR_DRAFT["answer"] and fields["question"] == YEAR_DRAFT["question"]
    assert fields["passage"].startswith(PASSAGE + " ")
    added = fields["passage"][len(PASSAGE) + 1 :]
    assert added.startswith("The ") and added.endswith(" lighthouse was first lit in " + added[-5:-1] + ".")
    renamed, year = added.split()[1], int(added[-5:-1])
    assert renamed in adversaries.INVENTED_WORDS and year != 1874 and str(year) not in PASSAGE


def test_distractor_sentence_needs_a_carried_passage_and_an_entity_the_question_names():
    assert apply("distractor_sentence", YEAR_DRAFT) == []  # the passage is the stored context: it cannot grow
    assert apply("distractor_sentence", {"passage": PASSAGE, **WHO_DRAFT}, {}) == []  # no anchor to rename
    lowercase = {"passage": PASSAGE, "question": "What did the keeper keep?", "answer": span("the light")}
    assert apply("distractor_sentence", lowercase, {}) == []  # no invented stand-in for "the light"


# ------------------------------------------------------------------------------------------ from the passage


def test_passage_questions_find_their_answer_exactly():
    assert apply("passage_questions", None) == [
        {"question": "In what year was the old cottage built?", "answer": span("1851")},
        {"question": "How many rooms does the museum have?", "answer": span("32")},
        {"question": "Who wrote the guide to the bay?", "answer": span("Ada Brell")},
    ]
    assert apply("passage_questions", YEAR_DRAFT) == []
    for context in TASK.demo_contexts:
        for fields in apply("passage_questions", None, context):
            answer = fields["answer"]
            assert context["passage"][answer["start"] : answer["start"] + len(answer["text"])] == answer["text"]


# --------------------------------------------------------------------------------- adversary: seed, registry


def request(draft: dict | None, context: dict | None = None, seed: int = 0) -> AttackRequest:
    return AttackRequest(
        task=TASK, context=dict(CONTEXT if context is None else context), draft=draft, rng=random.Random(seed)
    )


def test_same_seed_same_rewrites_and_all_valid():
    adversary = adversaries.adversary()
    cases = [
        (None, CONTEXT),
        (YEAR_DRAFT, CONTEXT),
        (WHO_DRAFT, CONTEXT),
        ({"passage": PASSAGE, **YEAR_DRAFT}, {}),
        *((None, c) for c in TASK.demo_contexts[:3]),
        *((TASK.split_fields(e)[1], TASK.split_fields(e)[0]) for e in TASK.sample_examples),
    ]
    for draft, context in cases:
        first = adversary.rewrites(request(draft, context, seed=5))
        again = adversary.rewrites(request(draft, context, seed=5))
        assert [c.fields for c in first] == [c.fields for c in again]
        for c in first:
            assert TASK.validate_example(c.fields, context or None) == c.fields


def test_the_plugin_registers_the_adversary():
    plugins = Plugins(allowlist={"qa"})
    adversary = plugins.registry.adversaries["qa-templates"]
    assert isinstance(adversary, TemplateAdversary)
    assert plugins.registry.owners[("adversaries", "qa-templates")] == "qa"
    assert adversary.task_codes == ("qa",) and adversary.unsuitable(plugins.task("qa")) is None


# -------------------------------------------------------------------------------------------- attack, oracle


async def test_attack_asks_a_fake_oracle_about_every_rewrite():
    asked: list[dict] = []
    guess = span("1851")  # the fake model always answers the cottage's year

    async def predict(inputs):
        asked.extend(inputs)
        output = {"answer": guess, "confidence": 0.9}
        return [[{"model": "fake", "prediction": TASK.read_model_output(output), "latency_ms": 0.0}] for _ in inputs]

    def judge_(members, example, context):
        return judge(TASK, "majority", members, example, context)

    oracle = Oracle(TASK, CONTEXT, predict, judge_, max_queries=10, time_limit_s=30.0)
    candidates = await adversaries.adversary().attack(request(YEAR_DRAFT), oracle)
    assert [c.fields["question"] for c in candidates] == [
        "According to the passage, in what year was the Orland lighthouse first lit?",
        "Based on the passage, in what year was the Orland lighthouse first lit?",
        "In which year was the Orland lighthouse first lit?",
        "Although the passage also mentions 1851, in what year was the Orland lighthouse first lit?",
    ]
    assert all(a["passage"] == PASSAGE for a in asked) and oracle.queries == 4
    for c in candidates:
        assert c.fields["answer"] == YEAR_DRAFT["answer"] and c.fooled
        assert c.verdict.gold_probability == pytest.approx(0.1)  # confidence 0.9 in a wrong answer

    right = Oracle(TASK, CONTEXT, predict, judge_, max_queries=10, time_limit_s=30.0)
    guess = span("1874")
    candidates = await adversaries.adversary().attack(request(YEAR_DRAFT), right)
    assert candidates and not any(c.fooled for c in candidates)
