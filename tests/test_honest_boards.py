"""End to end: a leaderboard tells the truth about broken models, and no empty or tiny set decides it.

A real ``dynaforge serve`` (SQLite, then PostgreSQL) with the ``honest`` task (the toy task with a robustness and a
fairness perturbation, tests/oracle_plugin.py) and the default minimum size of a scoring set. Its operator imports a
scoring set of twelve items; a model builder serves two models over http, one that answers the task's labels and one
whose every answer names a label the task does not have, and uploads predictions for the set:

* the working model ranks first; the broken one ranks last, its gap named with the reason and its answers' reasons
  for being unusable, and its robustness and fairness are not the perfect 1.0 that unusable answers used to earn;
* uploaded predictions, which measure no speed or memory, have those gaps named with the set behind them;
* a round with a handful of accepted examples makes no empty and no tiny scoring set.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from support import (
    Server,
    cli,
    create_operator,
    database,
    eventually,
    new_account,
    plugin_process_env,
    post_graphql,
    serve,
    serve_in_thread,
)

pytestmark = pytest.mark.e2e

# Twelve items of our own: 'good' exactly when the word good is in them (the working model's rule), and half of them
# about a person, so that the fairness copy (gender_swap) has items.
ITEMS = [
    ("He had a good day at the market", "good"),
    ("She found the bus stop cold and grey", "bad"),
    ("A good sandwich after the long walk", "good"),
    ("The lift broke down again", "bad"),
    ("His brother made a good soup", "good"),
    ("Her umbrella leaked all afternoon", "bad"),
    ("The tea was good and hot", "good"),
    ("Rain soaked the whole queue", "bad"),
    ("My sister wrote a good letter", "good"),
    ("The train left without him", "bad"),
    ("A good breeze by the river", "good"),
    ("The kettle never boiled", "bad"),
]
SET = "board-set"

IMPORT_DATASET = """mutation($input: ImportDatasetInput!) { importDataset(input: $input) { __typename
  ... on DatasetsCreated { datasets { name access size } } ... on Error { message } } }"""
SUBMIT = """mutation($input: SubmitModelInput!) { submitModel(input: $input) { __typename
  ... on ModelSubmitted { model { id } } ... on Error { message } } }"""
PREDICT = """mutation($input: SubmitPredictionsInput!) { submitPredictions(input: $input) { __typename
  ... on ModelSubmitted { model { id } } ... on Error { message } } }"""
MODEL = """query($id: ID!) { model(id: $id) { name status evaluations { nodes { status dataset { name }
  unusableOutputs mostlyUnusable unusableReasons { reason count } metrics { name value } } } } }"""
BOARD = """{ leaderboard(taskCode: "honest") { datasets datasetWeights { name weight }
  rows { rank dynascore model { name } metrics { name value } missing
         gaps { dataset metrics reason detail } } } }"""
CREATE = """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename
  ... on ExampleCreated { example { id } } ... on Error { message } } }"""
VOTE = """mutation($id: ID!) { validateExample(input: {id: $id, label: CORRECT}) { __typename
  ... on Error { message } } }"""
BUILD = """mutation { createRoundDatasets(input: {taskCode: "honest", round: 1}) { __typename
  ... on DatasetsCreated { datasets { name access size } } ... on Error { message } } }"""
DATASETS = """{ datasets(taskCode: "honest") { nodes { name access size parent { name } } } }"""


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ],
)
def server(request, tmp_path_factory) -> Iterator[tuple[Server, str]]:
    """A served instance with the ``honest`` task and its scoring set; yields the server and its operator's token."""
    workdir = tmp_path_factory.mktemp(f"honest-{request.param}")
    with database(request.param, workdir) as database_url:
        env = plugin_process_env(
            workdir,
            database_url,
            {"oracle": "oracle_plugin:PLUGIN"},
            environment="test",
            outbound_allow="127.0.0.0/8,localhost",  # the tests' model server runs on loopback
            examples_per_minute="1000",
        )
        env.pop("DYNAFORGE_MIN_SCORING_SET_SIZE")  # the default minimum, as an operator has it
        cli(env, workdir, "db", "upgrade")
        token = create_operator(env, workdir, database_url)
        with serve(env, workdir, "server") as base_url:
            lines = "".join(
                json.dumps({"format": "dynaforge.example/1", "status": "ACCEPTED", "fields": {"text": t, "label": g}})
                + "\n"
                for t, g in ITEMS
            )
            answer = httpx.post(
                f"{base_url}/graphql",
                data={
                    "operations": json.dumps(
                        {
                            "query": IMPORT_DATASET,
                            "variables": {"input": {"taskCode": "honest", "name": SET, "file": None}},
                        }
                    ),
                    "map": json.dumps({"0": ["variables.input.file"]}),
                },
                files={"0": ("set.jsonl", lines.encode(), "application/octet-stream")},
                headers={"Apollo-Require-Preflight": "true", "Authorization": f"Bearer {token}"},
                timeout=60,
            ).json()["data"]["importDataset"]
            assert answer["__typename"] == "DatasetsCreated", answer
            names = {d["name"] for d in answer["datasets"]}
            assert names == {SET, f"{SET}~lowercase", f"{SET}~gender_swap"}, answer
            yield Server(request.param, base_url, database_url, env, workdir), token


