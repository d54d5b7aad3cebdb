"""End to end: the leaderboard is not an oracle for the gold of a scoring set.

A real ``dynaforge serve`` (SQLite, then PostgreSQL) with the ``oracle`` task (the toy task with two perturbations,
tests/oracle_plugin.py); its operator imports a scoring set of six items, which gets two perturbed copies over the
same gold. Registered users then try what a red team did, over GraphQL:

* deleting a model to get its submission back (every scored attempt counts, deleted ones too);
* probing the set and its copies item by item through the public figures of uploaded predictions (the copies share
  their original's public part, so the probe learns the gold of the original's public items and nothing else);
* submitting an ``http`` model whose server recognises one item, answers it, and refuses the rest (a model whose
  outputs are mostly unusable gets no figure that depends on the gold: both answers read alike).
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

# Six items of our own, each with a capital letter, so that both copies change every one of them.
ITEMS = [
    ("Rain On The Roof", "good"),
    ("A Cold Kitchen", "bad"),
    ("Fresh Bread At Noon", "good"),
    ("The Bus Never Came", "bad"),
    ("Sunlight After Lunch", "good"),
    ("Damp Socks All Day", "bad"),
]
SET = "probe"

IMPORT_DATASET = """mutation($input: ImportDatasetInput!) { importDataset(input: $input) { __typename
  ... on DatasetsCreated { datasets { name size parent { name } } } ... on Error { message } } }"""
SETTINGS = """mutation($n: Int!) { updateTaskSettings(input: {taskCode: "oracle", submissionsPerDay: $n}) {
  __typename ... on TaskSettingsUpdated { task { settings { submissionsPerDay } } } ... on Error { message } } }"""
DATASETS = """query { datasets(taskCode: "oracle") { nodes { id name size parent { name } } } }"""
ITEMS_OF = """query($id: ID!) { datasetItems(id: $id, first: 100) { nodes { position originalPosition fields } } }"""
PREDICT = """mutation($input: SubmitPredictionsInput!) { submitPredictions(input: $input) { __typename
  ... on ModelSubmitted { model { id evaluations { nodes { scoredPart itemCount privateMetrics { name }
    metrics { name value } } } } }
  ... on QuotaExceeded { message quota limit resetsInSeconds } ... on Error { message } } }"""
SUBMIT = """mutation($input: SubmitModelInput!) { submitModel(input: $input) { __typename
  ... on ModelSubmitted { model { id } } ... on QuotaExceeded { message } ... on Error { message } } }"""
DELETE = """mutation($id: ID!) { deleteModel(input: {id: $id}) { __typename ... on Error { message } } }"""
MODEL = """query($id: ID!) { model(id: $id) { status evaluations { nodes { status dataset { name } scoredPart
  itemCount unusableOutputs error metrics { name value } privateMetrics { name value } } } } }"""


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ],
)
def server(request, tmp_path_factory) -> Iterator[tuple[Server, str]]:
    """A served instance with the ``oracle`` task and the scoring set ``probe`` (with its two copies); yields the
    server and its operator's token."""
    workdir = tmp_path_factory.mktemp(f"oracle-{request.param}")
    with database(request.param, workdir) as database_url:
        env = plugin_process_env(
            workdir,
            database_url,
            {"oracle": "oracle_plugin:PLUGIN"},
            environment="test",
            outbound_allow="127.0.0.0/8,localhost",  # the tests' model server runs on loopback
            registrations_per_hour_per_client="1000",
        )
        cli(env, workdir, "db", "upgrade")
        token = create_operator(env, workdir, database_url)
        with serve(env, workdir, "server") as base_url:
            lines = "".join(
                json.dumps(
                    {
                        "format": "dynaforge.example/1",
                        "task": "oracle",
                        "status": "ACCEPTED",
                        "fields": {"text": t, "label": g},
                    }
                )
                + "\n"
                for t, g in ITEMS
            )
            answer = httpx.post(
                f"{base_url}/graphql",
                data={
                    "operations": json.dumps(
                        {
                            "query": IMPORT_DATASET,
                            "variables": {"input": {"taskCode": "oracle", "name": SET, "file": None}},
                        }
                    ),
                    "map": json.dumps({"0": ["variables.input.file"]}),
                },
                files={"0": ("probe.jsonl", lines.encode(), "application/octet-stream")},
                headers={"Apollo-Require-Preflight": "true", "Authorization": f"Bearer {token}"},
                timeout=60,
            ).json()["data"]["importDataset"]
            assert answer["__typename"] == "DatasetsCreated", answer
            assert sorted(d["size"] for d in answer["datasets"]) == [6, 6, 6], answer
            yield Server(request.param, base_url, database_url, env, workdir), token


