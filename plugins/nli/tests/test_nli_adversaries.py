"""The NLI plugin's template adversary (``nli-templates``): each template's hypotheses and the labels they claim,
the premises and drafts a template leaves alone, determinism under a seed, registration, and an attack through a
fake oracle.

Every premise and hypothesis here is written for these tests; nothing needs ../shared/data.
"""

from __future__ import annotations

import random

import pytest

from dynaforge.adversaries.base import AttackRequest, Oracle
from dynaforge.adversaries.templates import TemplateAdversary
from dynaforge.plugins import Plugins
from dynaforge.tasks.outputs import judge
from dynaforge_nli import adversaries
from dynaforge_nli.adversaries import negate, sentences
from dynaforge_nli.plugin import NLITask

TASK = NLITask()
GARDEN = (
    "Marta planted twelve tomato seedlings in April. The garden shed was painted green. "
    "Dr. Lindqvist visited the small museum on Friday. Its roof leaks when it rains."
)
HALL = "The town hall was built in 1735. The novel was written by Ada Brell. The ferry leaves at 11 p.m. every night."
CONTEXT = {"premise": GARDEN}


def by_name(name: str):
    return next(t for t in adversaries.TEMPLATES if t.name == name)


def apply(name: str, draft: dict | None, context: dict | None = None, seed: int = 0) -> list[tuple[str, str]]:
    """The template's (hypothesis, label) pairs, each checked valid for the task."""
    context = CONTEXT if context is None else context
    out = []
    for fields, rationale in by_name(name).apply(dict(context), dict(draft) if draft else None, random.Random(seed)):
        assert TASK.validate_example(fields, context or None) == fields, fields
        assert rationale
        out.append((fields["hypothesis"], fields["label"]))
    return out


def test_sentences_do_not_split_after_abbreviations():
    assert sentences(GARDEN) == [
        "Marta planted twelve tomato seedlings in April.",
        "The garden shed was painted green.",
        "Dr. Lindqvist visited the small museum on Friday.",
        "Its roof leaks when it rains.",
    ]
    assert len(sentences(HALL)) == 3


# ---------------------------------------------------------------------------------------- from the premise


def test_premise_sentence_copies_or_trims_self_contained_sentences():
    assert apply("premise_sentence", None) == [
        ("Marta planted twelve tomato seedlings in April.", "entailment"),
        ("The garden shed was painted green.", "entailment"),
        ("Dr. Lindqvist visited the small museum on Friday.", "entailment"),
        ("Dr. Lindqvist visited the museum on Friday.", "entailment"),  # "small" dropped
    ]  # "Its roof leaks ..." points at another sentence: not copied


def test_premise_sentence_keeps_modifiers_under_negation_or_before_a_repeated_noun():
    premise = {
        "premise": "Nobody visited the small museum in May. The new bridge is closed and the old bridge is open."
    }
    assert apply("premise_sentence", None, premise) == [
        ("Nobody visited the small museum in May.", "entailment"),
        ("The new bridge is closed and the old bridge is open.", "entailment"),
    ]


def test_premise_negation_negates_only_simple_sentences():
    assert apply("premise_negation", None) == [("The garden shed was not painted green.", "contradiction")]
    assert apply("premise_negation", None, {"premise": HALL}) == [
        ("The novel was not written by Ada Brell.", "contradiction")
    ]  # the sentences with numbers are left alone


def test_premise_detail_extends_simple_past_events_with_what_the_premise_does_not_say():
    assert apply("premise_detail", None) == [
        ("Marta planted twelve tomato seedlings in April after a long discussion.", "neutral"),
        ("Marta planted twelve tomato seedlings in April, to the surprise of many.", "neutral"),
        ("Dr. Lindqvist visited the small museum on Friday after a long discussion.", "neutral"),
        ("Dr. Lindqvist visited the small museum on Friday, to the surprise of many.", "neutral"),
    ]
    settled = {"premise": "After a heated debate, Marta planted twelve tomato seedlings in April."}
    assert apply("premise_detail", None, settled) == []  # "after" makes it not simple
    mentioned = {"premise": "Marta planted twelve seedlings in April. The debate was long."}
    assert apply("premise_detail", None, mentioned) == [
        ("Marta planted twelve seedlings in April, to the surprise of many.", "neutral")
    ]


