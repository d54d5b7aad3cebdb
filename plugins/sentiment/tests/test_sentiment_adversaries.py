"""The sentiment plugin's template adversary (``sentiment-templates``): each template's rewrites and the gold they
claim, the drafts a template leaves alone, determinism under a seed, registration, and an attack through a fake
oracle.

Every statement here is written for these tests; nothing needs ../shared/data.
"""

from __future__ import annotations

import random

import pytest

from dynaforge.adversaries.base import AttackRequest, Candidate, Oracle
from dynaforge.adversaries.templates import TemplateAdversary
from dynaforge.plugins import Plugins
from dynaforge.tasks.outputs import judge
from dynaforge_sentiment import adversaries
from dynaforge_sentiment.plugin import SentimentTask

TASK = SentimentTask()
PROMPT = {"prompt": "Review a gadget you bought last year."}


def by_name(name: str):
    return next(t for t in adversaries.TEMPLATES if t.name == name)


def apply(name: str, draft: dict | None, context: dict | None = None, seed: int = 0) -> list[tuple[str, str]]:
    """The template's (statement, label) pairs, each checked valid for the task."""
    context = context or {}
    out = []
    for fields, rationale in by_name(name).apply(dict(context), dict(draft) if draft else None, random.Random(seed)):
        assert TASK.validate_example(fields, context or None) == fields, fields
        assert rationale
        out.append((fields["statement"], fields["label"]))
    return out


# ------------------------------------------------------------------------------------------------ negation


def test_negation_flips_a_positive_predicate_to_negative():
    draft = {"statement": "The waiter was friendly.", "label": "positive", "explanation": "plain praise"}
    assert apply("negation", draft) == [("The waiter was not friendly.", "negative")]
    assert apply("negation", {"statement": "It's really good.", "label": "positive"}) == [
        ("It's not really good.", "negative")
    ]


def test_negation_flips_a_negative_predicate_to_positive_with_at_all():
    assert apply("negation", {"statement": "The soup was bad.", "label": "negative"}) == [
        ("The soup was not bad at all.", "positive")
    ]


@pytest.mark.parametrize(
    "draft",
    [
        {"statement": "The concert was not good.", "label": "negative"},  # already negated
        {"statement": "The room wasn't clean.", "label": "negative"},  # already negated (contraction)
        {"statement": "The film was perfect.", "label": "positive"},  # "not perfect" is not negative
        {"statement": "The food was awful.", "label": "negative"},  # "not awful" is not positive
        {"statement": "The staff were friendly but the room was tiny.", "label": "positive"},  # two clauses
        {"statement": "The staff were friendly and I loved the view.", "label": "positive"},  # another sentiment word
        {"statement": "The staff were friendly.", "label": "negative"},  # the label does not match the predicate
        {"statement": "The staff were friendly.", "label": "neutral"},
        {"statement": "Was the staff friendly?", "label": "positive"},
        {"statement": "If the bed was comfortable I would stay.", "label": "positive"},
    ],
)
def test_negation_leaves_drafts_it_cannot_negate_unambiguously(draft):
    assert apply("negation", draft) == []


# ------------------------------------------------------------------------------------------------- sarcasm


def test_sarcasm_keeps_a_complaint_negative():
    draft = {"statement": "The battery died after an hour.", "label": "negative"}
    assert apply("sarcasm", draft) == [
        ("Oh great, the battery died after an hour.", "negative"),
        ("Just what I needed: the battery died after an hour.", "negative"),
        ("Wonderful. The battery died after an hour.", "negative"),
    ]


def test_sarcasm_without_a_lowercase_opening_starts_a_new_sentence():
    # "Battery" could be a name: it is not lowercased after a comma, so only the new-sentence opener is offered.
    draft = {"statement": "Battery life is a joke.", "label": "negative"}
    assert apply("sarcasm", draft) == [("Wonderful. Battery life is a joke.", "negative")]


