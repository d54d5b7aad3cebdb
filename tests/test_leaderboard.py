"""The leaderboard over stored evaluation results: Dynascore with chosen weights, gaps, forks, snapshots, CSV.

Evaluation results are written straight into the evaluations table here (as the evaluation jobs store them), so
that the board's arithmetic can be checked against values worked out by hand.
"""

from __future__ import annotations

import csv
import io

import pytest
from support import by_name, gid, make_user, register_user

from dynaforge.db.models import Dataset, DatasetAccess, Evaluation, EvaluationStatus, ModelRow
from dynaforge.errors import AlreadyExists, InvalidInput, NotFound
from dynaforge.services import leaderboard, tasks
from dynaforge.services.actor import Actor

# Three models on one scoring set; the toy task's metrics are accuracy (principal) and macro_f1.
# (accuracy, macro_f1, throughput examples/s, memory MB, robustness, fairness)
RESULTS = {
    "alpha": (0.90, 0.80, 100.0, 2048.0, 0.90, 0.95),
    "beta": (0.80, 0.78, 300.0, 1024.0, 0.85, 0.90),
    "gamma": (0.70, 0.60, 200.0, 512.0, 0.80, 0.85),
}


@pytest.fixture
async def board(platform):
    builder = await make_user(platform, "builder2")
    view = await tasks.get_task(platform, Actor.anonymous(), "toy")
    ids = {}
    async with platform.db.write() as s:
        test_set = Dataset(task_id=view.row.id, name="r1-test", access=DatasetAccess.SCORING, source="round", size=10)
        copy = Dataset(
            task_id=view.row.id, name="r1-test~typo", access=DatasetAccess.SCORING, source="perturbed", size=10
        )
        s.add_all([test_set, copy])
        await s.flush()
        copy.parent_id = test_set.id
        for name, (acc, f1, thr, mem, rob, fair) in RESULTS.items():
            model = ModelRow(
                task_id=view.row.id,
                user_id=builder.user_id,
                name=name,
                backend="python",
                config={"callable": "x:y"},
                published=True,
                anonymous=name == "gamma",
            )
            s.add(model)
            await s.flush()
            ids[name] = model.id
            s.add(
                Evaluation(
                    model_id=model.id,
                    dataset_id=test_set.id,
                    status=EvaluationStatus.DONE,
                    metrics={"accuracy": acc, "macro_f1": f1, "robustness": rob, "fairness": fair},
                    details={"intervals": {"accuracy": [acc - 0.05, acc + 0.04]}},
                    throughput=thr,
                    memory_mb=mem,
                )
            )
        hidden = ModelRow(task_id=view.row.id, user_id=builder.user_id, name="private", backend="python", config={})
        gap = ModelRow(
            task_id=view.row.id, user_id=builder.user_id, name="delta", backend="python", config={}, published=True
        )
        s.add_all([hidden, gap])
        await s.flush()
        ids["delta"] = gap.id
        s.add(Evaluation(model_id=gap.id, dataset_id=test_set.id, status=EvaluationStatus.RUNNING, progress=0.5))
    return {"ids": ids, "builder": builder}


def _by_hand(weights: dict[str, float]) -> dict[str, float]:
    """The Dynascore of each model worked out step by step (one data set, so x = the stored value).

    Oriented: memory in GB becomes 16 - GB. Sorted by accuracy: gamma 0.7, beta 0.8, alpha 0.9; the pairs
    (gamma, beta) and (beta, alpha) both step 0.1 on accuracy. AMRS_m = mean |Δm| / 0.1:
      macro_f1: |0.78-0.60| = 0.18, |0.80-0.78| = 0.02 -> (1.8 + 0.2) / 2 = 1.0
      throughput: 100, 200 -> (1000 + 2000) / 2 = 1500
      memory (16 - GB: gamma 15.5, beta 15, alpha 14): (0.5/0.1 + 1/0.1) / 2 = 7.5
      robustness: 0.05, 0.05 -> 0.5; fairness: the same, 0.5
    """
    total = sum(weights.values())
    amrs = {"accuracy": 1.0, "macro_f1": 1.0, "throughput": 1500.0, "memory": 7.5, "robustness": 0.5, "fairness": 0.5}
    scores = {}
    for name, (acc, f1, thr, mem, rob, fair) in RESULTS.items():
        oriented = {
            "accuracy": acc,
            "macro_f1": f1,
            "throughput": thr,
            "memory": 16 - mem / 1024,
            "robustness": rob,
            "fairness": fair,
        }
        scores[name] = sum(weights[m] / total * oriented[m] / amrs[m] for m in weights)
    return scores


