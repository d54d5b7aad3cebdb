"""The Dynascore (dynaforge.evaluation.dynascore): worked examples checked by hand, edge cases, properties.

Every expected figure below is worked out by hand in the comments (exact fractions where they help), never taken
from the implementation's own output.
"""

from __future__ import annotations

import random

import pytest

from dynaforge.errors import InvalidInput
from dynaforge.evaluation.dynascore import (
    DynascoreRow,
    MetricSpec,
    ModelScores,
    compute,
    compute_board,
)

TOL = 1e-9

# --------------------------------------------------------------------------- example 1: default weights
#
# Metrics: accuracy (principal, higher, default weight 4), throughput (higher, 1), memory (GB, 1), calibration
# error "ece" (lower, 1); sum of weights 7. Data sets d1 and d2, equal weights (none given: 1/2 each).
# Memory budget 16 GB.
#
#           d1: acc  thr  mem  ece   d2: acc  thr  mem  ece  | x: acc   thr  mem  ece
#   A           0.80 100  4    0.10      0.70 120  4    0.20 |    0.75  110  4    0.15
#   B           0.90  50  8    0.05      0.80  70  6    0.15 |    0.85   60  7    0.10
#   C           0.60 200  2    0.30      0.50 180  2    0.20 |    0.55  190  2    0.25
#
# Oriented (x'): acc and thr as they are; memory 16 - x: A 12, B 9, C 14; ece -x: A -0.15, B -0.10, C -0.25.
# Sorted by x'_acc: C (0.55), A (0.75), B (0.85); threshold 1e-4 * 0.85; pairs (C,A) Δp = 0.20, (A,B) Δp = 0.10.
#   AMRS_thr = mean(|110-190|/0.2, |60-110|/0.1)           = mean(400, 500) = 450
#   AMRS_mem = mean(|12-14|/0.2, |9-12|/0.1)               = mean(10, 30)   = 20
#   AMRS_ece = mean(|-0.15+0.25|/0.2, |-0.10+0.15|/0.1)    = mean(0.5, 0.5) = 0.5
#   AMRS_acc = 1
# Dynascore = (4*acc + thr/450 + mem'/20 + ece'/0.5) / 7:
#   A: (3.0 + 11/45 + 0.6 - 0.3) / 7 = (3.3 + 11/45) / 7 = 319/90 / 7 = 319/630
#   B: (3.4 + 2/15 + 0.45 - 0.2) / 7 = (3.65 + 2/15) / 7 = 227/60 / 7 = 227/420
#   C: (2.2 + 19/45 + 0.7 - 0.5) / 7 = (2.4 + 19/45) / 7 = 127/45 / 7 = 127/315
# Ranking: B (0.5405), A (0.5063), C (0.4032).

METRICS_1 = [
    MetricSpec("accuracy", "higher"),
    MetricSpec("throughput", "higher"),
    MetricSpec("memory", "memory"),
    MetricSpec("ece", "lower"),
]


def scores(**datasets: tuple[float | None, ...]) -> dict[str, dict[str, float | None]]:
    """``scores(d1=(acc, thr, mem, ece), ...)`` in METRICS_1's order; None values are left out (missing)."""
    names = [m.name for m in METRICS_1]
    return {d: {n: v for n, v in zip(names, values, strict=False) if v is not None} for d, values in datasets.items()}


def example_1() -> list[ModelScores]:
    return [
        ModelScores("A", scores(d1=(0.80, 100, 4, 0.10), d2=(0.70, 120, 4, 0.20))),
        ModelScores("B", scores(d1=(0.90, 50, 8, 0.05), d2=(0.80, 70, 6, 0.15))),
        ModelScores("C", scores(d1=(0.60, 200, 2, 0.30), d2=(0.50, 180, 2, 0.20))),
    ]


def by_id(rows: list[DynascoreRow]) -> dict[str, DynascoreRow]:
    return {row.model_id: row for row in rows}


