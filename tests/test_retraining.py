"""End to end: the whole adversarial loop with retraining, through GraphQL against a real server.

A real ``dynaforge serve`` (its embedded job worker, SQLite and PostgreSQL) runs the toy task, whose round 1 targets
a keyword model and whose training recipe is a naive Bayes over words (``toy_plugin.train_words``). Annotators write
examples that fool the keyword model, the operator (an admin: decisive votes) validates them, the round's accepted
examples become train/dev/test sets, a candidate is trained on the train set (progress followed over websockets),
evaluated beside its parent, compared in the round x model matrix, promoted by ``openNextRound(candidate:)``, and
round 2's examples are predicted by it. A second job is then cancelled while it runs and registers nothing (in the
same test: it needs the loop's data sets, and tests of a module may run in any order).
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest
from gql import Client, gql
from gql.transport.websockets import WebsocketsTransport
from scipy.stats import binomtest
from support import Server, create_operator, database, eventually, register, run, serve, session, toy_process_env

from dynaforge.api.node import decode_global_id

pytestmark = pytest.mark.e2e

ADD_CONTEXTS = """mutation($input: AddContextsInput!) {
  addContexts(input: $input) { __typename ... on ContextsAdded { ids } ... on Error { message } } }"""
CREATE = """mutation($input: CreateExampleInput!) {
  createExample(input: $input) {
    __typename
    ... on ExampleCreated { example { id fooled prediction { fields } modelPredictions { model } } }
    ... on Error { message } } }"""
VALIDATE = """mutation($input: ValidateExampleInput!) {
  validateExample(input: $input) { __typename ... on Error { message } } }"""
DATASETS = """mutation($input: CreateRoundDatasetsInput!) {
  createRoundDatasets(input: $input) {
    __typename ... on DatasetsCreated { datasets { id name split access size } } ... on Error { message } } }"""
RECIPES = """query { trainingRecipes(taskCode: "toy") {
  name model parameters { name type default } baseData baseDataAvailable tuning { name values } } }"""
TRAIN = """mutation($input: TrainCandidateModelInput!) {
  trainCandidateModel(input: $input) {
    __typename
    ... on TrainingStarted { job { id status recipe hyperparameters seed parameters { ...Typed } } }
    ... on InvalidInput { message fieldErrors { field rule message } }
    ... on Error { message } } }