async def test_board_matches_the_hand_worked_dynascore(platform, board):
    result = await leaderboard.compute(platform, Actor.anonymous(), "toy")
    weights = {"accuracy": 4, "macro_f1": 1, "throughput": 1, "memory": 1, "robustness": 1, "fairness": 1}
    expected = _by_hand(weights)
    complete = [r for r in result.rows if r.rank is not None]
    assert [r.model_name for r in complete] == sorted(expected, key=expected.get, reverse=True)
    for row in complete:
        assert row.dynascore == pytest.approx(expected[row.model_name], abs=1e-9)
    assert result.datasets == ["r1-test"]  # the perturbed copy feeds robustness, it is not a column
    # the unpublished model is not on the board; the one still running is shown with every gap marked
    last = result.rows[-1]
    assert last.model_name == "delta" and last.rank is None and last.dynascore is None
    assert set(last.missing) == set(weights)
    assert "private" not in {r.model_name for r in result.rows}
    alpha = next(r for r in result.rows if r.model_name == "alpha")
    accuracy = next(m for m in alpha.metrics if m.name == "accuracy")
    assert accuracy.interval == pytest.approx((0.85, 0.94)) and accuracy.weight == pytest.approx(4 / 9)
    gamma = next(r for r in result.rows if r.model_name == "gamma")
    assert gamma.submitter is None and alpha.submitter == "builder2"


async def test_weights_change_the_ranking_and_are_checked(platform, board):
    fast = {"accuracy": 1, "macro_f1": 0, "throughput": 10, "memory": 0, "robustness": 0, "fairness": 0}
    result = await leaderboard.compute(platform, Actor.anonymous(), "toy", metric_weights=fast)
    expected = _by_hand({k: v for k, v in fast.items() if v})
    ranked = [r.model_name for r in result.rows if r.rank is not None]
    assert ranked == sorted(expected, key=expected.get, reverse=True) and ranked[0] == "beta"
    by_throughput = await leaderboard.compute(platform, Actor.anonymous(), "toy", sort="throughput")
    assert [r.model_name for r in by_throughput.rows] == ["beta", "gamma", "alpha", "delta"]
    with pytest.raises(InvalidInput, match="sort"):
        await leaderboard.compute(platform, Actor.anonymous(), "toy", sort="colour")
    with pytest.raises(InvalidInput, match="given twice"):
        await leaderboard.compute(platform, Actor.anonymous(), "toy", metric_weights=[("accuracy", 1), ("accuracy", 2)])
    with pytest.raises(InvalidInput, match="datasetWeights.r9"):
        await leaderboard.compute(platform, Actor.anonymous(), "toy", dataset_weights={"r9": 1})
    with pytest.raises(InvalidInput):
        await leaderboard.compute(platform, Actor.anonymous(), "toy", metric_weights={"accuracy": -1})