def test_example_1_default_weights_every_intermediate():
    board = compute_board(example_1(), METRICS_1, principal="accuracy", memory_budget_gb=16)
    rows = by_id(board.rows)

    expected_x = {
        "A": {"accuracy": 0.75, "throughput": 110, "memory": 4, "ece": 0.15},
        "B": {"accuracy": 0.85, "throughput": 60, "memory": 7, "ece": 0.10},
        "C": {"accuracy": 0.55, "throughput": 190, "memory": 2, "ece": 0.25},
    }
    expected_oriented = {
        "A": {"accuracy": 0.75, "throughput": 110, "memory": 12, "ece": -0.15},
        "B": {"accuracy": 0.85, "throughput": 60, "memory": 9, "ece": -0.10},
        "C": {"accuracy": 0.55, "throughput": 190, "memory": 14, "ece": -0.25},
    }
    for model_id in "ABC":
        assert rows[model_id].x == pytest.approx(expected_x[model_id], abs=TOL)
        assert rows[model_id].oriented == pytest.approx(expected_oriented[model_id], abs=TOL)
        assert rows[model_id].missing == []

    assert board.dataset_weights == {"d1": 0.5, "d2": 0.5}
    assert board.metric_weights == pytest.approx(
        {"accuracy": 4 / 7, "throughput": 1 / 7, "memory": 1 / 7, "ece": 1 / 7}, abs=TOL
    )
    assert board.pairs == 2 and not board.amrs_fallback
    assert board.amrs["accuracy"] == 1.0
    assert board.amrs == pytest.approx({"accuracy": 1, "throughput": 450, "memory": 20, "ece": 0.5}, abs=TOL)

    assert [row.model_id for row in board.rows] == ["B", "A", "C"]
    assert [row.rank for row in board.rows] == [1, 2, 3]
    assert rows["A"].dynascore == pytest.approx(319 / 630, abs=TOL)
    assert rows["B"].dynascore == pytest.approx(227 / 420, abs=TOL)
    assert rows["C"].dynascore == pytest.approx(127 / 315, abs=TOL)


def test_compute_returns_the_boards_rows():
    rows = compute(example_1(), METRICS_1, principal="accuracy")
    assert [(r.model_id, r.rank) for r in rows] == [("B", 1), ("A", 2), ("C", 3)]
    assert rows[0].dynascore == pytest.approx(227 / 420, abs=TOL)


# --------------------------------------------------------------------------- custom weights change the ranking
#
# Example 1 with throughput weighted 10 (sum of weights 16); x', AMRS unchanged:
#   A: (3.0 + 10*11/45 + 0.6 - 0.3) / 16 = (3.3 + 22/9) / 16  = 517/90 / 16  = 517/1440  (0.3590)
#   B: (3.4 + 10*2/15 + 0.45 - 0.2) / 16 = (3.65 + 4/3) / 16  = 299/60 / 16  = 299/960   (0.3115)
#   C: (2.2 + 10*19/45 + 0.7 - 0.5) / 16 = (2.4 + 38/9) / 16  = 298/45 / 16  = 149/360   (0.4139)
# The fast model C now leads: C, A, B.


def test_custom_weights_change_the_ranking():
    board = compute_board(example_1(), METRICS_1, principal="accuracy", metric_weights={"throughput": 10})
    rows = by_id(board.rows)
    assert [row.model_id for row in board.rows] == ["C", "A", "B"]
    assert board.amrs == pytest.approx({"accuracy": 1, "throughput": 450, "memory": 20, "ece": 0.5}, abs=TOL)
    assert board.metric_weights["throughput"] == pytest.approx(10 / 16, abs=TOL)
    assert rows["A"].dynascore == pytest.approx(517 / 1440, abs=TOL)
    assert rows["B"].dynascore == pytest.approx(299 / 960, abs=TOL)
    assert rows["C"].dynascore == pytest.approx(149 / 360, abs=TOL)


def test_a_metric_spec_carries_a_task_default_weight_and_the_board_overrides_it():
    # Throughput's task default 10 gives the same board as the override above; an override of 1 restores example 1.
    metrics = [METRICS_1[0], MetricSpec("throughput", "higher", default_weight=10), *METRICS_1[2:]]
    rows = by_id(compute(example_1(), metrics, principal="accuracy"))
    assert rows["C"].dynascore == pytest.approx(149 / 360, abs=TOL)
    rows = by_id(compute(example_1(), metrics, principal="accuracy", metric_weights={"throughput": 1}))
    assert rows["B"].dynascore == pytest.approx(227 / 420, abs=TOL)


