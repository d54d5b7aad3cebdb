"""The data-selection task on a real ``dynaforge serve``, as a community runs it once the package is installed beside
the server: annotators write headlines against the task's target and the owner validates them, the owner imports
the package's pool as a STANDARD data set and its test set as a SCORING one, two
participants read the pool over GraphQL and each submits a selection (one careful, one careless), the platform
trains the task's fixed recipe on each inside its evaluation and scores it on the test set, and the leaderboard
ranks the selections. Submissions the task cannot take are refused with the field and rule they break. On SQLite,
and on PostgreSQL where one is running (with ``CI=true`` a missing PostgreSQL fails the test instead of skipping it).

Everything here goes through the server's public surface: the ``dynaforge`` command and GraphQL over HTTP."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dynaforge.testing import LiveServer, live_server

from dynaforge_data_selection import data, selection

BIN = Path(sys.executable).parent
CODE = "data-selection"


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request, tmp_path) -> Iterator[LiveServer]:
    # this package alone, whatever else is installed
    with live_server(tmp_path, request.param, load_plugins="data-selection") as srv:
        srv.user("owner", admin=True)
        srv.user("careful")
        srv.user("careless")
        srv.start()
        yield srv


SUBMIT_SELECTION = (
    "mutation($input: SubmitSelectionInput!) { submitSelection(input: $input) { __typename "
    "... on ModelSubmitted { model { id } } ... on InvalidInput { message fieldErrors { field rule message } } "
    "... on Error { message } } }"
)
SUBMIT_MODEL = (
    "mutation($input: SubmitModelInput!) { submitModel(input: $input) { __typename "
    "... on ModelSubmitted { model { id } } ... on InvalidInput { message fieldErrors { field rule message } } "
    "... on Error { message } } }"
)
EVALUATIONS = (
    "query($id: ID!) { model(id: $id) { name status evaluations(first: 20) { nodes { status error "
    "dataset { name } metrics { name value } } } } }"
)
ITEMS = "query($id: ID!) { datasetItems(id: $id, first: 500) { nodes { id position fields } } }"


def _wait_evaluated(server: LiveServer, model_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        model = server.gql("owner", EVALUATIONS, id=model_id)["model"]
        if model["status"] in ("DONE", "FAILED"):
            return model
        time.sleep(0.5)
    pytest.fail(f"model {model_id} was not evaluated in time: {model}")


def _refusal(result: dict[str, Any]) -> list[tuple[Any, str]]:
    assert result["__typename"] == "InvalidInput", result
    return [(error["field"], error["rule"]) for error in result["fieldErrors"]]


def test_upload_select_submit_and_rank(server: LiveServer):
    task = server.gql("careful", f'{{ task(code: "{CODE}") {{ labels submissionKinds dataSelection {{ budget }} }} }}')
    assert task["task"] == {
        "labels": list(data.LABELS),
        "submissionKinds": ["SELECTION"],
        "dataSelection": {"budget": 40},
    }
    budget = task["task"]["dataSelection"]["budget"]

    # -- annotators write headlines against the recipe trained on the seed set (round 1's target); the task's owner
    #    validates them. A science headline the seed model calls food fools it; a plain sports one does not
    create = (
        "mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename "
        "... on ExampleCreated { fooled example { id } } ... on Error { message } } }"
    )
    written = {}
    for text, label, fools in [
        ("Scientists found a new species of frog in the rainforest", "science", True),
        ("The striker scored twice in the derby", "sports", False),
    ]:
        created = server.gql("careless", create, input={"taskCode": CODE, "fields": {"text": text, "label": label}})
        created = created["createExample"]
        assert created["__typename"] == "ExampleCreated" and created["fooled"] is fools, created
        written[created["example"]["id"]] = fools
    validate = (
        "mutation($input: ValidateExampleInput!) { validateExample(input: $input) { __typename "
        "... on ValidationRecorded { decided example { status } } ... on Error { message } } }"
    )
    for example_id in written:
        voted = server.gql("owner", validate, input={"id": example_id, "label": "CORRECT"})["validateExample"]
        assert voted == {"__typename": "ValidationRecorded", "decided": True, "example": {"status": "ACCEPTED"}}
    stats = server.gql("careful", f'{{ task(code: "{CODE}") {{ currentRound {{ collected fooled }} }} }}')
    assert stats["task"]["currentRound"] == {"collected": 2, "fooled": 1}

    # -- the owner imports the package's pool for everyone to read, and its test set to score on
    imported = server.command("datasets", "import", str(data.POOL_FILE), "--task", CODE, "--format", "jsonl",
                              "--name", "pool-v1", "--access", "STANDARD")  # fmt: skip
    assert "pool-v1: 202 examples (standard)" in imported
    # the package ships its test set, gold included: no secret to keep, so every item is public (no private part)
    imported = server.command("datasets", "import", str(data.TEST_FILE), "--task", CODE, "--format", "jsonl",
                              "--name", "test-v1", "--access", "SCORING", "--public-share", "1")  # fmt: skip
    assert "test-v1: 60 examples (scoring)" in imported
    listed = server.gql("careful", f'{{ task(code: "{CODE}") {{ datasets {{ nodes {{ id name access size }} }} }} }}')
    sets = {d["name"]: d for d in listed["task"]["datasets"]["nodes"]}
    # the scoring set has a copy under each of the task's perturbations; the pool, a STANDARD set, has none
    assert {name: (d["access"], d["size"]) for name, d in sets.items()} == {
        "pool-v1": ("STANDARD", 202),
        "test-v1": ("SCORING", 60),
        "test-v1~typo": ("SCORING", 60),
        "test-v1~lowercase": ("SCORING", 60),
    }

    # -- a participant reads the pool, gold labels included, in the order of the file
    items = server.gql("careful", ITEMS, id=sets["pool-v1"]["id"])["datasetItems"]["nodes"]
    assert [item["position"] for item in items] == list(range(202))
    pool = [item["fields"] for item in items]
    assert pool == data.pool()
    ids = [item["id"] for item in items]
    # ... and a scoring set's items, without their gold
    [scoring_item] = server.gql("careful", ITEMS.replace("500", "1"), id=sets["test-v1"]["id"])["datasetItems"]["nodes"]
    assert set(scoring_item["fields"]) == {"text"}

    # -- two selections: the baseline strategy's, and the pool's first items
    submitted = {}
    for who, positions in [
        ("careful", selection.careful(pool, budget)),
        ("careless", selection.careless(pool, budget)),
    ]:
        assert len(positions) == budget
        result = server.gql(who, SUBMIT_SELECTION, input={
            "taskCode": CODE, "name": f"{who}-40", "datasetName": "pool-v1",
            "itemIds": [ids[p] for p in positions], "published": True,
        })["submitSelection"]  # fmt: skip
        assert result["__typename"] == "ModelSubmitted", result
        submitted[who] = result["model"]["id"]

    # -- what the task cannot take is refused, naming the field and the rule
    def select(item_ids: list[str], dataset: str = "pool-v1") -> dict[str, Any]:
        selected = {"taskCode": CODE, "name": "refused", "datasetName": dataset, "itemIds": item_ids}
        return server.gql("careful", SUBMIT_SELECTION, input=selected)["submitSelection"]

    assert _refusal(select(ids[: budget + 1])) == [(["itemIds"], "budget")]
    assert _refusal(select([ids[0], ids[1], ids[0]])) == [(["itemIds", "2"], "repeated")]
    assert _refusal(select([ids[0], scoring_item["id"]])) == [(["itemIds", "1"], "not_in_pool")]
    assert _refusal(select(ids[:3], dataset="test-v1")) == [(["datasetName"], "pool")]
    model = {"taskCode": CODE, "name": "a model", "backend": "http", "config": {"url": "http://127.0.0.1:9"}}
    assert _refusal(server.gql("careful", SUBMIT_MODEL, input=model)["submitModel"]) == [
        (["taskCode"], "submission_kind")
    ]

    # -- each selection is trained and scored on the test set and its perturbed copies
    scored = {}
    for who, model_id in submitted.items():
        evaluated = _wait_evaluated(server, model_id)
        evaluations = {e["dataset"]["name"]: e for e in evaluated["evaluations"]["nodes"]}
        assert evaluated["status"] == "DONE", evaluations
        assert set(evaluations) == {"test-v1", "test-v1~typo", "test-v1~lowercase"}
        assert all(e["status"] == "DONE" for e in evaluations.values()), evaluations
        scored[who] = {name: {m["name"]: m["value"] for m in e["metrics"]} for name, e in evaluations.items()}
    # the careful selection leaves out the copies and the wrong labels and covers the four topics evenly; the
    # careless one is two fifths copies and wrong labels, nearly half of it sports, and its model calls 51 of the
    # 60 test headlines sports or science. Robustness is the share of predictions the perturbations leave alone
    assert scored["careful"]["test-v1"] == pytest.approx(
        {"accuracy": 55 / 60, "macro_f1": 0.9175746, "robustness": 59 / 60}, abs=1e-6
    )
    assert scored["careless"]["test-v1"] == pytest.approx(
        {"accuracy": 32 / 60, "macro_f1": 0.4743590, "robustness": 119 / 120}, abs=1e-6
    )
    assert scored["careful"]["test-v1~typo"]["macro_f1"] == pytest.approx(0.8842934, abs=1e-6)
    assert scored["careless"]["test-v1~typo"]["macro_f1"] == pytest.approx(0.4739174, abs=1e-6)
    # the recipe reads lower-cased words: the lowercase copy scores as the original does
    for who in submitted:
        assert scored[who]["test-v1~lowercase"] == {k: scored[who]["test-v1"][k] for k in ("accuracy", "macro_f1")}

    # -- the leaderboard ranks the selections with its default weights. The task declares no fairness perturbation,
    #    so no model of it has a fairness figure: that axis weighs 0 by default, and no row has a gap
    board = server.gql(
        "careless",
        '{ task(code: "data-selection") { leaderboard(sort: DYNASCORE) '
        "{ principalMetric metricWeights { name weight } rows { rank dynascore missing model { modelId name } } } } }",
    )["task"]["leaderboard"]
    assert {w["name"]: w["weight"] for w in board["metricWeights"]}["fairness"] == 0
    assert board["principalMetric"] == "macro_f1"
    ranked = [(row["rank"], row["model"]["modelId"], row["model"]["name"]) for row in board["rows"]]
    assert ranked == [(1, submitted["careful"], "careful-40"), (2, submitted["careless"], "careless-40")], board
    assert board["rows"][0]["dynascore"] > board["rows"][1]["dynascore"]