async def test_forks_snapshots_and_csv(platform, board):
    builder = board["builder"]
    fork = await leaderboard.save_fork(
        platform, builder, "toy", "speed first", metric_weights={"accuracy": 1, "throughput": 10}, dataset_weights=None
    )
    with pytest.raises(AlreadyExists):
        await leaderboard.save_fork(platform, builder, "toy", "speed first", metric_weights=None, dataset_weights=None)
    forked = await leaderboard.compute(platform, Actor.anonymous(), "toy", fork_id=fork.id)
    assert forked.rows[0].model_name == "beta"
    with pytest.raises(NotFound):
        await leaderboard.compute(platform, Actor.anonymous(), "toy", fork_id=fork.id + 100)

    frozen = await leaderboard.snapshot(
        platform, builder, "toy", "before the new round", metric_weights=None, dataset_weights=None
    )
    assert [r["model"] for r in frozen.rows][:3] == [
        r.model_name for r in (await leaderboard.compute(platform, Actor.anonymous(), "toy")).rows
    ][:3]
    assert (await leaderboard.get_snapshot(platform, Actor.anonymous(), frozen.id)).rows == frozen.rows

    text = leaderboard.to_csv(await leaderboard.compute(platform, Actor.anonymous(), "toy"))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["model"] for r in rows] == [
        r.model_name for r in (await leaderboard.compute(platform, Actor.anonymous(), "toy")).rows
    ]
    assert rows[-1]["dynascore"] == "" and "accuracy" in rows[-1]["missing"]
    assert float(rows[0]["accuracy"]) in {0.9, 0.8, 0.7}


async def test_csv_cells_never_run_as_spreadsheet_formulas(platform, board):
    from sqlalchemy import update

    from dynaforge.db.models import ModelRow

    async with platform.db.write() as s:
        await s.execute(update(ModelRow).where(ModelRow.name == "beta").values(name='=HYPERLINK("http://x","go")'))
    platform.caches.boards.clear()
    text = leaderboard.to_csv(await leaderboard.compute(platform, Actor.anonymous(), "toy"))
    names = [r["model"] for r in csv.DictReader(io.StringIO(text))]
    assert '\'=HYPERLINK("http://x","go")' in names and not any(n.startswith("=") for n in names)


async def test_forks_and_snapshots_per_user_are_bounded(platform, board, monkeypatch):
    monkeypatch.setattr(leaderboard, "MAX_FORKS_PER_USER", 2)
    monkeypatch.setattr(leaderboard, "MAX_SNAPSHOTS_PER_USER", 1)
    builder = board["builder"]
    for name in ("a", "b"):
        await leaderboard.save_fork(platform, builder, "toy", name, metric_weights=None, dataset_weights=None)
    with pytest.raises(InvalidInput, match="delete one"):
        await leaderboard.save_fork(platform, builder, "toy", "c", metric_weights=None, dataset_weights=None)
    await leaderboard.snapshot(platform, builder, "toy", "one", metric_weights=None, dataset_weights=None)
    with pytest.raises(InvalidInput, match="delete one"):
        await leaderboard.snapshot(platform, builder, "toy", "two", metric_weights=None, dataset_weights=None)


BOARD = """query($w: [WeightInput!]) { leaderboard(taskCode: "toy", metricWeights: $w) {
  rows { model { modelId name } dynascore metrics { name value } } csv } }"""

SORTED = """query($s: LeaderboardSort! = DYNASCORE, $m: String) {
  leaderboard(taskCode: "toy", sort: $s, sortMetric: $m) { rows { model { name } dynascore } } }"""