# --------------------------------------------------------------------------- example 2: weighted data sets
#
# Metrics: f1 (principal, higher, 4), memory (GB, 1), ece (lower, 1); sum of weights 6. Data-set weights d1: 3,
# d2: 1, normalised to 0.75 and 0.25. Memory budget 8 GB.
#
#           d1: f1   mem  ece    d2: f1   mem  ece  | x: f1                    mem                ece
#   P           0.8  2    0.04       0.4  2    0.12 |    0.6+0.1   = 0.70      2                  0.03+0.03  = 0.06
#   Q           0.6  1    0.08       0.8  1    0.16 |    0.45+0.2  = 0.65      1                  0.06+0.04  = 0.10
#   R           0.9  4    0.02       0.5  6    0.10 |    0.675+0.125 = 0.80    3+1.5 = 4.5        0.015+0.025 = 0.04
#
# Oriented: memory 8 - x: P 6, Q 7, R 3.5; ece -x: P -0.06, Q -0.10, R -0.04.
# Sorted by f1: Q (0.65), P (0.70), R (0.80); pairs (Q,P) Δp = 0.05, (P,R) Δp = 0.10.
#   AMRS_mem = mean(|6-7|/0.05, |3.5-6|/0.1)          = mean(20, 25)    = 22.5
#   AMRS_ece = mean(|-0.06+0.10|/0.05, |-0.04+0.06|/0.1) = mean(0.8, 0.2) = 0.5
# Dynascore = (4*f1 + mem'/22.5 + ece'/0.5) / 6:
#   P: (2.8 + 6/22.5 - 0.12) / 6 = (67/25 + 4/15) / 6 = 221/75 / 6  = 221/450  (0.4911)
#   Q: (2.6 + 7/22.5 - 0.20) / 6 = (12/5 + 14/45) / 6 = 122/45 / 6  = 61/135   (0.4519)
#   R: (3.2 + 3.5/22.5 - 0.08) / 6 = (78/25 + 7/45) / 6 = 737/225 / 6 = 737/1350 (0.5459)

METRICS_2 = [MetricSpec("f1"), MetricSpec("memory", "memory"), MetricSpec("ece", "lower")]


def example_2() -> list[ModelScores]:
    def s(f1a, mema, ecea, f1b, memb, eceb):
        return {"d1": {"f1": f1a, "memory": mema, "ece": ecea}, "d2": {"f1": f1b, "memory": memb, "ece": eceb}}

    return [
        ModelScores("P", s(0.8, 2, 0.04, 0.4, 2, 0.12)),
        ModelScores("Q", s(0.6, 1, 0.08, 0.8, 1, 0.16)),
        ModelScores("R", s(0.9, 4, 0.02, 0.5, 6, 0.10)),
    ]


@pytest.mark.parametrize("weights", [{"d1": 3, "d2": 1}, {"d1": 0.75, "d2": 0.25}, {"d1": 30.0, "d2": 10.0}])
def test_example_2_weighted_datasets_every_intermediate(weights):
    board = compute_board(example_2(), METRICS_2, principal="f1", dataset_weights=weights, memory_budget_gb=8)
    rows = by_id(board.rows)
    assert board.dataset_weights == pytest.approx({"d1": 0.75, "d2": 0.25}, abs=TOL)
    assert rows["P"].x == pytest.approx({"f1": 0.70, "memory": 2, "ece": 0.06}, abs=TOL)
    assert rows["Q"].x == pytest.approx({"f1": 0.65, "memory": 1, "ece": 0.10}, abs=TOL)
    assert rows["R"].x == pytest.approx({"f1": 0.80, "memory": 4.5, "ece": 0.04}, abs=TOL)
    assert rows["P"].oriented == pytest.approx({"f1": 0.70, "memory": 6, "ece": -0.06}, abs=TOL)
    assert rows["Q"].oriented == pytest.approx({"f1": 0.65, "memory": 7, "ece": -0.10}, abs=TOL)
    assert rows["R"].oriented == pytest.approx({"f1": 0.80, "memory": 3.5, "ece": -0.04}, abs=TOL)
    assert board.amrs == pytest.approx({"f1": 1, "memory": 22.5, "ece": 0.5}, abs=TOL)
    assert board.pairs == 2
    assert [(row.model_id, row.rank) for row in board.rows] == [("R", 1), ("P", 2), ("Q", 3)]
    assert rows["P"].dynascore == pytest.approx(221 / 450, abs=TOL)
    assert rows["Q"].dynascore == pytest.approx(61 / 135, abs=TOL)
    assert rows["R"].dynascore == pytest.approx(737 / 1350, abs=TOL)


