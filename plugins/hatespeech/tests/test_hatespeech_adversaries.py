"""The hate speech plugin's template adversary (``hatespeech-templates``): each template's rewrites and the gold
they claim, the drafts a template leaves alone, determinism under a seed, registration, and an attack through a
fake oracle.

Hateful drafts here are the plugin's own sample examples or bracketed placeholders ("[an insult]"): the tests write
no hate of their own.
"""

from __future__ import annotations

import random

import pytest

import dynaforge_hatespeech.plugin as hatespeech
from dynaforge.adversaries.base import AttackRequest, Oracle
from dynaforge.adversaries.templates import TemplateAdversary
from dynaforge.plugins import Plugins
from dynaforge.tasks.outputs import judge
from dynaforge_hatespeech import adversaries

TASK = hatespeech.HateSpeechTask()
WOMEN = dict(TASK.sample_examples[0])  # hateful, target women, type derogation, "Women like her ..."
PLACEHOLDER = {"statement": "Muslims are [an insult goes here].", "label": "hateful", "type": "derogation"}
COUNTER = dict(TASK.sample_examples[2])  # not hateful, about immigrants
INSULT = dict(TASK.sample_examples[3])  # not hateful, an insult without a protected target


def by_name(name: str):
    return next(t for t in adversaries.TEMPLATES if t.name == name)


def apply(name: str, draft: dict | None, seed: int = 0) -> list[dict]:
    """The template's rewrites, each checked valid for the task (no context)."""
    out = []
    for fields, rationale in by_name(name).apply({}, dict(draft) if draft else None, random.Random(seed)):
        assert TASK.validate_example(fields, None) == fields, fields
        assert rationale
        out.append(fields)
    return out


def test_group_terms_name_the_task_target_groups():
    assert {group for _, group, _ in adversaries.GROUP_TERMS} <= set(hatespeech.TARGET_GROUPS)


# ------------------------------------------------------------------------------------------ counter speech


def test_counter_speech_quotes_a_hateful_draft_to_condemn_it():
    rewrites = apply("counter_speech", PLACEHOLDER)
    assert rewrites[0] == {
        "statement": 'Someone posted "Muslims are [an insult goes here]." in our group chat, and I called it out: '
        "that is hatred, not an opinion.",
        "label": "not_hateful",
        "type": "none",
    }
    assert len(rewrites) == len(adversaries.COUNTER_FRAMES)
    for fields in apply("counter_speech", WOMEN):
        assert fields["label"] == "not_hateful" and fields["type"] == "none" and fields["target_group"] == "women"
        assert WOMEN["statement"] in fields["statement"]


def test_counter_speech_needs_a_hateful_draft():
    assert apply("counter_speech", COUNTER) == []
    assert apply("counter_speech", None) == []
    assert apply("counter_speech", {**PLACEHOLDER, "statement": "x" * 480}) == []  # too long once framed


# ------------------------------------------------------------------------------------------- identity swap


def test_identity_swap_keeps_the_gold_within_the_kind_of_group():
    rewrites = apply("identity_swap", {**PLACEHOLDER, "target_group": "muslims"})
    assert {f["statement"] for f in rewrites} == {
        "Jews are [an insult goes here].",
        "Christians are [an insult goes here].",
    }
    for fields in rewrites:
        assert fields["label"] == "hateful" and fields["type"] == "derogation"
        assert fields["target_group"] == fields["statement"].split()[0].lower()
    assert apply("identity_swap", COUNTER) == [
        {
            "statement": "People who call refugees vermin should be ashamed: Omar came here at ten and now runs the "
            "best bakery in town.",
            "label": "not_hateful",
            "target_group": "immigrants",
            "type": "none",
        }
    ]


def test_identity_swap_capitalises_only_at_a_sentence_start():
    draft = {"statement": "I stood up for Jews at work. Jews are my colleagues.", "label": "not_hateful"}
    draft["target_group"] = "jews"
    statements = [f["statement"] for f in apply("identity_swap", draft)]
    assert statements and all(s.count("Jews") == 0 for s in statements)
    assert "I stood up for Muslims at work. Muslims are my colleagues." in statements