@pytest.mark.parametrize(
    "draft",
    [
        {"statement": "The battery lasts all week.", "label": "positive"},
        {"statement": "The battery lasts all week.", "label": "neutral"},
        {"statement": "Oh great, the battery died again.", "label": "negative"},  # already sarcastic
        None,
    ],
)
def test_sarcasm_needs_a_negative_draft_that_is_not_sarcastic_yet(draft):
    assert apply("sarcasm", draft) == []


# --------------------------------------------------------------------------------------------- entity swap


def test_entity_swap_keeps_the_gold_and_the_kind_of_name():
    draft = {"statement": "Grace said the hotel in Lisbon was fine.", "label": "neutral"}
    rewrites = apply("entity_swap", draft)
    assert len(rewrites) == 4 and all(label == "neutral" for _, label in rewrites)
    women = dict(adversaries.ENTITIES)["woman's name"]
    places = dict(adversaries.ENTITIES)["place"]
    for statement, _ in rewrites[:2]:
        name = statement.split()[0]
        assert name in women and name != "Grace" and statement.endswith("said the hotel in Lisbon was fine.")
    for statement, _ in rewrites[2:]:
        place = statement.split()[-3]
        assert place in places and place != "Lisbon" and statement.startswith("Grace said the hotel in ")


def test_entity_swap_replaces_every_mention_and_needs_a_known_name():
    draft = {"statement": "Omar loved the Kavo, and Omar says so often.", "label": "positive"}
    for statement, label in apply("entity_swap", draft):
        assert label == "positive"
        assert "Omar" not in statement or "Kavo" not in statement
        assert statement.count("Omar") in (0, 2)
    assert apply("entity_swap", {"statement": "The train was late.", "label": "negative"}) == []


# ------------------------------------------------------------------------------------------------ contrast


def test_contrast_lets_the_final_clause_decide():
    assert apply("contrast", {"statement": "The waiter was friendly.", "label": "positive"}) == [
        ("The waiter was friendly, but overall I would not recommend it.", "negative"),
        ("The waiter was friendly, but on the whole I regret it.", "negative"),
        ("It got off to a rough start, but the waiter was friendly.", "positive"),
        ("I had my doubts at first, but the waiter was friendly.", "positive"),
    ]
    negative = apply("contrast", {"statement": "The soup arrived cold!", "label": "negative"})
    assert negative[0] == ("The soup arrived cold, but overall I would still recommend it.", "positive")
    assert negative[-1] == ("I really wanted to like it, but the soup arrived cold!", "negative")


@pytest.mark.parametrize(
    "draft",
    [
        {"statement": "The soup was cold, but the bread was warm.", "label": "positive"},  # a contrast already
        {"statement": "The train left at nine.", "label": "neutral"},
        {"statement": "Is the soup cold?", "label": "negative"},
        {"statement": "The soup was cold. The bread was stale.", "label": "negative"},  # two sentences
    ],
)
def test_contrast_leaves_drafts_it_cannot_extend(draft):
    assert apply("contrast", draft) == []


# -------------------------------------------------------------------------------------------------- frames


def test_frames_write_from_the_prompt_with_known_gold():
    rewrites = apply("frames", None, PROMPT)
    assert len(rewrites) == len(adversaries.FRAMES)
    assert [label for _, label in rewrites] == [gold for _, gold in adversaries.FRAMES]
    assert all("gadget" in statement for statement, _ in rewrites)  # the thing the prompt names
    assert rewrites[4] == ("I would not call the gadget good by any stretch.", "negative")
    assert rewrites[5] == ("Not one thing about the gadget was disappointing.", "positive")
    first = rewrites[0][0]
    assert first.startswith("I expected to hate the gadget, but it was ")
    assert first.removesuffix(".").rsplit(" ", 1)[1] in adversaries.POSITIVE_ADJECTIVES