def test_premise_templates_need_a_premise_and_no_draft():
    draft = {"hypothesis": "The garden shed was painted green.", "label": "entailment"}
    for name in ("premise_sentence", "premise_negation", "premise_detail"):
        assert apply(name, draft) == []
        assert apply(name, None, {}) == []


# ------------------------------------------------------------------------------------------- from a draft


@pytest.mark.parametrize(
    ("hypothesis", "label", "expected"),
    [
        (
            "The garden shed was painted green.",
            "entailment",
            ("The garden shed was not painted green.", "contradiction"),
        ),
        (
            "The garden shed was not painted green.",
            "contradiction",
            ("The garden shed was painted green.", "entailment"),
        ),
        ("The shed isn't green.", "contradiction", ("The shed is green.", "entailment")),
        ("Marta can grow tomatoes.", "neutral", ("Marta cannot grow tomatoes.", "neutral")),
        ("Marta has planted tomatoes.", "entailment", ("Marta has not planted tomatoes.", "contradiction")),
    ],
)
def test_negate_hypothesis_swaps_entailment_and_contradiction(hypothesis, label, expected):
    draft = {"hypothesis": hypothesis, "label": label, "reason": "written for the test"}
    assert apply("negate_hypothesis", draft) == [expected]


@pytest.mark.parametrize(
    "hypothesis",
    [
        "A man was painting the shed.",  # indefinite subject: "A man was not ..." does not deny it
        "Marta planted twelve seedlings.",  # a number: "twelve ... not" is not the denial
        "Every seedling was planted in April.",  # a quantifier
        "Marta was happy and the shed was green.",  # two clauses
        "Marta planted tomatoes.",  # no auxiliary to negate without morphology
        "Marta said the shed was green.",  # reported speech
        "Was the shed painted?",
        "The shed was never painted.",  # a negation other than "not"
        "Marta had chicken for lunch.",  # "had" as the main verb would need "did not have"
    ],
)
def test_negate_hypothesis_leaves_what_it_cannot_negate_exactly(hypothesis):
    assert negate(hypothesis) is None
    assert apply("negate_hypothesis", {"hypothesis": hypothesis, "label": "entailment"}) == []


def test_unsupported_detail_turns_an_entailed_event_neutral():
    draft = {"hypothesis": "Marta planted tomatoes in April.", "label": "entailment"}
    assert apply("unsupported_detail", draft) == [
        ("Marta planted tomatoes in April after a long discussion.", "neutral"),
        ("Marta planted tomatoes in April, to the surprise of many.", "neutral"),
    ]
    assert apply("unsupported_detail", {**draft, "label": "contradiction"}) == []  # "false because" stays false
    assert apply("unsupported_detail", {"hypothesis": "The shed is green.", "label": "entailment"}) == []


def test_swap_number_contradicts_a_number_or_agent_the_premise_states():
    hall = {"premise": HALL}
    assert apply("swap_number", {"hypothesis": "The town hall was built in 1735.", "label": "entailment"}, hall) == [
        ("The town hall was built in 1740.", "contradiction")
    ]
    ferry = apply("swap_number", {"hypothesis": "The ferry leaves at 11 p.m.", "label": "entailment"}, hall)
    assert len(ferry) == 1 and ferry[0][1] == "contradiction" and "11" not in ferry[0][0]
    novel = apply("swap_number", {"hypothesis": "The novel was written by Ada Brell.", "label": "entailment"}, hall)
    assert len(novel) == 1 and novel[0][1] == "contradiction"
    name = novel[0][0].removeprefix("The novel was written by ").removesuffix(".")
    first, last = name.split()
    assert first in adversaries.FIRST_NAMES and last in adversaries.SURNAMES
    twelve = apply("swap_number", {"hypothesis": "Marta planted twelve seedlings.", "label": "entailment"})
    assert len(twelve) == 1 and twelve[0][0].split()[2] in adversaries.NUMBER_WORDS and "twelve" not in twelve[0][0]