@pytest.mark.parametrize(
    "draft",
    [
        WOMEN,  # "women like her": a gendered pronoun
        INSULT,  # no group named
        {"statement": "Men are [a generalisation].", "label": "not_hateful"},  # not hateful, no target group named
        # a group without another of its kind in the list
        {"statement": "Disabled people run the chess club.", "label": "not_hateful", "target_group": "disabled_people"},
        None,
    ],
)
def test_identity_swap_leaves_drafts_it_cannot_swap_safely(draft):
    assert apply("identity_swap", draft) == []


# ------------------------------------------------------------------------------------- frames from nothing


def test_support_frames_defend_groups():
    rewrites = apply("support_frames", None)
    assert len(rewrites) == len(adversaries.SUPPORT_FRAMES)
    terms = {term: group for term, group, _ in adversaries.GROUP_TERMS}
    for fields, frame in zip(rewrites, adversaries.SUPPORT_FRAMES, strict=True):
        assert fields["label"] == "not_hateful" and fields["type"] == "none"
        term = next(
            t for t, g in terms.items() if g == fields["target_group"] and t.lower() in fields["statement"].lower()
        )
        assert fields["statement"].lower() == frame.format(group=term, Group=term).lower()
    assert apply("support_frames", COUNTER) == []


def test_harsh_about_things_aims_strong_words_at_things():
    rewrites = apply("harsh_about_things", None)
    assert len(rewrites) == len(adversaries.HARSH_FRAMES)
    assert all(f["label"] == "not_hateful" and f["type"] == "none" and "target_group" not in f for f in rewrites)
    assert any(thing in rewrites[0]["statement"] for thing in adversaries.THINGS)
    extended = apply("harsh_about_things", INSULT)
    assert [f["statement"].removeprefix(INSULT["statement"] + " ").split(" this ")[0] for f in extended] == [
        "Honestly,",
        "Also,",
    ]
    assert all(f["label"] == "not_hateful" for f in extended)
    assert apply("harsh_about_things", COUNTER) == []  # names a group: the strong words could be read as aimed at it
    assert apply("harsh_about_things", PLACEHOLDER) == []  # hateful drafts are left alone


# --------------------------------------------------------------------------------- adversary: seed, registry


def request(draft: dict | None, seed: int = 0) -> AttackRequest:
    return AttackRequest(task=TASK, context={}, draft=draft, rng=random.Random(seed))


def test_same_seed_same_rewrites_and_all_valid():
    adversary = adversaries.adversary()
    for draft in (None, WOMEN, PLACEHOLDER, COUNTER, INSULT):
        first = adversary.rewrites(request(draft, seed=11))
        again = adversary.rewrites(request(draft, seed=11))
        assert first and [c.fields for c in first] == [c.fields for c in again]
        for c in first:
            assert TASK.validate_example(c.fields, None) == c.fields


def test_the_plugin_registers_the_adversary():
    plugins = Plugins(allowlist={"hatespeech"})
    adversary = plugins.registry.adversaries["hatespeech-templates"]
    assert isinstance(adversary, TemplateAdversary)
    assert plugins.registry.owners[("adversaries", "hatespeech-templates")] == "hatespeech"
    assert adversary.task_codes == ("hatespeech",) and adversary.unsuitable(plugins.task("hatespeech")) is None


# -------------------------------------------------------------------------------------------- attack, oracle


async def test_attack_asks_a_fake_oracle_about_every_rewrite():
    asked: list[dict] = []

    async def predict(inputs):
        asked.extend(inputs)
        output = {"label": "hateful", "probabilities": {"hateful": 0.6, "not_hateful": 0.4}}
        return [[{"model": "fake", "prediction": TASK.read_model_output(output), "latency_ms": 0.0}] for _ in inputs]

    def judge_(members, example, context):
        return judge(TASK, "majority", members, example, context)

    draft = {**PLACEHOLDER, "target_group": "muslims"}
    oracle = Oracle(TASK, {}, predict, judge_, max_queries=20, time_limit_s=30.0)
    candidates = await adversaries.adversary().attack(request(draft), oracle)
    names = [c.rationale.split(":")[0] for c in candidates]
    assert names == ["counter_speech"] * 3 + ["identity_swap"] * 2
    assert asked == [{"statement": c.fields["statement"]} for c in candidates] and oracle.queries == 5
    for c in candidates:
        assert c.fooled == (c.fields["label"] == "not_hateful")
        assert c.verdict.gold_probability == pytest.approx(0.4 if c.fooled else 0.6)