async def test_graphql_contract(gql, platform, board):
    data = await gql(BOARD, {"w": [{"name": "accuracy", "weight": 4}, {"name": "throughput", "weight": 1}]}, token=None)
    rows = data["leaderboard"]["rows"]
    assert {r["model"]["name"] for r in rows} == {"alpha", "beta", "gamma", "delta"}
    assert rows[-1]["dynascore"] is None
    assert all({m["name"] for m in r["metrics"]} >= {"accuracy", "throughput", "memory"} for r in rows)
    assert data["leaderboard"]["csv"].startswith("rank,model_id,model,submitter,dynascore")
    bad = await gql(BOARD, {"w": [{"name": "accuracy", "weight": -1}]}, token=None, expect_errors=True)
    assert bad["errors"][0]["extensions"]["code"] == "INVALID_INPUT"
    by_metric = await gql(SORTED, {"s": "METRIC", "m": "throughput"}, token=None)
    assert [r["model"]["name"] for r in by_metric["leaderboard"]["rows"]] == ["beta", "gamma", "alpha", "delta"]
    for variables in ({"s": "DYNASCORE"}, {}):  # also the default
        scores = [r["dynascore"] for r in (await gql(SORTED, variables, token=None))["leaderboard"]["rows"]]
        assert scores[:3] == sorted(scores[:3], reverse=True) and scores[3] is None, variables
    for variables, rule in (
        ({"s": "METRIC", "m": "colour"}, "choice"),
        ({"s": "METRIC"}, "required"),
        ({"s": "DYNASCORE", "m": "accuracy"}, "unused"),
    ):
        refused = (await gql(SORTED, variables, token=None, expect_errors=True))["errors"][0]["extensions"]
        assert refused["code"] == "INVALID_INPUT", variables
        assert [(e["field"], e["rule"]) for e in refused["fieldErrors"]] == [(["sortMetric"], rule)], variables

    token, _ = await register_user(gql, "forker")
    saved = await gql(
        """mutation { saveLeaderboardFork(input: {taskCode: "toy", name: "mine",
      metricWeights: [{name: "accuracy", weight: 1}]}) { __typename ... on LeaderboardForkSaved { fork { id } } } }""",
        token=token,
    )
    fork_id = saved["saveLeaderboardFork"]["fork"]["id"]
    forked = await gql(
        'query($f: ID!) { leaderboard(taskCode: "toy", forkId: $f) { metricWeights { name weight } } }',
        {"f": fork_id},
        token=None,
    )
    # a weight given replaces that metric's default; the others keep theirs (1 each): 1 / (1 + 5)
    assert {w["name"]: w["weight"] for w in forked["leaderboard"]["metricWeights"]}["accuracy"] == pytest.approx(1 / 6)
    anonymous = await gql(
        """mutation { snapshotLeaderboard(input: {taskCode: "toy", name: "x"}) { __typename } }""", token=None
    )
    assert anonymous["snapshotLeaderboard"]["__typename"] == "NotAuthenticated"


METRIC_FIELDS = "metrics { name value weight interval { low high } }"
LIVE = (
    'query($w: [WeightInput!]) { leaderboard(taskCode: "toy", metricWeights: $w) { metricWeights { name weight } '
    "datasetWeights { name weight } rows { model { modelId name submitter { username } } rank dynascore missing "
    + METRIC_FIELDS
    + " } } }"
)
SNAPSHOT = """mutation($input: SnapshotLeaderboardInput!) { snapshotLeaderboard(input: $input) {
  __typename ... on LeaderboardSnapshotted { snapshot { id } } } }"""
READ_SNAPSHOT = (
    "query($id: ID!) { leaderboardSnapshot(id: $id) { name metricWeights { name weight } datasetWeights { name weight "
    "} rows { model { id } modelName submitter rank dynascore missing " + METRIC_FIELDS + " } } }"
)
FORK = """mutation($input: SaveLeaderboardForkInput!) { saveLeaderboardFork(input: $input) {
  __typename ... on LeaderboardForkSaved { fork { name metricWeights { name weight } datasetWeights { name weight } } }
} }"""


