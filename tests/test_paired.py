"""Paired tests between two models on the same items: McNemar's exact test and the paired bootstrap
(``dynaforge.evaluation.scoring``), checked against scipy and against what they must say by construction."""

from __future__ import annotations

import random

import pytest
from scipy.stats import binomtest
from toy_plugin import ToyPlugin

from dynaforge.errors import InvalidInput
from dynaforge.evaluation.scoring import mcnemar, paired_bootstrap, score
from dynaforge.plugins import Plugins


@pytest.fixture(scope="module")
def toy():
    plugins = Plugins(allowlist=set(), extra=[ToyPlugin()])
    return plugins.task("toy"), plugins.registry.metrics


@pytest.mark.parametrize("seed", range(12))
def test_mcnemar_equals_scipys_exact_binomial_test(seed):
    rng = random.Random(seed)
    n = rng.choice([5, 40, 300, 2000])
    first = [rng.random() < rng.uniform(0.3, 0.9) for _ in range(n)]
    second = [rng.random() < 0.6 for _ in range(n)]
    tested = mcnemar(first, second)
    b = sum(a and not c for a, c in zip(first, second, strict=True))
    c = sum(s and not a for a, s in zip(first, second, strict=True))
    assert (tested.only_first, tested.only_second) == (b, c)
    assert tested.both + tested.only_first + tested.only_second + tested.neither == tested.n == n
    assert tested.statistic == min(b, c)
    expected = binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
    assert tested.p_value == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_mcnemar_edges():
    assert mcnemar([True, False], [True, False]).p_value == 1.0  # no discordant pair: nothing to tell them apart
    assert mcnemar([], []).p_value == 1.0
    # 30 items only the first gets right, none the other way: far beyond chance (2 / 2**30)
    assert mcnemar([True] * 30, [False] * 30).p_value == pytest.approx(2 / 2**30)
    with pytest.raises(InvalidInput, match="pair the same items"):
        mcnemar([True], [True, False])


def _labels(values):
    return [{"label": v} for v in values]


def test_paired_bootstrap_of_identical_models_finds_no_difference(toy):
    task, metrics = toy
    rng = random.Random(1)
    golds = _labels(rng.choice(["good", "bad"]) for _ in range(80))
    predictions = _labels(rng.choice(["good", "bad"]) for _ in range(80))
    found = paired_bootstrap(task, None, golds, predictions, predictions, metrics=metrics, seed=3, resamples=200)
    assert found.difference == 0 and found.p_value == 1.0
    assert found.interval == (0.0, 0.0)


def test_paired_bootstrap_separates_a_clearly_better_model_and_is_seeded(toy):
    task, metrics = toy
    rng = random.Random(2)
    golds = _labels(rng.choice(["good", "bad"]) for _ in range(200))
    flip = {"good": "bad", "bad": "good"}
    better = [g if rng.random() < 0.9 else {"label": flip[g["label"]]} for g in golds]
    worse = [g if rng.random() < 0.6 else {"label": flip[g["label"]]} for g in golds]
    found = paired_bootstrap(task, "accuracy", golds, better, worse, metrics=metrics, seed=5, resamples=300)
    accuracy = score(task, ["accuracy"], golds, better, metrics=metrics)["accuracy"]
    assert found.first == pytest.approx(accuracy)
    assert found.difference == pytest.approx(found.first - found.second) and found.difference > 0.2
    assert 0 < found.interval.low <= found.difference <= found.interval.high
    assert found.p_value == 0.0  # no resample of 300 reverses a gap of 30 points on 200 items
    again = paired_bootstrap(task, "accuracy", golds, better, worse, metrics=metrics, seed=5, resamples=300)
    assert again == found
    # a corpus-level metric too (macro-F1 is recomputed on every resample)
    f1 = paired_bootstrap(task, "macro_f1", golds, better, worse, metrics=metrics, seed=5, resamples=100)
    assert f1.metric == "macro_f1" and f1.difference > 0


def test_paired_bootstrap_counts_an_unusable_output_as_wrong_and_refuses_bad_input(toy):
    task, metrics = toy
    golds = _labels(["good", "bad", "good", "bad"])
    found = paired_bootstrap(task, None, golds, golds, [None, *golds[1:]], metrics=metrics, seed=1, resamples=50)
    assert found.first == 1.0 and found.second == 0.75
    with pytest.raises(InvalidInput, match="positive integer"):
        paired_bootstrap(task, None, golds, golds, golds, metrics=metrics, seed=1, resamples=0)