fragment Typed on ParameterValue { name type boolean integer number string }"""
CANCEL = """mutation($input: CancelTrainingInput!) {
  cancelTraining(input: $input) { __typename ... on TrainingCancelled { job { status } } ... on Error { message } } }"""
JOBS = """query { trainingJobs(taskCode: "toy") { nodes {
  id status progress stage error attempts datasets { name }
  candidate { id origin weights recipe seed hyperparameters
              trainingData { datasets { datasetId name size sha256 } examples examplesSha256 baseData }
              metrics { name value text } parent { id name origin } model { id } } } } }"""
REGISTRY = """query($first: Int, $after: String, $order: CreationOrder! = NEWEST_FIRST) { task(code: "toy") {
  registeredModels(first: $first, after: $after, orderBy: $order) {
    totalCount pageInfo { hasNextPage endCursor } nodes { id name origin weights rounds } } } }"""
MATRIX = """query { task(code: "toy") { roundModelMatrix {
  metric rounds
  rows { model { id name origin model { id } } targetedRounds
         cells { roundNumber items metric { value low high } foolingRate { value low high }
                 stillFooled { value low high } stillFooledItems
                 dataset { id }
                 evaluation { id itemCount privateItemCount metrics { name value } privateMetrics { name value } } }
  } } } }"""
PAIRED = """query($m: ID!, $a: ID!, $d: ID!) { task(code: "toy") { pairedTest(model: $m, against: $a, dataset: $d) {
  items bothRight onlyModelRight onlyAgainstRight bothWrong mcnemarStatistic mcnemarPValue
  metric modelValue againstValue difference { value low high } bootstrapPValue resamples
  model { id } against { id } dataset { id } } } }"""
OPEN = """mutation($input: OpenNextRoundInput!) {
  openNextRound(input: $input) {
    __typename
    ... on RoundOpened { round { number targetModels { name backend
        registered { id origin weights recipe parent { name origin } trainingData { examples } } } } }
    ... on Error { message } } }"""
PROGRESS = """subscription($j: ID!) { trainingProgress(jobId: $j) { jobId status progress stage candidateId } }"""

GOOD = ["excellent", "wonderful", "lovely", "superb", "splendid", "cheerful"]
BAD = ["not good", "no good", "never good", "hardly good", "not so good", "barely good"]
THINGS = ["soup", "film", "walk", "song", "view", "game", "party"]


def _fooling_examples() -> list[dict[str, str]]:
    """Examples that fool the keyword model ('good' iff the word good appears): praise without the word, and
    complaints with it."""
    examples = []
    for i, thing in enumerate(THINGS):
        for j in range(3):
            examples.append({"text": f"a {GOOD[(i + j) % len(GOOD)]} {thing}", "label": "good"})
            examples.append({"text": f"the {thing} was {BAD[(i + j) % len(BAD)]}", "label": "bad"})
    return examples


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ],
)
def server(request, tmp_path_factory) -> Iterator[tuple[Server, str]]:
    workdir = tmp_path_factory.mktemp(f"retraining-{request.param}")
    with database(request.param, workdir) as database_url:
        env = toy_process_env(
            workdir,
            database_url,
            data_dir=str(workdir / "data"),
            environment="test",
            examples_per_minute="1000",
            eval_bootstrap_resamples="50",
        )
        from support import cli

        cli(env, workdir, "db", "upgrade", "--database-url", database_url)
        token = create_operator(env, workdir, database_url)
        with serve(env, workdir, "server", "--database-url", database_url) as base_url:
            yield Server(request.param, base_url, database_url, env, workdir), token


async def _progress(server: Server, token: str, job_id: str, seen: list[dict[str, Any]]) -> None:
    transport = WebsocketsTransport(
        url=server.base_url.replace("http://", "ws://") + "/graphql",
        init_payload={"authorization": f"Bearer {token}"},
        subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
    )
    async with Client(transport=transport) as ws:
        request = gql(PROGRESS)
        request.variable_values = {"j": job_id}
        async for event in ws.subscribe(request):
            seen.append(event["trainingProgress"])
            if event["trainingProgress"]["status"] != "RUNNING":
                return


async def test_collect_validate_train_evaluate_promote_and_target(server):
    server, operator = server
    annotators = [(await register(server, f"writer{i}"))[0] for i in range(3)]
    examples = _fooling_examples()

    # --- collect: every example fools the keyword model of round 1
    created = []
    for i, fields in enumerate(examples):
        async with session(server, annotators[i % len(annotators)]) as s:
            result = (await run(s, CREATE, input={"taskCode": "toy", "fields": fields}))["createExample"]
        assert result["__typename"] == "ExampleCreated", result
        assert result["example"]["fooled"] is True, (fields, result)
        created.append(result["example"]["id"])

    async with session(server, operator) as s:
        # --- validate (the operator's votes decide), then split the round into data sets
        for example_id in created:
            voted = await run(s, VALIDATE, input={"id": example_id, "label": "CORRECT"})
            assert voted["validateExample"]["__typename"] == "ValidationRecorded", voted
        made = (await run(s, DATASETS, input={"taskCode": "toy", "round": 1, "seed": 7}))["createRoundDatasets"]
        assert made["__typename"] == "DatasetsCreated", made
        sets = {d["split"].lower(): d for d in made["datasets"] if d["name"].startswith("r1-") and "+" not in d["name"]}
        assert sets["train"]["size"] + sets["dev"]["size"] + sets["test"]["size"] == len(examples)

        recipes = (await run(s, RECIPES))["trainingRecipes"]
        assert recipes[0]["name"] == "words" and recipes[0]["baseDataAvailable"] is False
        assert recipes[0]["parameters"][:2] == [
            {"name": "smoothing", "type": "NUMBER", "default": 1.0},
            {"name": "min_count", "type": "INTEGER", "default": 1},
        ]
        assert recipes[0]["tuning"] == [
            {"name": "smoothing", "values": [1.0, 0.05, 20.0]},
            {"name": "min_count", "values": [1, 2]},
        ]

        # --- bad input is refused with what to change, and stores nothing
        refused = (
            await run(
                s,
                TRAIN,
                input={"taskCode": "toy", "datasets": [sets["train"]["id"]], "hyperparameters": {"smoothing": "x"}},
            )
        )["trainCandidateModel"]
        assert refused["__typename"] == "InvalidInput", refused
        assert refused["fieldErrors"][0]["field"] == ["hyperparameters", "smoothing"]
        assert (await run(s, JOBS))["trainingJobs"]["nodes"] == []

        # --- train a candidate on the train split, following its progress over websockets
        started = (
            await run(
                s,
                TRAIN,
                input={
                    "taskCode": "toy",
                    "datasets": [sets["train"]["id"]],
                    "hyperparameters": {"smoothing": 0.5, "pause_s": 1.0},
                    "seed": 3,
                },
            )
        )["trainCandidateModel"]
        assert started["__typename"] == "TrainingStarted", started
        job_id = started["job"]["id"]
        assert started["job"]["hyperparameters"] == {"smoothing": 0.5, "min_count": 1, "pause_s": 1.0, "ballast_mb": 0}
        assert _typed(started["job"]["parameters"]) == started["job"]["hyperparameters"]
        assert [v["type"] for v in started["job"]["parameters"]] == ["NUMBER", "INTEGER", "NUMBER", "INTEGER"]
        seen: list[dict[str, Any]] = []
        await asyncio.wait_for(_progress(server, operator, job_id, seen), timeout=120)
        assert seen[-1]["status"] == "SUCCEEDED" and seen[-1]["candidateId"], seen
        stages = [e["stage"] for e in seen]
        assert "counting words" in stages or "writing weights" in stages, stages
        fractions = [e["progress"] for e in seen]
        assert fractions == sorted(fractions), fractions

        [job] = (await run(s, JOBS))["trainingJobs"]["nodes"]
        assert job["status"] == "SUCCEEDED" and job["attempts"] == 1 and job["progress"] == 1.0, job
        assert [d["name"] for d in job["datasets"]] == [sets["train"]["name"]]
        candidate = job["candidate"]
        assert candidate["id"] == seen[-1]["candidateId"]
        assert candidate["origin"] == "TRAINED" and len(candidate["weights"]) == 64
        assert candidate["recipe"] == "words" and candidate["seed"] == 3
        assert candidate["trainingData"]["examples"] == sets["train"]["size"]
        assert candidate["trainingData"]["datasets"][0]["datasetId"] == sets["train"]["id"]
        assert len(candidate["trainingData"]["datasets"][0]["sha256"]) == 64
        assert len(candidate["trainingData"]["examplesSha256"]) == 64 and candidate["trainingData"]["baseData"] is False
        assert {"name": "training_accuracy", "value": 1.0, "text": None} in candidate["metrics"]
        assert candidate["parent"]["name"] == "keyword" and candidate["parent"]["origin"] == "CONFIGURED"

        # --- evaluated like any submission, beside its parent; compared on round 1's test set
        async def compared() -> dict[str, Any] | None:
            matrix = (await run(s, MATRIX))["task"]["roundModelMatrix"]
            rows = {r["model"]["origin"]: r for r in matrix["rows"]}
            done = len(rows) == 2 and all(r["cells"][0]["metric"] is not None for r in rows.values())
            return matrix if done else None

        matrix = await eventually(compared, within=180, every=1.0, what="both models are evaluated")
        assert matrix["metric"] == "accuracy" and matrix["rounds"] == [1]
        # keyed by what the two are: the round's configured target ("keyword") and the trained candidate ("words"),
        # whose name says where it comes from
        rows = {{"CONFIGURED": "keyword", "TRAINED": "words"}[r["model"]["origin"]]: r for r in matrix["rows"]}
        decoded = decode_global_id(job_id)
        assert decoded is not None
        lineage = f"words (retrained on r1, job {decoded[1]})"
        assert rows["words"]["model"]["name"] == lineage, rows["words"]["model"]
        parent, trained = rows["keyword"]["cells"][0], rows["words"]["cells"][0]
        # a scoring set shows its public part (SCORING_PUBLIC_SHARE, half) until its round ends
        assert parent["items"] == trained["items"] == round(sets["test"]["size"] / 2)
        assert parent["foolingRate"]["value"] == 1.0  # every accepted example fooled it when it was written
        assert trained["foolingRate"]["value"] < parent["foolingRate"]["value"], (trained, parent)
        assert trained["metric"]["value"] > parent["metric"]["value"]
        # "still fooled" is measured on the examples that fooled round 1's target when written: here every one did
        assert parent["stillFooledItems"] == trained["stillFooledItems"] == parent["items"]
        assert parent["stillFooled"]["value"] == 1.0
        assert trained["stillFooled"] == trained["foolingRate"], trained
        low, high = trained["foolingRate"]["low"], trained["foolingRate"]["high"]
        assert low <= trained["foolingRate"]["value"] <= high
        assert rows["keyword"]["targetedRounds"] == [1] and rows["words"]["targetedRounds"] == []

        # --- the proof: both evaluations item by item, and the paired test between them
        await _check_item_by_item(server, operator, annotators[0], rows)

        # --- promote it: round 2 targets exactly the candidate's weights
        opened = (
            await run(s, OPEN, input={"taskCode": "toy", "candidate": candidate["id"], "description": "retrained"})
        )["openNextRound"]
        assert opened["__typename"] == "RoundOpened", opened
        [target] = opened["round"]["targetModels"]
        assert target["registered"]["id"] == candidate["id"]
        assert target["registered"]["weights"] == candidate["weights"]
        assert target["registered"]["parent"] == {"name": "keyword", "origin": "CONFIGURED"}
        listed = (await run(s, REGISTRY))["task"]["registeredModels"]
        registry = {r["id"]: r for r in listed["nodes"]}
        assert registry[candidate["id"]]["rounds"] == [2]
        # a page at a time, newest first (the candidate) unless asked otherwise
        newest = (await run(s, REGISTRY, first=1))["task"]["registeredModels"]
        assert [r["id"] for r in newest["nodes"]] == [candidate["id"]]
        assert newest["totalCount"] == len(registry) and newest["pageInfo"]["hasNextPage"]
        rest = (await run(s, REGISTRY, first=50, after=newest["pageInfo"]["endCursor"]))["task"]["registeredModels"]
        oldest = (await run(s, REGISTRY, order="OLDEST_FIRST"))["task"]["registeredModels"]["nodes"]
        assert [r["id"] for r in newest["nodes"] + rest["nodes"]] == [r["id"] for r in reversed(oldest)]

    # --- round 2's examples are predicted by the candidate: what fooled round 1 no longer does
    async with session(server, annotators[0]) as s:
        for fields, label in (
            ({"text": "a superb soup", "label": "good"}, "good"),
            ({"text": "the film was not good", "label": "bad"}, "bad"),
        ):
            result = (await run(s, CREATE, input={"taskCode": "toy", "fields": fields}))["createExample"]
            assert result["__typename"] == "ExampleCreated", result
            assert result["example"]["prediction"]["fields"]["label"] == label, result
            assert result["example"]["fooled"] is False
            assert [m["model"] for m in result["example"]["modelPredictions"]] == [lineage]

    # --- a second job, cancelled while it runs, registers nothing
    await _cancel_a_running_job(server, operator, sets["train"]["id"])
    # --- a third chooses its smoothing on the round's dev split, never on its test split
    await _tune_on_the_dev_split(server, operator, sets)


TUNED = """query { trainingJobs(taskCode: "toy") { nodes {
  id status error tuneOn { id } tuningGrid
  candidate { hyperparameters parameters { ...Typed }
    tuning { dataset { datasetId size } metric chosen chosenParameters { ...Typed }
             trials { hyperparameters parameters { ...Typed } devAccuracy devItems chosen } } } } } }