def test_equal_dataset_weights_are_the_plain_mean():
    # Without weights, example 2's f1 is the plain mean: P 0.6, Q 0.7, R 0.7 (R and Q tie on d1+d2).
    rows = by_id(compute(example_2(), METRICS_2, principal="f1", memory_budget_gb=8))
    assert rows["P"].x["f1"] == pytest.approx(0.6, abs=TOL)
    assert rows["Q"].x["f1"] == pytest.approx(0.7, abs=TOL)
    assert rows["R"].x["memory"] == pytest.approx(5.0, abs=TOL)


def test_datasets_weighted_zero_or_not_named_are_not_read():
    # d3 carries garbage (a missing metric, a NaN) but is weighted 0, or not named at all: the board is example 2's.
    models = example_2()
    for model in models:
        model.scores["d3"] = {"f1": float("nan")}  # type: ignore[index]
    for weights in ({"d1": 3, "d2": 1, "d3": 0}, {"d1": 3, "d2": 1}):
        board = compute_board(models, METRICS_2, principal="f1", dataset_weights=weights, memory_budget_gb=8)
        assert board.dataset_weights == pytest.approx({"d1": 0.75, "d2": 0.25}, abs=TOL)
        assert by_id(board.rows)["R"].dynascore == pytest.approx(737 / 1350, abs=TOL)


# --------------------------------------------------------------------------- gaps


def test_a_metric_missing_on_one_dataset_is_missing_and_the_model_is_listed_last():
    # D would top every metric, but has no memory figure on d2: memory is missing (not averaged over d1 alone),
    # D gets no Dynascore nor rank, its other figures show, and it does not move the others' AMRS (example 1's).
    models = example_1() + [ModelScores("D", scores(d1=(0.95, 300, 1, 0.01), d2=(0.95, 300, None, 0.01)))]
    board = compute_board(models, METRICS_1, principal="accuracy")
    rows = by_id(board.rows)
    assert [row.model_id for row in board.rows] == ["B", "A", "C", "D"]
    d = rows["D"]
    assert d.dynascore is None and d.rank is None
    assert d.missing == ["memory"]
    assert d.x["memory"] is None and d.oriented["memory"] is None
    assert d.x["accuracy"] == pytest.approx(0.95, abs=TOL)
    assert d.oriented["ece"] == pytest.approx(-0.01, abs=TOL)
    assert board.amrs == pytest.approx({"accuracy": 1, "throughput": 450, "memory": 20, "ece": 0.5}, abs=TOL)
    assert rows["B"].dynascore == pytest.approx(227 / 420, abs=TOL)


def test_a_missing_dataset_or_a_none_value_makes_every_affected_metric_missing():
    models = example_1() + [
        ModelScores("E", scores(d1=(0.9, 10, 1, 0.1))),  # never evaluated on d2
        ModelScores(
            "F",
            {
                "d1": {"accuracy": 0.9, "throughput": None, "memory": 1, "ece": 0.1},
                "d2": {"accuracy": None, "throughput": 5, "memory": 1, "ece": 0.1},
            },
        ),
    ]
    rows = compute(models, METRICS_1, principal="accuracy")
    assert [row.model_id for row in rows] == ["B", "A", "C", "E", "F"]
    assert rows[3].missing == ["accuracy", "throughput", "memory", "ece"]
    assert rows[4].missing == ["accuracy", "throughput"]
    assert rows[4].x["memory"] == 1 and rows[4].oriented["memory"] == 15
    # Gapped rows: by principal x' (highest first, missing last), then model id.
    models.append(ModelScores("G", scores(d1=(0.1, None, 1, 0.1), d2=(0.1, 1, 1, 0.1))))
    assert [row.model_id for row in compute(models, METRICS_1, principal="accuracy")][3:] == ["G", "E", "F"]


