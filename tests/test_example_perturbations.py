"""Perturbations of whole examples: context and input changed together, spans following, the gold declared.

Sentences here are written for the test. The fairness swaps change a premise and its hypothesis alike (a person
swapped in one is swapped in the other), a QA answer span follows its passage, a perturbation says whether its
copies keep their gold (``kept``, ``unknown`` or ``dropped``), the author's kit checks what evaluation makes, and
the example of docs/plugins.md runs as written.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from support import make_user

from dynaforge import ChoiceField, Perturbation, Role, Task, TextField
from dynaforge.conformance import check_perturbations
from dynaforge.defaults.perturbations import NAME_GROUPS
from dynaforge.evaluation.variants import build_variants, copy_gold
from dynaforge.plugins import Plugins
from dynaforge.services import datasets, submissions
from dynaforge.services.actor import Actor
from dynaforge.services.evaluation_runner import Runner
from dynaforge.tasks.base import GOLD_EFFECTS, PERTURBATION_SCOPES

REGISTRY = Plugins().registry
KEYWORD = {"callable": "toy_plugin:keyword_model"}
NLI = REGISTRY.tasks["nli"]
QA = REGISTRY.tasks["qa"]
P = REGISTRY.perturbations
NAMES = {name: (group, gender) for group, by in NAME_GROUPS.items() for gender, names in by.items() for name in names}


def _names(text: str) -> list[str]:
    return [word for word in re.findall(r"[A-Za-z]+", text) if word in NAMES]


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("name", ["name_swap", "name_origin_swap"])
def test_a_name_swapped_in_the_hypothesis_is_swapped_in_the_premise(name, seed):
    example = {
        "premise": "Emma lent Kwame her bike because his was broken.",
        "hypothesis": "Kwame borrowed a bike from Emma.",
        "label": "entailment",
    }
    copy = NLI.perturb(example, P[name], random.Random(seed))
    premise, hypothesis = _names(copy["premise"]), _names(copy["hypothesis"])
    assert len(premise) == len(hypothesis) == 2 and "Emma" not in premise + hypothesis
    assert premise == hypothesis[::-1]  # the same two people, each under one new name
    assert premise[0] != premise[1] and copy["label"] == "entailment"
    assert copy["premise"] != example["premise"] and copy["hypothesis"] != example["hypothesis"]


def test_gender_swap_changes_premise_and_hypothesis_alike():
    example = {
        "premise": "The king gave his son a horse.",
        "hypothesis": "A father gave a gift.",
        "label": "entailment",
    }
    copy = NLI.perturb(example, P["gender_swap"], random.Random(0))
    assert copy == {
        "premise": "The queen gave her daughter a horse.",
        "hypothesis": "A mother gave a gift.",
        "label": "entailment",
    }


def test_robustness_perturbations_still_edit_the_input_alone():
    example = {"premise": "Emma's shop is closed.", "hypothesis": "Emma's shop is shut.", "label": "entailment"}
    for name in ("typo", "lowercase", "uppercase", "punctuation", "contractions", "whitespace"):
        assert P[name].scope == "input" and P[name].gold == "kept"
        copy = NLI.perturb(example, P[name], random.Random(3))
        assert copy["premise"] == example["premise"], name
    assert {P[n].scope for n in ("gender_swap", "name_swap", "name_origin_swap")} == {"example"}


def _passage_example(passage: str, question: str, answer: str, occurrence: int = 0) -> dict:
    start = -1
    for _ in range(occurrence + 1):
        start = passage.index(answer, start + 1)
    return {"passage": passage, "question": question, "answer": {"text": answer, "start": start}}


@pytest.mark.parametrize("seed", range(10))
def test_a_qa_answer_follows_its_passage(seed):
    passage = (
        "Kwame met Sofia at the market on the first warm morning of the year. Later Sofia bought bread while Kwame "
        "waited outside."
    )  # at least 100 characters, as QA passages are
    first = _passage_example(passage, "Who did Kwame meet at the market?", "Sofia")
    second = _passage_example(passage, "Who bought bread later on?", "Sofia", occurrence=1)
    for example, occurrence in ((first, 0), (second, 1)):
        copy = QA.perturb(example, P["name_swap"], random.Random(seed))
        new = copy["answer"]["text"]
        assert new != "Sofia" and NAMES[new] == (NAMES["Sofia"][0], "male")
        starts = [m.start() for m in re.finditer(new, copy["passage"])]
        assert copy["answer"]["start"] == starts[occurrence]  # the same occurrence as before
        assert "Kwame" not in copy["passage"] + copy["question"]
        assert _names(copy["question"]) == _names(copy["passage"])[:1] if occurrence == 0 else copy["question"]
        context, rest = QA.split_fields(copy)
        QA.validate_example(rest, context)
    moved = QA.perturb(
        _passage_example("The king gave his son a horse.", "What did the king give his son?", "a horse"),
        P["gender_swap"],
        random.Random(0),
    )
    assert moved["passage"] == "The queen gave her daughter a horse."
    assert moved["answer"] == {"text": "a horse", "start": moved["passage"].index("a horse")}
    variants = build_variants(
        QA, [("kw", first)], seed=1, perturbations=["name_swap", "name_origin_swap"], registry=REGISTRY
    )
    assert [set(v.changed) for v in variants] == [{"passage", "question", "answer"}] * 2


def _swap_sides(texts, rng):
    return {"premise": texts["hypothesis"], "hypothesis": texts["premise"]}


def _add_not(text, rng):
    return text.replace(" is ", " is not ", 1)


def test_a_perturbation_declares_what_happens_to_the_gold():
    swap = Perturbation("swap-sides", lambda text, rng: text, "robustness", "Premise and hypothesis swapped.",
                        apply_example=_swap_sides, gold="unknown")  # fmt: skip
    negate = Perturbation("negate", _add_not, "robustness", "A 'not' after the first 'is'.", gold="dropped")
    assert swap.scope == "example" and negate.scope == "input"  # apply_example implies the example scope
    example = {
        "premise": "The shop is open on Sundays.",
        "hypothesis": "The shop is closed on Sundays.",
        "label": "contradiction",
        "reason": "It says closed.",  # reveals the gold: dropped with it
    }
    variants = build_variants(NLI, [(1, example)], seed=0, perturbations=[swap, negate])
    by_name = {v.perturbation: v for v in variants}
    assert by_name["swap-sides"].gold == "unknown" and by_name["swap-sides"].fields == {
        **example,
        "premise": example["hypothesis"],
        "hypothesis": example["premise"],
    }
    assert by_name["negate"].gold == "dropped" and by_name["negate"].fields == {
        "premise": example["premise"],
        "hypothesis": "The shop is not closed on Sundays.",
    }
    assert by_name["negate"].changed == ("hypothesis",)
    assert by_name["negate"].as_dict()["gold"] == "dropped"
    # a perturbation that changes nothing but the gold makes no copy
    nothing = Perturbation("nothing", lambda text, rng: text, gold="dropped")
    assert build_variants(NLI, [(1, example)], seed=0, perturbations=[nothing]) == []


def test_a_perturbation_with_a_wrong_declaration_is_refused_when_made():
    assert GOLD_EFFECTS == ("kept", "unknown", "dropped") and PERTURBATION_SCOPES == ("input", "example")
    with pytest.raises(ValueError, match="gold must be one of kept, unknown, dropped"):
        Perturbation("x", lambda text, rng: text, gold="flipped")
    with pytest.raises(ValueError, match="scope must be one of input, example"):
        Perturbation("x", lambda text, rng: text, scope="context")
    extra = Perturbation("extra", lambda text, rng: text, apply_example=lambda texts, rng: {**texts, "label": "x"})
    with pytest.raises(ValueError, match="apply_example must return the keys it was given"):
        NLI.perturb({"premise": "A man.", "hypothesis": "A man sleeps.", "label": "neutral"}, extra, random.Random(0))


async def test_the_kit_checks_what_evaluation_makes():
    swap = Perturbation("swap-sides", lambda text, rng: text, apply_example=_swap_sides, gold="unknown")
    negate = Perturbation("negate", _add_not, gold="dropped")

    class Nli(type(NLI)):  # type: ignore[misc]
        perturbations = ("gender_swap", "name_swap", "name_origin_swap", "swap-sides", "negate")

    registry = type(REGISTRY)(perturbations={**P, "swap-sides": swap, "negate": negate})
    assert await check_perturbations(Nli(), registry, None) == []

    class KeepsTheGold(Nli):
        def perturb(self, example, perturbation, rng):
            """Forgets to drop the gold of a perturbation that declares it dropped."""
            return {**example, **super().perturb(example, perturbation, rng)}

    problems = await check_perturbations(KeepsTheGold(), registry, None)
    assert problems and all("negate" in p and "its gold is dropped" in p for p in problems), problems

    class ChangesTheLabel(Nli):
        def perturb(self, example, perturbation, rng):
            return {**super().perturb(example, perturbation, rng), "label": "neutral"}

    problems = await check_perturbations(ChangesTheLabel(), registry, None)
    assert any("name_swap" in p and "changed fields outside the context and input fields: ['label']" in p
               for p in problems), problems  # fmt: skip


def _guide_example() -> dict:
    text = (Path(__file__).resolve().parent.parent / "docs" / "plugins.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL) if "def shift_years" in b]
    namespace: dict = {}
    exec(compile(re.sub(r"(?m)^  ", "", block), "docs-whole-examples", "exec"), namespace)
    return namespace


class Claims(Task):
    """A FEVER-style task: a claim about a piece of evidence."""

    code = "claims"
    name = "Claims"
    labels = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
    fields = (
        TextField(name="evidence", role=Role.CONTEXT),
        TextField(name="claim", role=Role.INPUT, min_length=5),
        ChoiceField(name="label", role=Role.TARGET),
    )
    perturbations = ("claims-shift-years",)
    sample_examples = (
        {"evidence": "The bridge opened in 1932 and was widened in 1987.", "claim": "It opened in 1932.",
         "label": "SUPPORTS"},
        {"evidence": "The bridge opened in 1932.", "claim": "The bridge opened in 1930.", "label": "REFUTES"},
    )  # fmt: skip


async def test_the_guides_whole_example_perturbation_runs_as_written():
    namespace = _guide_example()
    registered: list[Perturbation] = []
    namespace["register_perturbations"](registered.append)
    [shift] = registered
    assert (shift.name, shift.scope, shift.gold) == ("claims-shift-years", "example", "kept")
    task = Claims()
    for example in task.sample_examples:
        for seed in range(5):
            copy = task.perturb(example, shift, random.Random(seed))
            before = [int(y) for y in re.findall(r"\d{4}", example["evidence"] + " " + example["claim"])]
            after = [int(y) for y in re.findall(r"\d{4}", copy["evidence"] + " " + copy["claim"])]
            offsets = {b - a for a, b in zip(before, after, strict=True)}
            assert len(offsets) == 1 and offsets != {0}  # one shift, in the evidence and the claim alike
            assert copy["label"] == example["label"]
    registry = type(REGISTRY)(perturbations={shift.name: shift})
    assert await check_perturbations(task, registry, None) == []
    assert shift.apply("Built in 1901.", random.Random(0)) != "Built in 1901."  # its form on one text


# --------------------------------------------------------------------------- copies of a scoring set, stored


async def test_a_scoring_sets_fairness_copy_swaps_the_context_with_the_input(platform, monkeypatch):
    task = platform.plugins.registry.tasks["toy"]
    soften = Perturbation("soften", lambda text, rng: text.replace("good", "fine"), gold="dropped")
    monkeypatch.setitem(platform.plugins.registry.perturbations, "soften", soften)
    monkeypatch.setattr(task, "perturbations", ("name_swap", "uppercase", "soften"))
    records = [
        (f"line {i}", {"topic": f"Emma's day {i}", "text": f"Emma found it good {i}", "label": "good"})
        for i in range(12)
    ]
    made = await datasets.create_dataset(platform, Actor.system(), "toy", "people", records)
    by_name = {d.name: d for d in made}
    assert set(by_name) == {"people", "people~name_swap", "people~uppercase", "people~soften"}
    swapped = (await datasets.items(platform, Actor.system(), by_name["people~name_swap"].id)).items
    upper = (await datasets.items(platform, Actor.system(), by_name["people~uppercase"].id)).items
    assert len(swapped) == len(upper) == 12
    for item in swapped:
        [in_topic], [in_text] = _names(item.fields["topic"]), _names(item.fields["text"])
        assert in_topic == in_text != "Emma" and item.fields["label"] == "good"
    assert all(i.fields["topic"].startswith("Emma's day") and i.fields["text"].isupper() for i in upper)
    assert "gold" not in by_name["people~name_swap"].description  # kept: nothing to say
    softened = (await datasets.items(platform, Actor.system(), by_name["people~soften"].id)).items
    assert [i.fields for i in softened] == [{"topic": f"Emma's day {i}", "text": f"Emma found it fine {i}"}
                                            for i in range(12)]  # fmt: skip
    assert "gold dropped: scored for consistency with the original only" in by_name["people~soften"].description
    assert (by_name["people~soften"].perturbation_gold, by_name["people~uppercase"].perturbation_gold) == (
        "dropped",
        "kept",
    )

    # evaluated: the copy whose gold was dropped has no figure against it, and counts for consistency only
    builder = await make_user(platform, "builder")
    model, queued = await submissions.submit_model(
        platform, builder, task_code="toy", name="keywords", backend="python", config=KEYWORD
    )
    runner = Runner(platform.settings, platform.plugins, db=platform.db)
    assert set((await runner.run_many([e.id for e in queued])).values()) == {"DONE"}
    evaluations = {d.name: e for e, d in await submissions.evaluations_of(platform, model.id)}
    soft = evaluations["people~soften"]
    assert soft.metrics == {} and soft.details["gold"] == "dropped" and soft.details["n"] == 12
    assert evaluations["people~uppercase"].metrics  # a copy that keeps the gold is scored against it
    copies = evaluations["people"].details["perturbations"]
    assert copies["soften"]["gold"] == "dropped" and set(copies["soften"]) == {"kind", "consistency", "gold"}
    assert "accuracy" in copies["uppercase"] and copies["uppercase"]["gold"] == "kept"


def test_a_stored_copy_says_whether_it_is_scored_against_its_gold():
    from types import SimpleNamespace

    negate = Perturbation("negate", _add_not, gold="dropped")
    registry = type(REGISTRY)(perturbations={**P, "negate": negate})

    def copy(**row):
        return SimpleNamespace(**{"parent_id": 1, "perturbation": None, **row})

    assert copy_gold(SimpleNamespace(parent_id=None, perturbation=None), registry) == "kept"  # an original
    assert copy_gold(copy(perturbation="negate"), registry) == "dropped"
    assert copy_gold(copy(perturbation="name_swap"), registry) == "kept"
    assert copy_gold(copy(perturbation="dialect"), registry) == "kept"  # an owner's own copy
    assert copy_gold(copy(perturbation="negate", perturbation_gold="unknown"), registry) == "unknown"  # as stored


async def test_perturbations_say_their_scope_and_gold_over_graphql(gql):
    listed = {p["name"]: p for p in (await gql("{ perturbations { name kind scope gold } }"))["perturbations"]}
    assert listed["name_swap"] == {"name": "name_swap", "kind": "FAIRNESS", "scope": "EXAMPLE", "gold": "KEPT"}
    assert listed["typo"] == {"name": "typo", "kind": "ROBUSTNESS", "scope": "INPUT", "gold": "KEPT"}