@pytest.mark.parametrize(
    ("hypothesis", "label"),
    [
        ("Marta planted twelve seedlings.", "contradiction"),  # only entailed hypotheses
        ("Marta planted about twelve seedlings.", "entailment"),  # an estimate
        ("Marta did not plant thirteen seedlings.", "entailment"),  # under negation a swap may stay true
        ("Marta planted eight seedlings in 2020.", "entailment"),  # numbers the premise does not state
        (
            "The shed was painted by Marta.",
            "entailment",
        ),  # a shed may have many painters: "painted by" is not in the list
    ],
)
def test_swap_number_leaves_hypotheses_it_cannot_falsify(hypothesis, label):
    assert apply("swap_number", {"hypothesis": hypothesis, "label": label}) == []


def test_a_draft_that_carries_its_premise_keeps_it():
    draft = {"premise": GARDEN, "hypothesis": "The garden shed was painted green.", "label": "entailment"}
    rewrites = by_name("negate_hypothesis").apply({}, draft, random.Random(0))
    assert [fields for fields, _ in rewrites] == [
        {"premise": GARDEN, "hypothesis": "The garden shed was not painted green.", "label": "contradiction"}
    ]
    assert TASK.validate_example(rewrites[0][0], None) == rewrites[0][0]


# --------------------------------------------------------------------------------- adversary: seed, registry


def request(draft: dict | None, context: dict | None = None, seed: int = 0) -> AttackRequest:
    return AttackRequest(
        task=TASK, context=dict(CONTEXT if context is None else context), draft=draft, rng=random.Random(seed)
    )


def test_same_seed_same_rewrites_and_all_valid():
    adversary = adversaries.adversary()
    cases = [
        (None, CONTEXT),
        (None, {"premise": HALL}),
        ({"hypothesis": "Marta planted twelve tomato seedlings in April.", "label": "entailment"}, CONTEXT),
        ({"hypothesis": "The town hall was built in 1735.", "label": "entailment"}, {"premise": HALL}),
        ({"hypothesis": "The shed was not painted green.", "label": "contradiction"}, CONTEXT),
    ]
    for draft, context in cases:
        first = adversary.rewrites(request(draft, context, seed=3))
        again = adversary.rewrites(request(draft, context, seed=3))
        assert first and [c.fields for c in first] == [c.fields for c in again]
        for c in first:
            assert TASK.validate_example(c.fields, context) == c.fields and set(c.fields) == {"hypothesis", "label"}


def test_the_plugin_registers_the_adversary():
    plugins = Plugins(allowlist={"nli"})
    adversary = plugins.registry.adversaries["nli-templates"]
    assert isinstance(adversary, TemplateAdversary)
    assert plugins.registry.owners[("adversaries", "nli-templates")] == "nli"
    assert adversary.task_codes == ("nli",) and adversary.unsuitable(plugins.task("nli")) is None
    assert [t.name for t in adversary.templates] == [
        "premise_sentence",
        "premise_negation",
        "premise_detail",
        "negate_hypothesis",
        "unsupported_detail",
        "swap_number",
    ]


# -------------------------------------------------------------------------------------------- attack, oracle


async def test_attack_asks_a_fake_oracle_about_every_rewrite():
    asked: list[dict] = []

    async def predict(inputs):
        asked.extend(inputs)
        output = {"label": "entailment", "probabilities": {"entailment": 0.7, "neutral": 0.2, "contradiction": 0.1}}
        return [[{"model": "fake", "prediction": TASK.read_model_output(output), "latency_ms": 0.0}] for _ in inputs]

    def judge_(members, example, context):
        return judge(TASK, "majority", members, example, context)

    draft = {"hypothesis": "Marta planted twelve tomato seedlings in April.", "label": "entailment"}
    oracle = Oracle(TASK, CONTEXT, predict, judge_, max_queries=20, time_limit_s=30.0)
    candidates = await adversaries.adversary().attack(request(draft), oracle)
    assert [(c.fields["hypothesis"], c.fields["label"]) for c in candidates] == [
        ("Marta planted twelve tomato seedlings in April after a long discussion.", "neutral"),
        ("Marta planted twelve tomato seedlings in April, to the surprise of many.", "neutral"),
        (candidates[2].fields["hypothesis"], "contradiction"),
    ]
    assert "twelve" not in candidates[2].fields["hypothesis"]
    assert all(a["premise"] == GARDEN for a in asked) and oracle.queries == 3
    for c in candidates:
        assert c.fooled and c.verdict.prediction["label"] == "entailment"
        assert c.verdict.gold_probability == pytest.approx(0.2 if c.fields["label"] == "neutral" else 0.1)