def test_a_gap_in_a_metric_weighted_zero_is_shown_but_costs_nothing():
    # Memory weighted 0: D lacks it yet gets a Dynascore. Scored metrics: accuracy 4, throughput 1, ece 1 (sum 6).
    # D's x: acc 0.65, thr 150, ece 0.2. Sorted by acc: C 0.55, D 0.65, A 0.75, B 0.85 (Δp 0.1 each):
    #   AMRS_thr = mean(|150-190|, |110-150|, |60-110|) / 0.1 = mean(400, 400, 500) = 1300/3
    #   AMRS_ece = mean(|-0.2+0.25|, |-0.15+0.2|, |-0.1+0.15|) / 0.1 = 0.5
    #   D: (4*0.65 + 150/(1300/3) - 0.2/0.5) / 6 = (2.6 + 9/26 - 0.4) / 6 = (2.2 + 9/26) / 6 = 331/130 / 6 = 331/780
    models = example_1() + [ModelScores("D", scores(d1=(0.65, 150, None, 0.2), d2=(0.65, 150, None, 0.2)))]
    board = compute_board(models, METRICS_1, principal="accuracy", metric_weights={"memory": 0})
    d = by_id(board.rows)["D"]
    assert d.missing == ["memory"]
    assert "memory" not in board.amrs
    assert board.amrs == pytest.approx({"accuracy": 1, "throughput": 1300 / 3, "ece": 0.5}, abs=TOL)
    assert d.dynascore == pytest.approx(331 / 780, abs=TOL)
    assert d.rank is not None


def test_no_models_and_no_datasets():
    assert compute([], METRICS_1, principal="accuracy") == []
    rows = compute([ModelScores("A", {})], METRICS_1, principal="accuracy")
    assert rows[0].missing == ["accuracy", "throughput", "memory", "ece"] and rows[0].dynascore is None
    # A data set nobody has been evaluated on yet makes every metric missing for everyone.
    rows = compute(example_1(), METRICS_1, principal="accuracy", dataset_weights={"d1": 1, "d2": 1, "new": 1})
    assert all(row.dynascore is None and len(row.missing) == 4 for row in rows)


# --------------------------------------------------------------------------- AMRS edge cases


def test_a_single_model_falls_back_to_amrs_1():
    # A alone: no pair, AMRS = 1 everywhere; Dynascore = (4*0.75 + 110 + 12 - 0.15) / 7 = 124.85 / 7.
    board = compute_board(example_1()[:1], METRICS_1, principal="accuracy")
    assert board.amrs_fallback and board.pairs == 0
    assert board.amrs == {"accuracy": 1.0, "throughput": 1.0, "memory": 1.0, "ece": 1.0}
    assert board.rows[0].dynascore == pytest.approx(124.85 / 7, abs=TOL)
    assert board.rows[0].rank == 1


def test_no_pair_above_the_threshold_falls_back_to_amrs_1():
    # A and A2 tie on accuracy (0.75): Δp = 0 is not above 1e-4 * 0.75. A2: thr 50, mem' 16-8 = 8, ece' -0.1.
    #   A : (3 + 110 + 12 - 0.15) / 7 = 124.85 / 7;  A2: (3 + 50 + 8 - 0.1) / 7 = 60.9 / 7
    models = [example_1()[0], ModelScores("A2", scores(d1=(0.75, 50, 8, 0.1), d2=(0.75, 50, 8, 0.1)))]
    board = compute_board(models, METRICS_1, principal="accuracy")
    assert board.amrs_fallback and board.pairs == 0
    assert [(r.model_id, r.dynascore) for r in board.rows] == [
        ("A", pytest.approx(124.85 / 7, abs=TOL)),
        ("A2", pytest.approx(60.9 / 7, abs=TOL)),
    ]


def test_pairs_within_the_threshold_are_skipped():
    # Three models on accuracy 0.5, 0.50001, 0.9 (threshold 1e-4 * 0.9 = 9e-5): the first step (1e-5) is skipped,
    # only (0.50001, 0.9) counts: Δp = 0.39999, AMRS_thr = |10 - 30| / 0.39999 (the near-tie's 1000 never enters).
    metrics = [MetricSpec("accuracy"), MetricSpec("throughput")]
    models = [
        ModelScores("a", {"d": {"accuracy": 0.5, "throughput": 1000}}),
        ModelScores("b", {"d": {"accuracy": 0.50001, "throughput": 30}}),
        ModelScores("c", {"d": {"accuracy": 0.9, "throughput": 10}}),
    ]
    board = compute_board(models, metrics, principal="accuracy")
    assert board.pairs == 1
    assert board.amrs["throughput"] == pytest.approx(20 / 0.39999, rel=1e-12)