async def _allowance(http: httpx.AsyncClient, operator: str, n: int) -> None:
    answer = (await post_graphql(http, operator, SETTINGS, n=n))["updateTaskSettings"]
    assert answer["task"]["settings"]["submissionsPerDay"] == n, answer


async def _predict(http: httpx.AsyncClient, token: str, dataset: str, labels: list[str], name: str = "p") -> Any:
    predictions = [{"label": label} for label in labels]
    variables = {"taskCode": "oracle", "name": name, "datasetName": dataset, "predictions": predictions}
    return (await post_graphql(http, token, PREDICT, input=variables))["submitPredictions"]


async def test_deleting_a_model_gives_no_attempt_back(server):
    served, operator = server
    async with httpx.AsyncClient(base_url=served.base_url, timeout=60) as http:
        await _allowance(http, operator, 3)
        token = await new_account(http, f"deleter_{served.backend}")
        made = [await _predict(http, token, SET, ["good"] * 6, name=f"try {i}") for i in range(3)]
        assert [m["__typename"] for m in made] == ["ModelSubmitted"] * 3, made
        refused = await _predict(http, token, SET, ["bad"] * 6)
        assert refused["__typename"] == "QuotaExceeded" and refused["quota"] == "SUBMISSIONS_PER_DAY", refused
        for m in made:
            deleted = (await post_graphql(http, token, DELETE, id=m["model"]["id"]))["deleteModel"]
            assert deleted["__typename"] == "ModelDeleted", deleted
        again = await _predict(http, token, SET, ["bad"] * 6)
        assert again["__typename"] == "QuotaExceeded" and "every scored attempt counts" in again["message"], again
        assert 0 < again["resetsInSeconds"] <= 24 * 3600
        model = {"taskCode": "oracle", "name": "m", "backend": "http", "config": {"url": "http://127.0.0.1:9"}}
        submitted = (await post_graphql(http, token, SUBMIT, input=model))["submitModel"]
        assert submitted["__typename"] == "QuotaExceeded", submitted  # one allowance for every kind of submission


async def test_probing_the_copies_item_by_item_reads_no_private_gold(server):
    """The red team's probe: for each set (the original and its copies) a constant answer, then the same answer
    with one item flipped; a change in the public accuracy gives that item's gold. Each copy's public part is its
    original's, so the probe learns the original's public items and not one private item."""
    served, operator = server
    async with httpx.AsyncClient(base_url=served.base_url, timeout=60) as http:
        await _allowance(http, operator, 100)
        token = await new_account(http, f"prober_{served.backend}")
        sets = (await post_graphql(http, token, DATASETS))["datasets"]["nodes"]
        names = sorted(d["name"] for d in sets)
        assert names == [SET, f"{SET}~lowercase", f"{SET}~uppercase"], names
        learned: dict[str, set[int]] = {}
        for dataset in sets:
            items = (await post_graphql(http, token, ITEMS_OF, id=dataset["id"]))["datasetItems"]["nodes"]
            assert all("label" not in item["fields"] for item in items)  # a scoring set's gold is not served
            original = [item["originalPosition"] if dataset["parent"] else item["position"] for item in items]
            baseline = await _predict(http, token, dataset["name"], ["good"] * len(items))
            [evaluation] = baseline["model"]["evaluations"]["nodes"]
            assert evaluation["scoredPart"] == "PUBLIC" and evaluation["privateMetrics"] is None
            assert evaluation["itemCount"] == 3  # half of six
            accuracy = _accuracy(evaluation)
            learned[dataset["name"]] = set()
            for flipped in range(len(items)):
                labels = ["bad" if i == flipped else "good" for i in range(len(items))]
                [probe] = (await _predict(http, token, dataset["name"], labels))["model"]["evaluations"]["nodes"]
                if _accuracy(probe) != accuracy:
                    learned[dataset["name"]].add(original[flipped])
    public = learned[SET]
    assert len(public) == 3, learned  # the original's public part, read off its own public figures
    assert learned[f"{SET}~lowercase"] == learned[f"{SET}~uppercase"] == public, learned  # nothing more