fragment Typed on ParameterValue { name type boolean integer number string }"""


def _typed(values: list[dict[str, Any]]) -> dict[str, Any]:
    """Typed parameter values (ParameterValue) as a mapping: the field of each one's type holds it, the others are
    null."""
    fields = {"BOOLEAN": "boolean", "INTEGER": "integer", "NUMBER": "number", "STRING": "string"}
    out = {}
    for v in values:
        held = fields[v["type"]]
        assert all(v[f] is None for f in fields.values() if f != held), v
        out[v["name"]] = v[held]
    return out


async def _tune_on_the_dev_split(server: Server, operator: str, sets: dict[str, Any]) -> None:
    async with session(server, operator) as s:
        base = {"taskCode": "toy", "datasets": [sets["train"]["id"]], "hyperparameters": {"min_count": 1}}
        refused = (await run(s, TRAIN, input={**base, "tuneOn": sets["test"]["id"]}))["trainCandidateModel"]
        assert refused["__typename"] == "InvalidInput", refused
        assert refused["fieldErrors"][0]["field"] == ["tuneOn"] and refused["fieldErrors"][0]["rule"] == "unsuitable"
        started = (await run(s, TRAIN, input={**base, "tuneOn": sets["dev"]["id"]}))["trainCandidateModel"]
        assert started["__typename"] == "TrainingStarted", started
        job_id = started["job"]["id"]

        async def finished() -> dict[str, Any] | None:
            jobs = {j["id"]: j for j in (await run(s, TUNED))["trainingJobs"]["nodes"]}
            return jobs[job_id] if jobs[job_id]["status"] in ("SUCCEEDED", "FAILED") else None

        job = await eventually(finished, within=120, every=0.5, what="the tuning job ends")
        assert job["status"] == "SUCCEEDED", job
        assert job["tuneOn"] == {"id": sets["dev"]["id"]}
        assert job["tuningGrid"] == [{"smoothing": 1.0}, {"smoothing": 0.05}, {"smoothing": 20.0}]
        tuning = job["candidate"]["tuning"]
        assert tuning["dataset"] == {"datasetId": sets["dev"]["id"], "size": sets["dev"]["size"]}
        assert [t["hyperparameters"] for t in tuning["trials"]] == job["tuningGrid"]
        assert {t["devItems"] for t in tuning["trials"]} == {sets["dev"]["size"]}
        best = max(t["devAccuracy"] for t in tuning["trials"])
        [chosen] = [t for t in tuning["trials"] if t["chosen"]]
        assert chosen["devAccuracy"] == best and chosen["hyperparameters"] == tuning["chosen"]
        assert job["candidate"]["hyperparameters"]["smoothing"] == tuning["chosen"]["smoothing"]
        # the same values, typed
        assert [_typed(t["parameters"]) for t in tuning["trials"]] == job["tuningGrid"]
        assert _typed(tuning["chosenParameters"]) == tuning["chosen"]
        assert _typed(job["candidate"]["parameters"]) == job["candidate"]["hyperparameters"]


async def _download(http: httpx.AsyncClient, token: str, evaluation: str, fmt: str) -> httpx.Response:
    return await http.get(
        f"/evaluations/{evaluation}/predictions", params={"format": fmt}, headers={"Authorization": f"Bearer {token}"}
    )


async def _check_item_by_item(server: Server, operator: str, stranger: str, rows: dict[str, Any]) -> None:
    """Per-item predictions downloaded (JSONL and Parquet) equal a recount of the evaluations' figures, and the paired
    test's McNemar p-value equals scipy's exact binomial test on the same items."""
    cells = {name: rows[name]["cells"][0] for name in ("keyword", "words")}
    rights: dict[str, list[bool]] = {}
    async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as http:
        for name, cell in cells.items():
            evaluation = cell["evaluation"]
            response = await _download(http, operator, evaluation["id"], "jsonl")
            assert response.status_code == 200, response.text
            records = [json.loads(line) for line in response.text.splitlines()]
            n = evaluation["itemCount"] + evaluation["privateItemCount"]
            assert len(records) == n == int(response.headers["X-Dynaforge-Items"])
            assert [r["position"] for r in records] == list(range(n))
            assert {r["evaluation"] for r in records} == {evaluation["id"]}
            assert {r["dataset"] for r in records} == {cell["dataset"]["id"]}
            # the recount: right means the model's label is the gold one (the toy task's rule), and the accuracy of
            # every item is the evaluation's public and held-out figures weighed by their sizes
            for r in records:
                assert r["right"] is (r["prediction"] is not None and r["prediction"]["label"] == r["fields"]["label"])
                assert r["fooled"] is not r["right"]
            public = {m["name"]: m["value"] for m in evaluation["metrics"]}["accuracy"]
            held = {m["name"]: m["value"] for m in evaluation["privateMetrics"] or []}.get("accuracy", 0.0)
            recount = sum(r["right"] for r in records) / n
            weighed = (public * evaluation["itemCount"] + held * evaluation["privateItemCount"]) / n
            assert recount == pytest.approx(weighed), (name, recount, weighed)
            rights[name] = [r["right"] for r in records]
            # the same records as Parquet
            response = await _download(http, operator, evaluation["id"], "parquet")
            assert response.status_code == 200, response.text
            table = pq.read_table(io.BytesIO(response.content)).to_pylist()
            assert [t["right"] for t in table] == rights[name]
            assert [json.loads(t["fields"]) for t in table] == [r["fields"] for r in records]
            # a writer who neither owns the task nor submitted the model sees no such evaluation
            refused = await _download(http, stranger, evaluation["id"], "jsonl")
            assert refused.status_code == 404, refused.text
            assert (await _download(http, operator, evaluation["id"], "csv")).status_code == 400

        keyword, words = rows["keyword"]["model"]["model"]["id"], rows["words"]["model"]["model"]["id"]
        dataset = cells["keyword"]["dataset"]["id"]
        async with session(server, operator) as s:
            test = (await run(s, PAIRED, m=words, a=keyword, d=dataset))["task"]["pairedTest"]
        assert (test["model"]["id"], test["against"]["id"], test["dataset"]["id"]) == (words, keyword, dataset)
        pairs = list(zip(rights["words"], rights["keyword"], strict=True))
        assert test["items"] == len(pairs)
        assert test["bothRight"] == sum(a and b for a, b in pairs)
        assert test["onlyModelRight"] == sum(a and not b for a, b in pairs)
        assert test["onlyAgainstRight"] == sum(b and not a for a, b in pairs)
        assert test["bothWrong"] == sum(not a and not b for a, b in pairs)
        discordant = test["onlyModelRight"] + test["onlyAgainstRight"]
        assert discordant > 0
        expected = binomtest(test["onlyModelRight"], discordant, 0.5, alternative="two-sided").pvalue
        assert test["mcnemarPValue"] == pytest.approx(expected, rel=1e-9)
        assert test["mcnemarStatistic"] == min(test["onlyModelRight"], test["onlyAgainstRight"])
        assert test["metric"] == "accuracy"
        assert test["modelValue"] == pytest.approx(sum(rights["words"]) / len(pairs))
        assert test["againstValue"] == pytest.approx(sum(rights["keyword"]) / len(pairs))
        difference = test["difference"]
        assert difference["value"] == pytest.approx(test["modelValue"] - test["againstValue"])
        assert difference["low"] <= difference["value"] <= difference["high"]
        assert 0 <= test["bootstrapPValue"] <= 1 and test["resamples"] == 50
        # owners and admins only: a writer gets null with FORBIDDEN
        body = (
            await http.post(
                "/graphql",
                json={"query": PAIRED, "variables": {"m": words, "a": keyword, "d": dataset}},
                headers={"Authorization": f"Bearer {stranger}"},
            )
        ).json()
        assert body["data"]["task"]["pairedTest"] is None
        assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN", body


async def _cancel_a_running_job(server: Server, operator: str, train_set: str) -> None:
    """A second job is cancelled while it runs, and registers nothing (run after the loop, on its data)."""
    async with session(server, operator) as s:
        registry_before = (await run(s, REGISTRY))["task"]["registeredModels"]
        sets = train_set
        started = (
            await run(
                s,
                TRAIN,
                input={"taskCode": "toy", "datasets": [sets], "hyperparameters": {"pause_s": 30.0}, "seed": 1},
            )
        )["trainCandidateModel"]
        assert started["__typename"] == "TrainingStarted", started
        job_id = started["job"]["id"]

        async def running() -> bool:
            jobs = {j["id"]: j for j in (await run(s, JOBS))["trainingJobs"]["nodes"]}
            return jobs[job_id]["status"] == "RUNNING" and jobs[job_id]["stage"] == "counting words"

        await eventually(running, within=60, every=0.5, what="the job runs")
        cancelled = (await run(s, CANCEL, input={"id": job_id}))["cancelTraining"]
        assert cancelled["__typename"] == "TrainingCancelled", cancelled

        async def stopped() -> dict[str, Any] | None:
            jobs = {j["id"]: j for j in (await run(s, JOBS))["trainingJobs"]["nodes"]}
            return jobs[job_id] if jobs[job_id]["status"] != "RUNNING" else None

        job = await eventually(stopped, within=15, every=0.5, what="the job stops")
        assert job["status"] == "CANCELLED" and job["candidate"] is None, job
        again = (await run(s, CANCEL, input={"id": job_id}))["cancelTraining"]
        assert again["__typename"] == "Conflict", again
        assert (await run(s, REGISTRY))["task"]["registeredModels"] == registry_before