def test_a_constant_metric_has_amrs_0_and_contributes_nothing():
    # Every model reports 4 GB: AMRS_mem = 0, so the memory term is 0 (not a division by zero).
    # With memory 4 everywhere, Dynascore = (4*acc + thr/450 + ece'/0.5) / 7 with example 1's other figures:
    #   A: (3 + 11/45 - 0.3) / 7 = (2.7 + 11/45) / 7 = 265/90 / 7 = 53/126
    models = example_1()
    for model in models:
        for values in model.scores.values():
            values["memory"] = 4  # type: ignore[index]
    board = compute_board(models, METRICS_1, principal="accuracy")
    assert board.amrs["memory"] == 0.0
    assert by_id(board.rows)["A"].dynascore == pytest.approx(53 / 126, abs=TOL)
    assert by_id(board.rows)["A"].oriented["memory"] == 12


def test_an_error_like_principal_metric_uses_the_absolute_threshold():
    # Principal "error" (lower): x' = -0.2, -0.3, -0.3. max x' = -0.2 would give a negative threshold and let the
    # tie (Δp = 0) in; with max |x'| the threshold is 3e-5 and only the pair (-0.3 -> -0.2) counts.
    # Ties on the principal metric are ordered by id: sorted e1 (-0.3), e2 (-0.3), e0 (-0.2); the pair is (e2, e0):
    #   AMRS_thr = |5 - 7| / 0.1 = 20. Dynascore = (4*x'_err + thr/20) / 5:
    #   e0: (-0.8 + 0.25) / 5 = -0.11; e1: (-1.2 + 0.45) / 5 = -0.15; e2: (-1.2 + 0.35) / 5 = -0.17
    metrics = [MetricSpec("error", "lower"), MetricSpec("throughput")]
    models = [
        ModelScores("e0", {"d": {"error": 0.2, "throughput": 5}}),
        ModelScores("e1", {"d": {"error": 0.3, "throughput": 9}}),
        ModelScores("e2", {"d": {"error": 0.3, "throughput": 7}}),
    ]
    board = compute_board(models, metrics, principal="error")
    assert board.pairs == 1
    assert board.amrs == pytest.approx({"error": 1, "throughput": 20}, abs=TOL)
    assert [(r.model_id, r.dynascore) for r in board.rows] == [
        ("e0", pytest.approx(-0.11, abs=TOL)),
        ("e1", pytest.approx(-0.15, abs=TOL)),
        ("e2", pytest.approx(-0.17, abs=TOL)),
    ]


def test_equal_dynascores_share_a_rank():
    twin = ModelScores("A-twin", example_1()[0].scores)
    rows = compute(example_1() + [twin], METRICS_1, principal="accuracy")
    assert [(r.model_id, r.rank) for r in rows] == [("B", 1), ("A", 2), ("A-twin", 2), ("C", 4)]


def test_principal_weight_zero_still_sets_the_yardstick():
    # Accuracy weighted 0: AMRS still measured against it (example 1's), Dynascore = (thr/450 + mem'/20 + ece'/0.5)/3
    #   A: (11/45 + 0.6 - 0.3) / 3 = (0.3 + 11/45) / 3 = 49/90 / 3 = 49/270
    board = compute_board(example_1(), METRICS_1, principal="accuracy", metric_weights={"accuracy": 0})
    assert board.amrs["accuracy"] == 1.0 and board.amrs["throughput"] == pytest.approx(450, abs=TOL)
    assert by_id(board.rows)["A"].dynascore == pytest.approx(49 / 270, abs=TOL)


# --------------------------------------------------------------------------- bad input