def test_frames_work_without_a_prompt_and_not_on_a_draft():
    assert len(apply("frames", None, {})) == len(adversaries.FRAMES)
    assert apply("frames", {"statement": "The soup was bad.", "label": "negative"}) == []


# --------------------------------------------------------------------------------- adversary: seed, registry


def request(draft: dict | None, context: dict | None = None, seed: int = 0) -> AttackRequest:
    return AttackRequest(task=TASK, context=dict(context or {}), draft=draft, rng=random.Random(seed))


DRAFTS = (
    {"statement": "The waiter was friendly.", "label": "positive"},
    {"statement": "Grace's new Zentro phone was reliable.", "label": "positive"},
    {"statement": "The battery died after an hour.", "label": "negative"},
    {"statement": "The train left Oslo at nine.", "label": "neutral"},
)


def test_same_seed_same_rewrites_and_all_valid():
    adversary = adversaries.adversary()
    for draft in (*DRAFTS, None):
        for context in ({}, PROMPT):
            first = adversary.rewrites(request(draft, context, seed=7))
            again = adversary.rewrites(request(draft, context, seed=7))
            assert first and [c.fields for c in first] == [c.fields for c in again]
            assert [c.rationale for c in first] == [c.rationale for c in again]
            for c in first:
                assert TASK.validate_example(c.fields, context or None) == c.fields
                assert c.fields != draft


def test_the_plugin_registers_the_adversary():
    plugins = Plugins(allowlist={"sentiment"})
    adversary = plugins.registry.adversaries["sentiment-templates"]
    assert isinstance(adversary, TemplateAdversary)
    assert plugins.registry.owners[("adversaries", "sentiment-templates")] == "sentiment"
    assert adversary.task_codes == ("sentiment",) and not adversary.needs_draft
    assert adversary.unsuitable(plugins.task("sentiment")) is None
    assert [t.name for t in adversary.templates] == ["negation", "sarcasm", "entity_swap", "contrast", "frames"]


# -------------------------------------------------------------------------------------------- attack, oracle


async def test_attack_asks_a_fake_oracle_about_every_rewrite():
    asked: list[dict] = []

    async def predict(inputs):
        asked.extend(inputs)
        output = {"label": "positive", "probabilities": {"positive": 0.8, "negative": 0.1, "neutral": 0.1}}
        return [[{"model": "fake", "prediction": TASK.read_model_output(output), "latency_ms": 0.0}] for _ in inputs]

    def judge_(members, example, context):
        return judge(TASK, "majority", members, example, context)

    draft = {"statement": "The waiter was friendly.", "label": "positive"}
    oracle = Oracle(TASK, {}, predict, judge_, max_queries=50, time_limit_s=30.0)
    candidates = await adversaries.adversary().attack(request(draft), oracle)
    assert candidates and all(isinstance(c, Candidate) and c.verdict is not None for c in candidates)
    assert oracle.queries == len(candidates) == len(asked) and oracle.calls == 1
    assert asked[0] == {"statement": "The waiter was not friendly."}  # the prompt never reaches the model
    for c in candidates:
        assert c.fooled == (c.fields["label"] != "positive")
        assert c.verdict.gold_probability == pytest.approx(0.8 if c.fields["label"] == "positive" else 0.1)
        assert c.edits and c.rationale.split(":")[0] in {t.name for t in adversaries.TEMPLATES}
    assert {c.fields["statement"] for c in candidates if c.fooled} >= {"The waiter was not friendly."}


async def test_attack_stops_at_the_budget():
    async def predict(inputs):
        output = {"label": "negative"}
        return [[{"model": "fake", "prediction": TASK.read_model_output(output), "latency_ms": 0.0}] for _ in inputs]

    oracle = Oracle(
        TASK, PROMPT, predict, lambda m, e, c: judge(TASK, "majority", m, e, c), max_queries=2, time_limit_s=30.0
    )
    candidates = await adversaries.adversary().attack(request(None, PROMPT), oracle)
    assert len(candidates) == 2 and oracle.remaining == 0
