"""The minimal-pairs plugin on its own: the conformance kit, the pair rule, the language model and how its scores
are read and judged. No server: see test_end_to_end.py for that."""

from __future__ import annotations

import math

import pytest
from dynaforge import InvalidInput
from dynaforge.plugins import Plugins
from dynaforge.testing import parametrize_with_checks

from dynaforge_minimal_pairs import ngram
from dynaforge_minimal_pairs.plugin import CODE, MinimalPairsTask, word_edits


@parametrize_with_checks([CODE])
def test_the_task_conforms(check):
    check()


@pytest.fixture(scope="module")
def plugins():
    return Plugins(allowlist={"minimal-pairs"})  # loaded from its entry point, as a server loads it


def test_installed_with_its_slice(plugins):
    assert plugins.errors == {}
    task = plugins.task(CODE)
    assert isinstance(task, MinimalPairsTask)
    [phenomenon] = [plugins.registry.slices[name] for name in task.fairness_slices]
    assert phenomenon.group({"phenomenon": "tense"}) == "tense" and phenomenon.group({}) is None


@pytest.mark.parametrize(
    ("a", "b", "edits"),
    [
        ("the dog walks", "the dog walk", 1),
        ("the dog walks", "walks the dog", 2),
        ("she has an apple", "she has apple", 1),
        ("the cat sleeps", "the cat sleeps", 0),
        ("the cat sleeps", "a bird sang today", 4),
    ],
)
def test_word_edits(a, b, edits):
    assert word_edits(a.split(), b.split()) == edits


def pair(a: str, b: str, grammatical: str = "a", phenomenon: str = "agreement") -> dict[str, str]:
    return {"sentence_a": a, "sentence_b": b, "grammatical": grammatical, "phenomenon": phenomenon}


def test_a_pair_differs_by_one_or_two_words():
    task = MinimalPairsTask()
    cleaned = task.validate_example(pair("  The dog walks. ", "The dog walk."), None)
    assert cleaned["sentence_a"] == "The dog walks."
    # case and punctuation are not words: the same sentence in other case is no pair
    with pytest.raises(InvalidInput) as same:
        task.validate_example(pair("The dog walks.", "the dog walks"), None)
    assert [(e.field, e.rule) for e in same.value.field_errors] == [("sentence_b", "minimal_pair")]
    assert "is the same sentence as A" in same.value.message
    with pytest.raises(InvalidInput) as far:
        task.validate_example(pair("The dog walks home.", "A bird sang at dawn."), None)
    assert "differs from A by 5 words; a minimal pair differs by at most 2" in far.value.message
    with pytest.raises(InvalidInput) as fields:  # the field rules come first, all of them
        task.validate_example({"sentence_a": "ok", "grammatical": "c", "phenomenon": "style"}, None)
    wrong = sorted(e.field for e in fields.value.field_errors)
    assert wrong == ["grammatical", "phenomenon", "sentence_a", "sentence_b"]


def test_the_language_model_prefers_what_its_corpus_supports():
    model = ngram.load()
    assert model.log_likelihood("The dogs walk at home.") > model.log_likelihood("The dogs walks at home.")
    assert model.log_likelihood("The dog sings.") > model.log_likelihood("Sings the dog.")
    # a gap in the corpus: "an" follows only plural subjects, so the model takes the wrong article here
    assert model.log_likelihood("My sister has a apple.") > model.log_likelihood("My sister has an apple.")
    # the bag-of-words baseline cannot see order
    bag = ngram.load(use_context=False)
    assert bag.log_likelihood("The dog sings.") == pytest.approx(bag.log_likelihood("Sings the dog."))
    # unknown words cost probability, but never make it zero
    assert math.isfinite(model.log_likelihood("Zyzzyva quux."))


def test_the_shipped_weights_are_the_corpus_trained_afresh():
    fresh = ngram.build()
    assert ngram.WEIGHTS.read_text(encoding="utf-8") == fresh, "run python -m dynaforge_minimal_pairs.ngram build"


def test_scores_are_read_into_the_preferred_sentence_and_judged():
    task = MinimalPairsTask()
    read = task.read_model_output({"log_likelihoods": {"a": -10.0, "b": -12.0}})
    assert read["grammatical"] == "a"
    assert read["probabilities"]["a"] == pytest.approx(1 / (1 + math.exp(-2)))
    assert task.is_fooled(pair("x y", "x z", "a"), read, {}) is False
    assert task.is_fooled(pair("x y", "x z", "b"), read, {}) is True
    tie = task.read_model_output({"log_likelihoods": {"a": -3.5, "b": -3.5}})
    assert tie["grammatical"] is None and task.is_fooled(pair("x y", "x z", "a"), tie, {}) is True
    # a classifier answers with the label, read as any label is
    assert task.read_model_output({"grammatical": "b"}) == {"grammatical": "b"}
    for bad, message in [
        ({"log_likelihoods": {"a": -1.0}}, "log_likelihoods must be an object"),
        ({"log_likelihoods": {"a": -1.0, "b": float("nan")}}, "must be finite numbers"),
        ({"grammatical": "c"}, "not one of"),
    ]:
        with pytest.raises(ValueError, match=message):
            task.read_model_output(bad)