async def test_snapshots_and_forks_read_back_as_typed_rows_and_weights(gql, platform, board):
    """A snapshot's rows are the board's rows as computed then (model, name, submitter, rank, Dynascore, gaps, each
    metric's value, weight and interval); its weights and a fork's are lists of {name weight}."""
    gql.token, _ = await register_user(gql, "freezer")
    weights = [{"name": "accuracy", "weight": 2}, {"name": "throughput", "weight": 1}]
    live = (await gql(LIVE, {"w": weights}))["leaderboard"]
    made = await gql(SNAPSHOT, {"input": {"taskCode": "toy", "name": "frozen", "metricWeights": weights}})
    snapshot_id = made["snapshotLeaderboard"]["snapshot"]["id"]
    frozen = (await gql(READ_SNAPSHOT, {"id": snapshot_id}))["leaderboardSnapshot"]
    assert frozen["name"] == "frozen"
    for axis in ("metricWeights", "datasetWeights"):  # stored as JSON objects: the order may change
        assert by_name(frozen[axis], "weight") == by_name(live[axis], "weight"), axis
    assert by_name(frozen["metricWeights"], "weight")["accuracy"] == pytest.approx(2 / 7)  # 2, 1 and 4 defaults of 1
    assert frozen["rows"] == [
        {
            "model": {"id": row["model"]["modelId"]},
            "modelName": row["model"]["name"],
            "submitter": row["model"]["submitter"] and row["model"]["submitter"]["username"],
            "rank": row["rank"],
            "dynascore": row["dynascore"],
            "missing": row["missing"],
            "metrics": row["metrics"],
        }
        for row in live["rows"]
    ]
    alpha = next(r for r in frozen["rows"] if r["modelName"] == "alpha")
    assert alpha["submitter"] == "builder2" and alpha["model"] == {"id": gid("Model", board["ids"]["alpha"])}
    assert next(r for r in frozen["rows"] if r["modelName"] == "gamma")["submitter"] is None  # anonymous
    accuracy = next(m for m in alpha["metrics"] if m["name"] == "accuracy")
    assert accuracy["value"] == pytest.approx(0.90)
    assert (accuracy["interval"]["low"], accuracy["interval"]["high"]) == pytest.approx((0.85, 0.94))
    assert next(m for m in alpha["metrics"] if m["name"] == "throughput")["interval"] is None

    fork = await gql(
        FORK,
        {
            "input": {
                "taskCode": "toy",
                "name": "speed",
                "metricWeights": [{"name": "throughput", "weight": 10}],
                "datasetWeights": [{"name": "r1-test", "weight": 1}],
            }
        },
    )
    saved = fork["saveLeaderboardFork"]["fork"]
    assert saved["name"] == "speed"
    assert saved["metricWeights"] == [{"name": "throughput", "weight": 10.0}]
    assert saved["datasetWeights"] == [{"name": "r1-test", "weight": 1.0}]


AXES = """query($w: [WeightInput!]) { leaderboard(taskCode: "toy", metricWeights: $w) {
  memoryBudgetGb datasets metrics { name direction unit weight defaultWeight exchangeRate }
  rows { dynascore metrics { name value } datasets { dataset values { name value } } } } }"""


def _oriented(value: float, direction: str, budget: float) -> float:
    return {"HIGHER": value, "LOWER": -value, "MEMORY": budget - value}[direction]


WEIGHTS = [{"name": "accuracy", "weight": 2}, {"name": "memory", "weight": 3}, {"name": "macro_f1", "weight": 0}]