def field_errors(excinfo: pytest.ExceptionInfo[InvalidInput]) -> set[tuple[str, str]]:
    return {(e.field, e.rule) for e in excinfo.value.field_errors}


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ({"memory": -1}, {("metric_weights.memory", "negative")}),
        ({"speed": 2}, {("metric_weights.speed", "unknown_metric")}),
        ({"ece": float("nan")}, {("metric_weights.ece", "not_a_number")}),
        ({"ece": float("inf")}, {("metric_weights.ece", "not_a_number")}),
        ({"ece": True}, {("metric_weights.ece", "not_a_number")}),
        ({"accuracy": 0, "throughput": 0, "memory": 0, "ece": 0}, {("metric_weights", "all_zero")}),
        (
            {"memory": -1, "speed": 2},
            {("metric_weights.memory", "negative"), ("metric_weights.speed", "unknown_metric")},
        ),
    ],
)
def test_bad_metric_weights_are_named(weights, expected):
    with pytest.raises(InvalidInput) as excinfo:
        compute(example_1(), METRICS_1, principal="accuracy", metric_weights=weights)
    assert field_errors(excinfo) == expected


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ({"d1": -0.5, "d2": 1}, {("dataset_weights.d1", "negative")}),
        ({"d1": 0, "d2": 0}, {("dataset_weights", "all_zero")}),
        ({}, {("dataset_weights", "empty")}),
        ({"d1": "1"}, {("dataset_weights.d1", "not_a_number")}),
    ],
)
def test_bad_dataset_weights_are_named(weights, expected):
    with pytest.raises(InvalidInput) as excinfo:
        compute(example_1(), METRICS_1, principal="accuracy", dataset_weights=weights)
    assert field_errors(excinfo) == expected


def test_bad_metrics_models_scores_and_budget_are_named():
    with pytest.raises(InvalidInput) as excinfo:
        compute(example_1(), METRICS_1, principal="bleu")
    assert field_errors(excinfo) == {("principal", "unknown_metric")}

    metrics = [
        MetricSpec("accuracy"),
        MetricSpec("accuracy"),
        MetricSpec("x", "sideways"),  # type: ignore[arg-type]
        MetricSpec("y", default_weight=-2),
    ]
    with pytest.raises(InvalidInput) as excinfo:
        compute(example_1(), metrics, principal="accuracy")
    assert field_errors(excinfo) == {
        ("metrics[1].name", "duplicate"),
        ("metrics[2].direction", "unknown_direction"),
        ("metrics[3].default_weight", "negative"),
    }

    with pytest.raises(InvalidInput) as excinfo:
        compute(example_1() + [ModelScores("A", {})], METRICS_1, principal="accuracy", memory_budget_gb=0)
    assert field_errors(excinfo) == {("models[3].model_id", "duplicate"), ("memory_budget_gb", "not_positive")}

    models = example_1()
    models[1].scores["d2"]["ece"] = float("nan")  # type: ignore[index]
    with pytest.raises(InvalidInput) as excinfo:
        compute(models, METRICS_1, principal="accuracy")
    assert field_errors(excinfo) == {("models[1].scores.d2.ece", "not_finite")}
    assert "models[1].scores.d2.ece" in excinfo.value.message

    with pytest.raises(InvalidInput) as excinfo:
        compute(example_1(), [], principal="accuracy")
    assert field_errors(excinfo) == {("metrics", "empty")}


# --------------------------------------------------------------------------- properties


def random_board(seed: int, n_models: int = 12, n_datasets: int = 3) -> list[ModelScores]:
    rng = random.Random(seed)
    return [
        ModelScores(
            f"m{i:02d}",
            {
                f"d{d}": {
                    "accuracy": rng.uniform(0.4, 0.95),
                    "throughput": rng.uniform(5, 500),
                    "memory": rng.uniform(0.5, 12),
                    "ece": rng.uniform(0.01, 0.3),
                }
                for d in range(n_datasets)
            },
        )
        for i in range(n_models)
    ]


