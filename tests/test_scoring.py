"""The statistics of an evaluation (dynaforge.evaluation.scoring), checked against values worked out by hand."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction

import pytest
from toy_plugin import ToyPlugin

from dynaforge import Metric, Slice
from dynaforge.defaults.metrics import macro_f1
from dynaforge.errors import InvalidInput
from dynaforge.evaluation.scoring import (
    DEFAULT_MIN_GROUP_SIZE,
    Consistency,
    bootstrap_interval,
    consistency,
    coverage,
    item_scores,
    metric_interval,
    perturbed_score,
    score,
    slice_gaps,
    slice_metrics,
    target_key,
)
from dynaforge.plugins import Plugins


@pytest.fixture(scope="module")
def toy():
    plugins = Plugins(allowlist=set(), extra=[ToyPlugin()])
    return plugins.task("toy"), plugins.registry.metrics


@pytest.fixture(scope="module")
def qa():
    plugins = Plugins(allowlist={"qa"})
    task = plugins.task("qa")
    if task is None:
        pytest.skip(f"the qa plugin is not installed: {plugins.errors}")
    return task, plugins.registry.metrics


def labels(*values):
    return [{"label": v} for v in values]


def predicted(*values):
    # What read_model_output returns: the target field and the probabilities, which no statistic looks at.
    return [{"label": v, "probabilities": {"good": 0.5, "bad": 0.5}} for v in values]


def span(text, start):
    return {"text": text, "start": start}


# --------------------------------------------------------------------------------------------------------------- score
def test_score_computes_the_tasks_metrics_on_the_target_values(toy):
    task, metrics = toy
    golds = labels("good", "good", "bad", "bad")
    preds = predicted("good", "bad", "bad", "bad")
    result = score(task, None, golds, preds, metrics=metrics)
    assert set(result) == {"accuracy", "macro_f1"}
    assert result["accuracy"] == 0.75
    # good: tp 1, fp 0, fn 1 -> F1 2/3; bad: tp 2, fp 1, fn 0 -> F1 4/5; mean 11/15.
    assert result["macro_f1"] == pytest.approx(11 / 15)
    assert score(task, ["accuracy"], golds, preds, metrics=metrics) == {"accuracy": 0.75}


def test_score_spans_with_the_qa_metrics(qa):
    task, metrics = qa
    golds = [
        {"answer": span("Agnes Pell", 50)},
        {"answer": span("a load of timber", 300)},
        {"answer": span("1994", 400)},
    ]
    preds = [
        {"answer": span("the engineer Agnes Pell", 37), "confidence": 0.4},
        None,
        {"answer": span("1994", 400), "confidence": 0.9},
    ]
    result = score(task, None, golds, preds, metrics=metrics)
    # "engineer agnes pell" vs "agnes pell": P 2/3, R 1, F1 0.8; no answer: 0; "1994": 1.
    assert result["span_f1"] == pytest.approx((0.8 + 0 + 1) / 3)
    assert result["exact_match"] == pytest.approx(1 / 3)


def test_score_rejects_bad_input_clearly(toy):
    task, metrics = toy
    with pytest.raises(InvalidInput, match=r"differ in length \(2 vs 1\)"):
        score(task, None, labels("good", "bad"), predicted("good"), metrics=metrics)
    with pytest.raises(InvalidInput, match="empty"):
        score(task, None, [], [], metrics=metrics)
    with pytest.raises(InvalidInput, match=r"unknown metric 'blue'.*registered: accuracy, bleu, brier"):
        score(task, ["accuracy", "blue"], labels("good"), predicted("good"), metrics=metrics)
    with pytest.raises(InvalidInput, match="not one string"):
        score(task, "accuracy", labels("good"), predicted("good"), metrics=metrics)
    with pytest.raises(InvalidInput, match=r"golds\[1\] lacks the target field 'label'"):
        score(task, None, [{"label": "good"}, {"text": "x"}], predicted("good", "bad"), metrics=metrics)
    with pytest.raises(InvalidInput, match=r"predictions\[0\] lacks the target field 'label'"):
        score(task, None, labels("good"), [{"probabilities": {}}], metrics=metrics)


def test_a_metric_that_cannot_score_is_reported_as_invalid_input(qa):
    task, metrics = qa
    with pytest.raises(InvalidInput, match="metric span_f1 could not score"):
        score(task, ["span_f1"], [{"answer": span("x", 0)}], [{"answer": "not a span"}], metrics=metrics)


def test_target_key_keeps_only_the_target_fields(toy, qa):
    toy_task, _ = toy
    qa_task, _ = qa
    assert target_key(toy_task)({"label": "good", "probabilities": {"good": 1.0}}) == "good"
    assert target_key(toy_task)(None) is None
    assert target_key(qa_task)({"answer": span("1994", 4), "confidence": 0.2}) == span("1994", 4)


# ----------------------------------------------------------------------------------------------------------- bootstrap
def test_percentile_method_on_a_known_distribution():
    # A statistic that returns 0, 1, ..., 99 on successive resamples: the 90% interval is the 5th and 95th
    # percentiles with linear interpolation, positions 99 * 0.05 = 4.95 and 99 * 0.95 = 94.05.
    values = iter(range(100))
    low, high = bootstrap_interval(lambda indices: next(values), seed=0, resamples=100, confidence=0.9, size=3)
    assert (low, high) == (pytest.approx(4.95), pytest.approx(94.05))


def test_bootstrap_degenerates_to_a_point_for_constant_scores():
    assert bootstrap_interval([0.25] * 40, seed=1) == (0.25, 0.25)
    assert bootstrap_interval([1.0], seed=1) == (1.0, 1.0)
    assert bootstrap_interval(lambda indices: 0.5, seed=1, size=7) == (0.5, 0.5)


def test_bootstrap_is_deterministic_for_a_seed_and_contains_the_point_estimate():
    scores = [1.0] * 140 + [0.0] * 60  # mean 0.7
    first = bootstrap_interval(scores, seed=7)
    assert first == bootstrap_interval(scores, seed=7)
    assert first != bootstrap_interval(scores, seed=8)
    assert first.low < 0.7 < first.high
    # The standard error is sqrt(0.7 * 0.3 / 200) = 0.0324: a 95% interval is about +-0.064 wide each side.
    assert 0.6 < first.low < 0.66 and 0.74 < first.high < 0.8


def test_bootstrap_narrows_with_more_data():
    small = bootstrap_interval([1.0] * 70 + [0.0] * 30, seed=3)
    large = bootstrap_interval([1.0] * 7000 + [0.0] * 3000, seed=3)
    assert large.low < 0.7 < large.high
    assert (large.high - large.low) < (small.high - small.low) / 5  # 10 times the items: sqrt(100) = 10 times


def test_resampling_scores_and_resampling_indices_draw_the_same_items():
    scores = [0.0, 0.2, 0.5, 1.0, 1.0, 0.3]
    by_scores = bootstrap_interval(scores, seed=11, resamples=200)
    by_indices = bootstrap_interval(
        lambda ix: sum(scores[i] for i in ix) / len(ix), seed=11, resamples=200, size=len(scores)
    )
    assert by_scores == (pytest.approx(by_indices.low), pytest.approx(by_indices.high))


def test_bootstrap_rejects_bad_input():
    with pytest.raises(InvalidInput, match="per-item scores are empty"):
        bootstrap_interval([], seed=0)
    with pytest.raises(InvalidInput, match="needs size"):
        bootstrap_interval(lambda ix: 0.0, seed=0)
    with pytest.raises(InvalidInput, match="resamples must be a positive integer"):
        bootstrap_interval([1.0], seed=0, resamples=0)
    with pytest.raises(InvalidInput, match="confidence must be strictly between 0 and 1"):
        bootstrap_interval([1.0], seed=0, confidence=1.0)
    with pytest.raises(InvalidInput, match="finite"):
        bootstrap_interval([1.0, float("nan")], seed=0)


def test_item_scores_tell_item_averaged_metrics_from_corpus_level_ones(toy, qa):
    _, metrics = toy
    golds, preds = ["good", "good", "bad", "bad"], ["good", "bad", "bad", "bad"]
    assert item_scores(metrics["accuracy"], golds, preds) == [1.0, 0.0, 1.0, 1.0]
    assert item_scores(metrics["macro_f1"], golds, preds) is None
    _, qa_metrics = qa
    spans = item_scores(
        qa_metrics["span_f1"],
        [span("Agnes Pell", 0), span("1994", 9)],
        [span("the engineer Agnes Pell", 0), span("1861", 3)],
    )
    assert spans == [pytest.approx(0.8), 0.0]


def test_metric_interval_of_the_principal_metric(toy):
    task, metrics = toy
    golds = labels(*(["good"] * 50 + ["bad"] * 50))
    preds = predicted(*(["good"] * 40 + ["bad"] * 10 + ["bad"] * 35 + ["good"] * 15))  # accuracy 0.75
    interval = metric_interval(task, None, golds, preds, metrics=metrics, seed=5)
    assert interval == metric_interval(task, "accuracy", golds, preds, metrics=metrics, seed=5)
    assert interval.low < 0.75 < interval.high
    assert interval == bootstrap_interval([1.0] * 40 + [0.0] * 10 + [1.0] * 35 + [0.0] * 15, seed=5)


def test_macro_f1_interval_resamples_the_whole_metric(toy):
    task, metrics = toy
    golds = labels(*(["good"] * 30 + ["bad"] * 70))
    preds = predicted(*(["good"] * 20 + ["bad"] * 10 + ["bad"] * 63 + ["good"] * 7))
    point = score(task, ["macro_f1"], golds, preds, metrics=metrics)["macro_f1"]
    fast = metric_interval(task, "macro_f1", golds, preds, metrics=metrics, seed=2, resamples=300)
    # The same metric behind another function takes the generic path: compute() on every resample.
    slow_metrics = {"macro_f1_again": Metric("macro_f1_again", lambda g, p: macro_f1(g, p))}
    slow = metric_interval(task, "macro_f1_again", golds, preds, metrics=slow_metrics, seed=2, resamples=300)
    assert fast == (pytest.approx(slow.low, abs=1e-12), pytest.approx(slow.high, abs=1e-12))
    assert fast.low < point < fast.high
    per_item = metric_interval(task, "macro_f1", golds, preds, metrics=metrics, seed=2, resamples=300, per_item=True)
    assert per_item != fast  # forcing per-item scores bootstraps accuracy, which is another statistic


# --------------------------------------------------------------------------------------------------------- consistency
def test_consistency_averages_per_original_not_per_variant():
    originals = {"a": "good", "b": "bad", "c": "good"}
    variants = [
        ("b", "good"),  # b: 1 variant, changed -> 0
        ("c", "good"),
        ("c", "bad"),
        ("c", "good"),
    ]  # c: 3 variants, 2 unchanged -> 2/3; a: none
    result = consistency(originals, variants)
    assert result == Consistency(score=pytest.approx(1 / 3), originals_with_variants=2, variants=4)
    assert result.score != pytest.approx(2 / 4)  # what a per-variant average would say


def test_consistency_compares_target_fields_of_prediction_dicts(toy):
    task, _ = toy
    originals = {1: {"label": "good", "probabilities": {"good": 0.9, "bad": 0.1}}}
    variants = [
        (1, {"label": "good", "probabilities": {"good": 0.6, "bad": 0.4}}),
        (1, {"label": "bad", "probabilities": {"good": 0.4, "bad": 0.6}}),
    ]
    assert consistency(originals, variants, key=target_key(task)).score == 0.5
    assert consistency(originals, variants).score == 0.0  # whole dicts: the probabilities differ


def test_consistency_of_spans(qa):
    task, _ = qa
    originals = {
        "q1": {"answer": span("1994", 120), "confidence": 0.8},
        "q2": {"answer": span("Agnes Pell", 40), "confidence": 0.7},
    }
    variants = [
        ("q1", {"answer": span("1994", 120), "confidence": 0.3}),  # same span
        ("q1", {"answer": span("1994", 15), "confidence": 0.9}),  # same words, another place
        ("q2", {"answer": span("agnes pell", 40), "confidence": 0.5}),
    ]
    exact = consistency(originals, variants, key=target_key(task))
    assert exact == Consistency(score=pytest.approx((1 / 2 + 0) / 2), originals_with_variants=2, variants=3)
    loose = consistency(originals, variants, key=lambda p: p["answer"]["text"].lower())
    assert loose.score == 1.0
    by_rule = consistency(originals, variants, same=lambda a, b: a["answer"]["start"] == b["answer"]["start"])
    assert by_rule.score == pytest.approx((1 / 2 + 1) / 2)


def test_consistency_rejects_bad_input():
    with pytest.raises(InvalidInput, match="no perturbed variants"):
        consistency({"a": "good"}, [])
    with pytest.raises(InvalidInput, match="original 'z', which has no prediction"):
        consistency({"a": "good"}, [("a", "good"), ("z", "bad")])
    with pytest.raises(InvalidInput, match="key or same, not both"):
        consistency({"a": "good"}, [("a", "good")], key=str, same=lambda a, b: True)
    with pytest.raises(InvalidInput, match=r"variants\[0\] must be a pair"):
        consistency({"a": "good"}, ["a"])


def test_perturbed_score_scores_each_variant_against_its_originals_gold(toy):
    task, metrics = toy
    golds = {"a": {"label": "good"}, "b": {"label": "bad"}, "c": {"label": "good"}}
    variants = [("a", {"label": "good"}), ("a", {"label": "bad"}), ("a", {"label": "good"}), ("b", {"label": "bad"})]
    assert perturbed_score(task, ["accuracy"], golds, variants, metrics=metrics) == {"accuracy": 0.75}
    with pytest.raises(InvalidInput, match="original 'x', which has no gold"):
        perturbed_score(task, None, golds, [("x", {"label": "good"})], metrics=metrics)
    with pytest.raises(InvalidInput, match="no perturbed variants"):
        perturbed_score(task, None, golds, [], metrics=metrics)


# -------------------------------------------------------------------------------------------------------------- slices
NOTE_SLICE = Slice(name="toy-note", group=lambda fields: fields.get("note"), task_code="toy")


def _sliced_data():
    """x: 10 examples, 6 right; z: 10 examples, all right; y: 2 examples, both wrong; 3 in no group, all right."""
    rows = (
        [("x", "good", "good")] * 6
        + [("x", "good", "bad")] * 4
        + [("z", "bad", "bad")] * 10
        + [("y", "good", "bad")] * 2
        + [(None, "bad", "bad")] * 3
    )
    examples = [
        {"text": f"t{i}", "label": gold, **({"note": note} if note else {})} for i, (note, gold, _) in enumerate(rows)
    ]
    golds = labels(*(gold for _, gold, _ in rows))
    preds = predicted(*(pred for _, _, pred in rows))
    return golds, preds, examples


def test_slice_metrics_per_group(toy):
    task, metrics = toy
    golds, preds, examples = _sliced_data()
    result = slice_metrics(task, [NOTE_SLICE], golds, preds, examples, metrics=metrics)
    groups = result["toy-note"]
    assert list(groups) == ["x", "y", "z"]
    assert groups["x"]["accuracy"] == 0.6 and groups["x"]["n"] == 10
    # x: good tp 6, fn 4 -> F1 12/16; bad tp 0, fp 4 -> 0; mean 0.375.
    assert groups["x"]["macro_f1"] == pytest.approx(0.375)
    assert groups["y"] == {"accuracy": 0.0, "macro_f1": 0.0, "n": 2}
    assert groups["z"] == {"accuracy": 1.0, "macro_f1": 1.0, "n": 10}


def test_slice_gap_leaves_out_groups_below_the_minimum_size(toy):
    task, metrics = toy
    golds, preds, examples = _sliced_data()
    overall = score(task, ["accuracy"], golds, preds, metrics=metrics)
    assert overall["accuracy"] == pytest.approx(19 / 25)  # 6 + 10 + 0 + 3 right of 25
    per_slice = slice_metrics(task, [NOTE_SLICE], golds, preds, examples, metrics=metrics, metric_names=["accuracy"])
    assert DEFAULT_MIN_GROUP_SIZE == 10
    gaps = slice_gaps(overall, per_slice, metrics=metrics)["toy-note"]["accuracy"]
    # y (2 examples, accuracy 0) is too small to count: the worst group is x, 19/25 - 0.6 = 0.16.
    assert gaps == {
        "gap": pytest.approx(0.16),
        "worst_group": "x",
        "worst_value": 0.6,
        "overall": pytest.approx(0.76),
        "groups_compared": 2,
    }
    with_small = slice_gaps(overall, per_slice, metrics=metrics, min_group_size=2)["toy-note"]["accuracy"]
    assert with_small["worst_group"] == "y" and with_small["gap"] == pytest.approx(0.76)
    nothing = slice_gaps(overall, per_slice, min_group_size=11)["toy-note"]["accuracy"]
    assert nothing == {
        "gap": None,
        "worst_group": None,
        "worst_value": None,
        "overall": pytest.approx(0.76),
        "groups_compared": 0,
    }


def test_slice_gap_of_a_metric_where_lower_is_better():
    error = Metric("error_rate", lambda g, p: 0.0, higher_is_better=False)
    per_slice = {"s": {"a": {"error_rate": 0.1, "n": 20}, "b": {"error_rate": 0.4, "n": 20}}}
    gaps = slice_gaps({"error_rate": 0.25}, per_slice, metrics={"error_rate": error})
    assert gaps["s"]["error_rate"]["worst_group"] == "b"
    assert gaps["s"]["error_rate"]["gap"] == pytest.approx(float(Fraction(4, 10) - Fraction(25, 100)))


def test_slices_reject_bad_input(toy):
    task, metrics = toy
    golds, preds, examples = _sliced_data()
    other = Slice(name="other-task", group=lambda fields: "g", task_code="nli")
    with pytest.raises(InvalidInput, match="slice other-task belongs to task nli, not toy"):
        slice_metrics(task, [other], golds, preds, examples, metrics=metrics)
    with pytest.raises(InvalidInput, match=r"examples and golds differ in length \(24 vs 25\)"):
        slice_metrics(task, [NOTE_SLICE], golds, preds, examples[:-1], metrics=metrics)
    with pytest.raises(InvalidInput, match="min_group_size must be a positive integer"):
        slice_gaps({"accuracy": 1.0}, {}, min_group_size=0)


# ------------------------------------------------------------------------------------------ metrics that read items
def _calibration_data():
    """Five items with probabilities (A and B share the confidence bin (13/15, 14/15]), one whose prediction has
    none, one with no prediction (an unusable output), one whose probabilities do not sum to 1."""
    rows = [
        ("good", "good", {"good": 0.9, "bad": 0.1}),  # A: right at 0.9
        ("bad", "good", {"good": 0.92, "bad": 0.08}),  # B: wrong at 0.92
        ("bad", "good", {"good": 0.75, "bad": 0.25}),  # C: wrong at 0.75
        ("good", "good", {"good": 0.6, "bad": 0.4}),  # D: right at 0.6
        ("bad", "bad", {"good": 0.3, "bad": 0.7}),  # E: right at 0.7
    ]
    golds = [{"text": f"item {i}", "label": gold} for i, (gold, _, _) in enumerate(rows)]
    preds = [{"label": label, "probabilities": p} for _, label, p in rows]
    golds += labels("good", "good", "bad")
    preds += [{"label": "good", "confidence": 0.8}, None, {"label": "bad", "probabilities": {"good": 0.5, "bad": 0.3}}]
    return golds, preds


def test_calibration_metrics_read_the_probabilities_and_skip_items_without_them(toy):
    task, metrics = toy
    golds, preds = _calibration_data()
    result = score(task, ["accuracy", "ece", "brier"], golds, preds, metrics=metrics)
    # accuracy counts all eight items (A, D, E, F and H right); ece and brier only the five with probabilities.
    assert result["accuracy"] == pytest.approx(5 / 8)
    # ECE, 15 bins: {A, B}: |1 right - (0.9 + 0.92)| = 0.82; C: |0 - 0.75|; D: |1 - 0.6|; E: |1 - 0.7|; over 5.
    assert result["ece"] == pytest.approx((0.82 + 0.75 + 0.4 + 0.3) / 5)
    # Brier: A 0.1^2 * 2 = 0.02; B 0.92^2 * 2; C 0.75^2 * 2; D 0.4^2 * 2; E 0.3^2 * 2; over 5.
    assert result["brier"] == pytest.approx((0.02 + 1.6928 + 1.125 + 0.32 + 0.18) / 5)
    assert metrics["ece"].higher_is_better is False and metrics["brier"].higher_is_better is False
    assert coverage(task, None, golds, preds, metrics=metrics) == {}  # the toy task's metrics score every item
    assert coverage(task, ["accuracy", "ece"], golds, preds, metrics=metrics) == {
        "ece": {
            "scored": 5,
            "skipped": {"no prediction": 1, "no probabilities": 1, "probabilities that sum to 0.8, not 1": 1},
        }
    }


def test_a_set_without_probabilities_has_no_calibration_figures(toy):
    task, metrics = toy
    golds, preds = labels("good", "bad"), [{"label": "good"}, None]
    assert score(task, ["accuracy", "ece", "brier"], golds, preds, metrics=metrics) == {"accuracy": 0.5}
    with pytest.raises(InvalidInput, match=r"metric ece has no value on these items: .*no probabilities \(1\)"):
        metric_interval(task, "ece", golds, preds, metrics=metrics, seed=1)


def test_calibration_metrics_get_intervals_and_slice_figures(toy):
    task, metrics = toy
    golds, preds = _calibration_data()
    # brier is a mean over items: its interval resamples the per-item scores of the five items it scores
    brier = metric_interval(task, "brier", golds, preds, metrics=metrics, seed=4, resamples=200)
    assert brier == pytest.approx(bootstrap_interval([0.02, 1.6928, 1.125, 0.32, 0.18], seed=4, resamples=200))
    # ece is not (binning): each resample recomputes it, the same for the same seed
    ece = metric_interval(task, "ece", golds, preds, metrics=metrics, seed=4, resamples=200)
    assert 0.0 <= ece.low <= ece.high <= 1.0 and ece.high > ece.low
    assert ece == metric_interval(task, "ece", golds, preds, metrics=metrics, seed=4, resamples=200)
    # a group whose items carry no probabilities has no calibration figure, and no gap is drawn from it
    half = Slice("toy-half", lambda fields: "first" if "text" in fields else "rest", "toy")
    per_slice = slice_metrics(task, [half], golds, preds, golds, metrics=metrics, metric_names=["accuracy", "ece"])
    assert per_slice["toy-half"]["first"]["ece"] == pytest.approx((0.82 + 0.75 + 0.4 + 0.3) / 5)
    assert per_slice["toy-half"]["rest"] == {"accuracy": pytest.approx(2 / 3), "n": 3}
    overall = score(task, ["accuracy", "ece"], golds, preds, metrics=metrics)
    gaps = slice_gaps(overall, per_slice, metrics=metrics, min_group_size=1)["toy-half"]
    assert gaps["ece"]["groups_compared"] == 1 and gaps["ece"]["worst_group"] == "first"
    assert gaps["accuracy"]["groups_compared"] == 2


def test_a_plugin_metric_reads_the_items_inputs():
    """A metric of the richer form sees each item's fields (inputs included) and its prediction; intervals and slices
    work for it as for any metric."""

    def short_text_accuracy(items):
        short = [item for item in items if len(item.fields["text"]) <= 5]
        return sum(item.prediction == item.gold for item in short) / len(short) if short else 0.0

    metric = Metric("short_text_accuracy", short_text_accuracy, reads="items")
    plugins = Plugins(allowlist=set(), extra=[ToyPlugin()])
    task, metrics = plugins.task("toy"), {**plugins.registry.metrics, metric.name: metric}
    golds = [{"text": t, "label": "good"} for t in ("tiny", "short", "a much longer one", "long enough too")]
    preds = [{"label": "good"}, None, {"label": "bad"}, {"label": "good"}]
    assert score(task, ["short_text_accuracy"], golds, preds, metrics=metrics) == {"short_text_accuracy": 0.5}
    interval = metric_interval(task, "short_text_accuracy", golds, preds, metrics=metrics, seed=0, resamples=50)
    assert 0.0 <= interval.low <= interval.high <= 1.0
    by_length = Slice("toy-length", lambda fields: str(len(fields["text"]) > 5), "toy")
    groups = slice_metrics(task, [by_length], golds, preds, golds, metrics=metrics, metric_names=[metric.name])
    assert groups["toy-length"] == {
        "False": {"short_text_accuracy": 0.5, "n": 2},
        "True": {"short_text_accuracy": 0.0, "n": 2},
    }


def test_a_metric_of_either_form_is_declared_consistently():
    with pytest.raises(ValueError, match='only a metric with reads="items" has needs'):
        Metric("m", lambda g, p: 0.0, needs=("probabilities",))
    with pytest.raises(ValueError, match='reads must be "targets" or "items"'):
        Metric("m", lambda g, p: 0.0, reads="records")
    with pytest.raises(ValueError, match="needs must be a tuple among prediction, probabilities, confidence"):
        Metric("m", lambda items: 0.0, reads="items", needs=("inputs",))


def test_whatever_a_metric_raises_names_the_metric(toy):
    task, _ = toy
    boom = Metric("boom", lambda golds, preds: 1 / 0)
    with pytest.raises(InvalidInput, match="metric boom could not score these predictions: ZeroDivisionError"):
        score(task, ["boom"], labels("good"), predicted("good"), metrics={"boom": boom})
    items = Metric("items_boom", lambda items: items[0].fields["nope"], reads="items")
    with pytest.raises(InvalidInput, match="metric items_boom could not score these items: KeyError: 'nope'"):
        score(task, ["items_boom"], labels("good"), predicted("good"), metrics={"items_boom": items})
    nan = Metric("nan", lambda golds, preds: float("nan"))
    with pytest.raises(InvalidInput, match="metric nan returned nan: a metric's value must be a finite number"):
        score(task, ["nan"], labels("good"), predicted("good"), metrics={"nan": nan})


# ---------------------------------------------------------------------------------------------------------- boundaries
def test_scoring_does_not_import_numpy():
    code = "import sys, dynaforge.evaluation.scoring; print('numpy' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
