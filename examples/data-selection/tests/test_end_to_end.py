"""The data-selection task on a real ``dynaforge serve``, as a community runs it once the package is installed beside
the server: annotators write headlines against the task's target and the owner validates them, the owner imports
the package's pool as a STANDARD data set and its test set as a SCORING one, two
participants read the pool over GraphQL and each submits a selection (one careful, one careless), the platform
trains the task's fixed recipe on each inside its evaluation and scores it on the test set, and the leaderboard
ranks the selections. Submissions the task cannot take are refused with the field and rule they break. On SQLite,
and on PostgreSQL where one is running (with ``CI=true`` a missing PostgreSQL fails the test instead of skipping it).

Everything here goes through the server's public surface: the ``dynaforge`` command and GraphQL over HTTP."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dynaforge_data_selection import data, selection

BIN = Path(sys.executable).parent
POSTGRES = os.environ.get("DYNAFORGE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432")
PASSWORD = "correct horse battery"
CODE = "data-selection"


def _service_missing(what: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is not available; CI must provide it", pytrace=False)
    pytest.skip(f"{what} is not available")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    pytest.fail(f"{url} did not answer\n{log.read_text(errors='replace')[-3000:]}")


class Server:
    """A ``dynaforge serve`` set up as an operator sets one up, and GraphQL calls to it as a given user."""

    def __init__(self, workdir: Path, database_url: str):
        self.workdir, self.database_url = workdir, database_url
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("DYNAFORGE_")}
        self.env.update(
            DYNAFORGE_ENVIRONMENT="test",
            DYNAFORGE_DATA_DIR=str(workdir / "data"),
            DYNAFORGE_PASSWORD_HASH_TIME_COST="1",
            DYNAFORGE_PASSWORD_HASH_MEMORY_KIB="64",
            DYNAFORGE_LOAD_PLUGINS=CODE,  # this package alone, whatever else is installed
            PYTHONUNBUFFERED="1",
        )
        self.tokens: dict[str, str] = {}
        self.processes: list[subprocess.Popen] = []
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def command(self, *args: str) -> str:
        done = subprocess.run(
            [str(BIN / "dynaforge"), "--log-level", "WARNING", *args, "--database-url", self.database_url],
            env=self.env, cwd=self.workdir, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, f"dynaforge {' '.join(args[:2])}: {done.stdout}{done.stderr}"
        return done.stdout

    def user(self, name: str, *, admin: bool = False) -> None:
        flags = ["--admin"] if admin else []
        self.command("users", "create", "--username", name, "--email", f"{name}@example.org", "--password", PASSWORD,
                     *flags)  # fmt: skip
        self.tokens[name] = self.command("tokens", "create", "--username", name).strip().splitlines()[-1]

    def start(self) -> None:
        log = self.workdir / "server.log"
        out = open(log, "ab")  # noqa: SIM115 - the child keeps it
        args = [str(BIN / "dynaforge"), "serve", "--port", str(self.port), "--database-url", self.database_url]
        process = subprocess.Popen(args, env=self.env, cwd=self.workdir, stdout=out, stderr=out)
        self.processes.append(process)
        _wait_healthy(self.url + "/healthz", process, log)

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()

    def gql(self, who: str, query: str, **variables: Any) -> dict[str, Any]:
        response = httpx.post(
            self.url + "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {self.tokens[who]}"},
            timeout=120,
        )
        body = response.json()
        assert response.status_code == 200 and "errors" not in body, body
        return body["data"]


def _postgres_database() -> Iterator[str]:
    import asyncpg  # a dependency of dynaforge

    name = f"data_selection_{uuid.uuid4().hex[:10]}"

    async def execute(sql: str) -> None:
        connection = await asyncpg.connect(POSTGRES + "/postgres", timeout=5)
        try:
            await connection.execute(sql)
        finally:
            await connection.close()

    try:
        asyncio.run(execute(f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError) as exc:
        _service_missing(f"PostgreSQL at {POSTGRES} ({exc})")
    try:
        yield POSTGRES.replace("postgresql://", "postgresql+asyncpg://") + f"/{name}"
    finally:
        asyncio.run(execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request, tmp_path) -> Iterator[Server]:
    if request.param == "sqlite":
        databases: Iterator[str] = iter([f"sqlite+aiosqlite:///{(tmp_path / 'dynaforge.db').as_posix()}"])
    else:
        databases = _postgres_database()
    database_url = next(databases)
    srv = Server(tmp_path, database_url)
    try:
        srv.command("db", "upgrade")
        srv.user("owner", admin=True)
        srv.user("careful")
        srv.user("careless")
        srv.start()
        yield srv
    finally:
        srv.stop()
        next(databases, None)  # drops the PostgreSQL database


SUBMIT_SELECTION = (
    "mutation($input: SubmitSelectionInput!) { submitSelection(input: $input) { __typename "
    "... on SubmittedModel { model { id } } ... on InvalidInput { message fieldErrors { field rule message } } "
    "... on Error { message } } }"
)
SUBMIT_MODEL = (
    "mutation($input: SubmitModelInput!) { submitModel(input: $input) { __typename "
    "... on SubmittedModel { model { id } } ... on InvalidInput { message fieldErrors { field rule message } } "
    "... on Error { message } } }"
)
EVALUATIONS = (
    "query($id: ID!) { model(id: $id) { name status evaluations(first: 20) { nodes { status error "
    "dataset { name } metrics { name value } } } } }"
)
ITEMS = "query($id: ID!) { datasetItems(id: $id, first: 500) { nodes { id position fields } } }"


def _wait_evaluated(server: Server, model_id: str) -> dict[str, Any]:
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


def test_upload_select_submit_and_rank(server: Server):
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
        "... on CreatedExample { fooled example { id } } ... on Error { message } } }"
    )
    written = {}
    for text, label, fools in [
        ("Scientists found a new species of frog in the rainforest", "science", True),
        ("The striker scored twice in the derby", "sports", False),
    ]:
        created = server.gql("careless", create, input={"taskCode": CODE, "fields": {"text": text, "label": label}})
        created = created["createExample"]
        assert created["__typename"] == "CreatedExample" and created["fooled"] is fools, created
        written[created["example"]["id"]] = fools
    validate = (
        "mutation($input: ValidateExampleInput!) { validateExample(input: $input) { __typename "
        "... on ValidatedExample { decided example { status } } ... on Error { message } } }"
    )
    for example_id in written:
        voted = server.gql("owner", validate, input={"exampleId": example_id, "label": "CORRECT"})["validateExample"]
        assert voted == {"__typename": "ValidatedExample", "decided": True, "example": {"status": "ACCEPTED"}}
    stats = server.gql("careful", f'{{ task(code: "{CODE}") {{ currentRound {{ collected fooled }} }} }}')
    assert stats["task"]["currentRound"] == {"collected": 2, "fooled": 1}

    # -- the owner imports the package's pool for everyone to read, and its test set to score on
    imported = server.command("datasets", "import", str(data.POOL_FILE), "--task", CODE, "--format", "jsonl",
                              "--name", "pool-v1", "--access", "STANDARD")  # fmt: skip
    assert "pool-v1: 202 examples (standard)" in imported
    imported = server.command("datasets", "import", str(data.TEST_FILE), "--task", CODE, "--format", "jsonl",
                              "--name", "test-v1", "--access", "SCORING")  # fmt: skip
    assert "test-v1: 60 examples (scoring)" in imported
    listed = server.gql("careful", f'{{ datasets(taskCode: "{CODE}") {{ nodes {{ id name access size }} }} }}')
    sets = {d["name"]: d for d in listed["datasets"]["nodes"]}
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
        assert result["__typename"] == "SubmittedModel", result
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
        '{ leaderboard(taskCode: "data-selection", sort: DYNASCORE) '
        "{ principalMetric metricWeights { name weight } rows { rank dynascore missing model { id name } } } }",
    )["leaderboard"]
    assert {w["name"]: w["weight"] for w in board["metricWeights"]}["fairness"] == 0
    assert board["principalMetric"] == "macro_f1"
    ranked = [(row["rank"], row["model"]["id"], row["model"]["name"]) for row in board["rows"]]
    assert ranked == [(1, submitted["careful"], "careful-40"), (2, submitted["careless"], "careless-40")], board
    assert board["rows"][0]["dynascore"] > board["rows"][1]["dynascore"]