def scaled(models: list[ModelScores], metric: str, factor: float) -> list[ModelScores]:
    return [
        ModelScores(
            m.model_id,
            {d: {k: (v * factor if k == metric else v) for k, v in values.items()} for d, values in m.scores.items()},
        )
        for m in models
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_scaling_a_non_principal_metric_leaves_the_dynascore_unchanged(seed):
    models = random_board(seed)
    base = by_id(compute(models, METRICS_1, principal="accuracy", memory_budget_gb=16))
    for metric, factor, budget in (("throughput", 1000.0, 16), ("ece", 0.01, 16), ("memory", 1024.0, 16 * 1024)):
        # Memory in MB instead of GB: the budget is in the same unit.
        other = by_id(compute(scaled(models, metric, factor), METRICS_1, principal="accuracy", memory_budget_gb=budget))
        for model_id, row in base.items():
            assert other[model_id].dynascore == pytest.approx(row.dynascore, rel=1e-12, abs=1e-12)
            assert other[model_id].rank == row.rank


def test_scaling_the_principal_metric_scales_every_dynascore_alike():
    # x'_p * c makes every AMRS_m (m != p) / c, so each term, hence the Dynascore, is multiplied by c.
    models = random_board(4)
    base = by_id(compute(models, METRICS_1, principal="accuracy"))
    other = by_id(compute(scaled(models, "accuracy", 100.0), METRICS_1, principal="accuracy"))
    for model_id, row in base.items():
        assert other[model_id].dynascore == pytest.approx(100.0 * row.dynascore, rel=1e-12)
        assert other[model_id].rank == row.rank


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_permuting_the_models_leaves_the_results_unchanged(seed):
    models = random_board(seed)
    # Add ties on the principal metric and a model with a gap: the order must not matter for them either.
    models.append(ModelScores("tie", {d: dict(v, throughput=v["throughput"] + 1) for d, v in models[0].scores.items()}))
    models.append(ModelScores("gap", {"d0": models[1].scores["d0"]}))
    board = compute_board(models, METRICS_1, principal="accuracy")
    rng = random.Random(seed)
    for _ in range(5):
        shuffled = models[:]
        rng.shuffle(shuffled)
        other = compute_board(shuffled, METRICS_1, principal="accuracy")
        assert other.rows == board.rows
        assert other.amrs == board.amrs
    assert board.rows[-1].model_id == "gap"


def test_rounding_noise_in_a_constant_metric_counts_as_no_change():
    # Fairness is 0.15 for every model, but as weighted means of different figures: (0.05 + 0.25) / 2 = 0.15 and
    # (0.1 + 0.2) / 2 = 0.15000000000000002. The 3e-17 difference is noise: AMRS_fairness = 0, its term 0, and the
    # board is example 1's with a fifth metric of weight 1 (sum of weights 8): B: (4*0.85 + ... ) = 227/60 / 8.
    metrics = [*METRICS_1, MetricSpec("fairness")]
    models = example_1()
    for model, (f1, f2) in zip(models, [(0.05, 0.25), (0.1, 0.2), (0.05, 0.25)], strict=False):
        model.scores["d1"]["fairness"] = f1  # type: ignore[index]
        model.scores["d2"]["fairness"] = f2  # type: ignore[index]
    assert 0.5 * 0.05 + 0.5 * 0.25 != 0.5 * 0.1 + 0.5 * 0.2  # the noise is real
    board = compute_board(models, metrics, principal="accuracy")
    assert board.amrs["fairness"] == 0.0
    assert by_id(board.rows)["B"].dynascore == pytest.approx(227 / 60 / 8, abs=TOL)
    assert [row.model_id for row in board.rows] == ["B", "A", "C"]


def test_a_metric_weighted_zero_keeps_the_exchange_rate_it_has_when_weighted():
    """``rates`` holds every axis's AMRS: at weight 0 the same figure as when the axis is weighted (the complete
    models are the same here), so a client raising a weight from 0 knows the rate it will be converted with."""
    weighted = compute_board(example_1(), METRICS_1, principal="accuracy", memory_budget_gb=16)
    unweighted = compute_board(
        example_1(), METRICS_1, principal="accuracy", memory_budget_gb=16, metric_weights={"throughput": 0}
    )
    assert "throughput" not in unweighted.amrs
    assert unweighted.rates["throughput"] == pytest.approx(weighted.amrs["throughput"])
    assert {k: v for k, v in unweighted.rates.items() if k != "throughput"} == pytest.approx(unweighted.amrs)


def test_a_metric_no_complete_model_has_has_no_rate():
    models = [ModelScores(m.model_id, {d: {**v, "memory": None} for d, v in m.scores.items()}) for m in example_1()]
    board = compute_board(models, METRICS_1, principal="accuracy", metric_weights={"memory": 0})
    assert board.rates["memory"] is None and "memory" not in board.amrs