def _model_server() -> Starlette:
    """``/works`` answers 'good' exactly when the word good is in the text; ``/broken`` answers a label the task
    does not have, every time."""

    def endpoint(name: str, answer):
        async def predict(request: Request) -> JSONResponse:
            inputs = (await request.json())["inputs"]
            return JSONResponse({"outputs": [{"label": answer(i["text"])} for i in inputs]})

        async def health(request: Request) -> JSONResponse:
            return JSONResponse({"status": "ok"})

        return [Route(f"/{name}/predict", predict, methods=["POST"]), Route(f"/{name}/health", health)]

    works = endpoint("works", lambda text: "good" if "good" in text.lower().split() else "bad")
    broken = endpoint("broken", lambda text: "excellent")
    return Starlette(routes=[*works, *broken])


def _metric(row: dict[str, Any], name: str) -> float | None:
    return next(m["value"] for m in row["metrics"] if m["name"] == name)


async def test_a_broken_model_ranks_last_with_its_reasons_and_no_perfect_robustness(server):
    served, _ = server
    async with httpx.AsyncClient(base_url=served.base_url, timeout=60) as http:
        builder = await new_account(http, f"builder_{served.backend}")
        with serve_in_thread(_model_server()) as url:
            ids = {}
            for name in ("works", "broken"):
                model = {
                    "taskCode": "honest",
                    "name": name,
                    "backend": "http",
                    "config": {"url": f"{url}/{name}"},
                    "published": True,
                }
                submitted = (await post_graphql(http, builder, SUBMIT, input=model))["submitModel"]
                assert submitted["__typename"] == "ModelSubmitted", submitted
                ids[name] = submitted["model"]["id"]

            async def finished(model_id: str) -> dict[str, Any] | None:
                model = (await post_graphql(http, builder, MODEL, id=model_id))["model"]
                return model if model["status"] in ("DONE", "FAILED") else None

            models = {
                name: await eventually(lambda m=m: finished(m), within=240, every=0.5, what=f"{name} is evaluated")
                for name, m in ids.items()
            }
        predictions = {
            "taskCode": "honest",
            "name": "uploaded",
            "datasetName": SET,
            "predictions": [{"label": gold} for _, gold in ITEMS],
            "published": True,
        }
        uploaded = (await post_graphql(http, builder, PREDICT, input=predictions))["submitPredictions"]
        assert uploaded["__typename"] == "ModelSubmitted", uploaded
        board = (await post_graphql(http, None, BOARD))["leaderboard"]

    assert models["works"]["status"] == models["broken"]["status"] == "DONE", models
    broken = {e["dataset"]["name"]: e for e in models["broken"]["evaluations"]["nodes"]}
    assert all(e["mostlyUnusable"] for e in broken.values()), broken
    [reason] = broken[SET]["unusableReasons"]
    assert reason["count"] == len(ITEMS) and "excellent" in reason["reason"], reason
    assert not [m for m in broken[SET]["metrics"] if m["name"] == "accuracy"]  # nothing that depends on the gold

    assert board["datasets"] == [SET] and board["datasetWeights"] == [{"name": SET, "weight": 1.0}]
    rows = {row["model"]["name"]: row for row in board["rows"]}
    assert [row["model"]["name"] for row in board["rows"]][0] == "works" and rows["works"]["rank"] == 1
    assert board["rows"][-1]["model"]["name"] == "broken" and rows["broken"]["rank"] is None
    [gap] = rows["broken"]["gaps"]
    assert (gap["dataset"], gap["reason"]) == (SET, "UNUSABLE") and "accuracy" in gap["metrics"], gap
    assert "could not be read" in gap["detail"], gap
    # unusable answers are inconsistent: no perfect robustness or fairness for a model that answers nothing
    assert _metric(rows["broken"], "robustness") == 0.0 and _metric(rows["broken"], "fairness") == 0.0
    assert _metric(rows["works"], "robustness") == 1.0 and rows["works"]["gaps"] == []
    # uploaded predictions measure no speed or memory: those gaps are named, with the set behind them
    [unmeasured] = rows["uploaded"]["gaps"]
    assert (unmeasured["dataset"], unmeasured["reason"]) == (SET, "NOT_MEASURED"), unmeasured
    assert {"throughput", "memory"} <= set(unmeasured["metrics"])


async def test_a_tiny_round_makes_no_empty_or_tiny_scoring_set(server):
    """Six accepted examples split 5 / 1 / 0: no test split is made at all (an empty scoring set used to take every
    model's figures off the board), and the board keeps ranking on the set it has."""
    served, operator = server
    async with httpx.AsyncClient(base_url=served.base_url, timeout=60) as http:
        author = await new_account(http, f"author_{served.backend}")
        for i in range(6):
            created = (
                await post_graphql(
                    http,
                    author,
                    CREATE,
                    input={"taskCode": "honest", "fields": {"text": f"a good thought number {i}", "label": "bad"}},
                )
            )["createExample"]
            assert created["__typename"] == "ExampleCreated", created
            voted = (await post_graphql(http, operator, VOTE, id=created["example"]["id"]))["validateExample"]
            assert voted["__typename"] == "ValidationRecorded", voted
        built = (await post_graphql(http, operator, BUILD))["createRoundDatasets"]
        assert built["__typename"] == "DatasetsCreated", built
        assert sorted((d["name"], d["access"], d["size"]) for d in built["datasets"]) == [
            ("r1-dev", "STANDARD", 1),
            ("r1-train", "STANDARD", 5),
        ]
        sets = (await post_graphql(http, operator, DATASETS))["datasets"]["nodes"]
        scoring = [d for d in sets if d["access"] == "SCORING" and d["parent"] is None]  # copies follow their set
        assert [(d["name"], d["size"]) for d in scoring] == [(SET, len(ITEMS))], sets
        board = (await post_graphql(http, None, BOARD))["leaderboard"]
        assert board["datasets"] == [SET]