def _accuracy(evaluation: dict[str, Any]) -> float:
    return next(m["value"] for m in evaluation["metrics"] if m["name"] == "accuracy")


def _recognising_server() -> Starlette:
    """A model server that knows the first item of the set: ``/yes`` and ``/no`` answer it ``good`` and ``bad``;
    every other input gets an answer the task cannot read."""
    known = ITEMS[0][0].casefold()

    def endpoint(answer: str):
        async def predict(request: Request) -> JSONResponse:
            inputs = (await request.json())["inputs"]
            return JSONResponse(
                {"outputs": [{"label": answer if i["text"].casefold() == known else "no idea"} for i in inputs]}
            )

        async def health(request: Request) -> JSONResponse:
            return JSONResponse({"status": "ok"})

        return [Route(f"/{answer}/predict", predict, methods=["POST"]), Route(f"/{answer}/health", health)]

    return Starlette(routes=[*endpoint("good"), *endpoint("bad")])


async def test_a_model_that_answers_one_item_and_refuses_the_rest_reads_nothing(server):
    """Scored on the whole set at once, such a model read one gold label per submission off its accuracy. Now its
    outputs are mostly unusable: it gets counts, no figure that depends on the gold, whatever it answered."""
    served, operator = server
    async with httpx.AsyncClient(base_url=served.base_url, timeout=60) as http:
        await _allowance(http, operator, 100)
        token = await new_account(http, f"recogniser_{served.backend}")
        with serve_in_thread(_recognising_server()) as url:
            ids = []
            for answer in ("good", "bad"):
                model = {"taskCode": "oracle", "name": answer, "backend": "http", "config": {"url": f"{url}/{answer}"}}
                submitted = (await post_graphql(http, token, SUBMIT, input=model))["submitModel"]
                assert submitted["__typename"] == "ModelSubmitted", submitted
                ids.append(submitted["model"]["id"])

            async def finished(model_id: str) -> dict[str, Any] | None:
                model = (await post_graphql(http, token, MODEL, id=model_id))["model"]
                return model if model["status"] in ("DONE", "FAILED") else None

            seen = [await eventually(lambda m=m: finished(m), within=240, every=0.5, what="evaluated") for m in ids]
    shown = []
    for model in seen:
        assert model["status"] == "DONE", model
        by_set = {e["dataset"]["name"]: e for e in model["evaluations"]["nodes"]}
        assert sorted(by_set) == [SET, f"{SET}~lowercase", f"{SET}~uppercase"]
        for evaluation in by_set.values():
            assert evaluation["privateMetrics"] is None and evaluation["itemCount"] == 3, evaluation
            assert evaluation["unusableOutputs"] >= 2, evaluation
            assert not [m for m in evaluation["metrics"] if m["name"] == "accuracy"], evaluation
        shown.append({name: (e["metrics"], e["unusableOutputs"]) for name, e in by_set.items()})
    assert shown[0] == shown[1]  # answering the known item "good" or "bad" shows the same