@pytest.mark.parametrize("weights", [None, WEIGHTS])
async def test_a_client_recomputes_each_dynascore_from_the_axes(gql, platform, board, weights):
    """What the board publishes per axis (direction, weight, exchange rate, the memory budget) and per row (each
    metric's value) is enough to recompute every Dynascore, as sliders on a client do."""
    data = (await gql(AXES, {"w": weights}))["leaderboard"]
    axes = {a["name"]: a for a in data["metrics"]}
    assert axes["memory"]["direction"] == "MEMORY" and axes["memory"]["unit"] == "GiB"
    assert axes["throughput"]["unit"] == "examples/s" and axes["accuracy"]["unit"] is None
    assert sum(a["weight"] for a in axes.values()) == pytest.approx(1.0)
    # the defaults (4 for the principal metric, 1 for each other axis), whatever weights were asked for
    assert axes["accuracy"]["defaultWeight"] == pytest.approx(4 / 9)
    assert all(a["defaultWeight"] == pytest.approx(1 / 9) for n, a in axes.items() if n != "accuracy")
    if weights is not None:  # an unscored axis still has its rate (macro_f1's, worked out by hand: 1.0)
        assert axes["macro_f1"]["weight"] == 0 and axes["macro_f1"]["exchangeRate"] == pytest.approx(1.0)
    scored = [a for a in axes.values() if a["weight"] > 0]
    for row in [r for r in data["rows"] if r["dynascore"] is not None]:
        values = {m["name"]: m["value"] for m in row["metrics"]}
        # per scoring set, every axis (one set here: the row's own values)
        assert [d["dataset"] for d in row["datasets"]] == data["datasets"] == ["r1-test"]
        assert {v["name"]: v["value"] for v in row["datasets"][0]["values"]} == pytest.approx(values)
        again = sum(
            a["weight"] * _oriented(values[a["name"]], a["direction"], data["memoryBudgetGb"]) / a["exchangeRate"]
            for a in scored
        )
        assert again == pytest.approx(row["dynascore"], rel=1e-9)


FORKS = (
    'query { myLeaderboardForks(taskCode: "toy") { nodes { id name } } '
    'myLeaderboardSnapshots(taskCode: "toy") { nodes { id name } } }'
)
DELETE_FORK = """mutation($id: ID!) { deleteLeaderboardFork(input: {id: $id}) {
  __typename ... on LeaderboardItemDeleted { id } ... on Error { message } } }"""
DELETE_SNAPSHOT = """mutation($id: ID!) { deleteLeaderboardSnapshot(input: {id: $id}) {
  __typename ... on LeaderboardItemDeleted { id } ... on Error { message } } }"""


async def test_forks_and_snapshots_are_listed_and_deleted_by_their_author(gql, platform, board):
    builder = board["builder"]
    first = await leaderboard.save_fork(platform, builder, "toy", "a", metric_weights=None, dataset_weights=None)
    second = await leaderboard.save_fork(platform, builder, "toy", "b", metric_weights=None, dataset_weights=None)
    frozen = await leaderboard.snapshot(platform, builder, "toy", "then", metric_weights=None, dataset_weights=None)
    assert [f.name for f in (await leaderboard.my_forks(platform, builder, "toy")).window.rows] == ["b", "a"]
    assert [s.name for s in (await leaderboard.my_snapshots(platform, builder, "toy")).window.rows] == ["then"]

    gql.token, _ = await register_user(gql, "onlooker")
    empty = {"nodes": []}
    assert (await gql(FORKS)) == {"myLeaderboardForks": empty, "myLeaderboardSnapshots": empty}  # theirs only
    refused = (await gql(DELETE_FORK, {"id": gid("LeaderboardFork", first.id)}))["deleteLeaderboardFork"]
    assert refused["__typename"] == "Forbidden"  # shared by id: they know it exists, and are told who may delete it
    assert (await gql(DELETE_SNAPSHOT, {"id": gid("LeaderboardSnapshot", frozen.id)}))["deleteLeaderboardSnapshot"][
        "__typename"
    ] == "Forbidden"

    await leaderboard.delete_fork(platform, builder, first.id)
    assert [f.id for f in (await leaderboard.my_forks(platform, builder, "toy")).window.rows] == [second.id]
    with pytest.raises(NotFound):
        await leaderboard.compute(platform, Actor.anonymous(), "toy", fork_id=first.id)
    await leaderboard.delete_snapshot(platform, builder, frozen.id)
    with pytest.raises(NotFound):
        await leaderboard.get_snapshot(platform, builder, frozen.id)
    with pytest.raises(NotFound):
        await leaderboard.delete_snapshot(platform, builder, frozen.id)
