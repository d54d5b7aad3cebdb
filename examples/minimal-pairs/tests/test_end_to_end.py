"""The minimal-pairs task on a real ``dynaforge serve``, as a community runs it once the package is installed beside
the server: annotators write pairs over GraphQL and fool the bigram model (or not), an admin validates them, the
accepted ones become round 1's data sets, an owner imports a scoring set, a model builder serves a language model
of their own with ``dynaforge model-server`` and submits it, and the leaderboard ranks it against the task's target,
with pair accuracy per phenomenon. On SQLite, and on PostgreSQL where one is running (with ``CI=true`` a missing
PostgreSQL fails the test instead of skipping it).

Everything here goes through the server's public surface: the ``dynaforge`` command and GraphQL over HTTP."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dynaforge.testing import LiveServer, free_port, live_server

BIN = Path(sys.executable).parent

# The owner's scoring set: pairs written for these tests, two or three per phenomenon, grammatical one first or
# second at random. The bigram model gets most right; the bag-of-words baseline cannot see agreement or order.
SCORING = [
    ("The dog sleeps near the river.", "The dog sleep near the river.", "a", "agreement"),
    ("The cats walks at home.", "The cats walk at home.", "b", "agreement"),
    ("The teacher reads every morning.", "The teacher read every morning.", "a", "agreement"),
    ("The birds does not sing.", "The birds do not sing.", "b", "negation"),
    ("My sister does not run.", "My sister do not run.", "a", "negation"),
    ("Yesterday the dog runned home.", "Yesterday the dog ran home.", "b", "tense"),
    ("Yesterday the farmer ate at home.", "Yesterday the farmer eated at home.", "a", "tense"),
    ("The children play in the garden.", "The children in the garden play.", "a", "word-order"),
    ("The dog in the garden walks.", "The dog walks in the garden.", "b", "word-order"),
    ("The teachers have an egg.", "The teachers have a egg.", "a", "determiner"),
]


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request, tmp_path) -> Iterator[LiveServer]:
    # this package alone, whatever else is installed; the model builder's server runs on this machine
    with live_server(tmp_path, request.param, load_plugins="minimal-pairs", outbound_allow="127.0.0.1") as srv:
        srv.user("operator", admin=True)
        srv.user("annotator")
        srv.user("builder")
        srv.start()
        yield srv


EXAMPLE = "id status fooled fields prediction { fields }"
CREATE = (
    "mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename "
    f"... on ExampleCreated {{ fooled example {{ {EXAMPLE} }} }} "
    "... on Error { message } ... on InvalidInput { fieldErrors { field rule } } } }"
)
EVALUATIONS = (
    "query($id: ID!) { model(id: $id) { name status evaluations(first: 20) { nodes { status error "
    "dataset { name } metrics { name value } slices { slice groups { group size metrics { name value } } } } } } }"
)


def _pair(a: str, b: str, grammatical: str, phenomenon: str) -> dict[str, str]:
    return {"sentence_a": a, "sentence_b": b, "grammatical": grammatical, "phenomenon": phenomenon}


def _wait_evaluated(server: LiveServer, model_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        model = server.gql("operator", EVALUATIONS, id=model_id)["model"]
        if model["status"] in ("DONE", "FAILED"):
            return model
        time.sleep(0.5)
    pytest.fail(f"model {model_id} was not evaluated in time: {model}")


def test_collect_validate_submit_and_rank(server: LiveServer, tmp_path: Path):
    task = server.gql("annotator", '{ task(code: "minimal-pairs") { name labels currentRound { number } } }')
    assert task["task"] == {"name": "Minimal pairs", "labels": ["a", "b"], "currentRound": {"number": 1}}

    # -- collection: the annotator fools the bigram model with a pair its corpus never shows, and fails to with one
    #    it knows; a pair that is no minimal pair is refused with the rule, and nothing is stored
    written = {}
    pairs = [
        ("fools", _pair("My sister has an apple.", "My sister has a apple.", "a", "determiner")),
        ("fools", _pair("The farmer has a orange.", "The farmer has an orange.", "b", "determiner")),
        ("fools", _pair("The birds want a cake.", "The birds wants a cake.", "a", "agreement")),
        ("holds", _pair("The dogs walk at home.", "The dogs walks at home.", "a", "agreement")),
        ("holds", _pair("Yesterday the cat sleeped.", "Yesterday the cat slept.", "b", "tense")),
        ("holds", _pair("The bird sings on the hill.", "The bird sing on the hill.", "a", "agreement")),
        ("holds", _pair("The children does not eat.", "The children do not eat.", "b", "negation")),
        ("holds", _pair("Yesterday the teachers walked home.", "Yesterday the teachers walks home.", "a", "tense")),
        ("holds", _pair("The cat plays after school.", "The cat after school plays.", "a", "word-order")),
        ("holds", _pair("Our neighbour do not sing.", "Our neighbour does not sing.", "b", "negation")),
    ]
    for expected, fields in pairs:
        created = server.gql("annotator", CREATE, input={"taskCode": "minimal-pairs", "fields": fields})
        created = created["createExample"]
        assert created["__typename"] == "ExampleCreated", created
        assert created["fooled"] is (expected == "fools"), (fields, created)
        # the task read the model's two log-likelihoods into the sentence it prefers
        prediction = created["example"]["prediction"]["fields"]
        assert prediction["grammatical"] != fields["grammatical"] if expected == "fools" else True
        assert set(prediction["log_likelihoods"]) == {"a", "b"}
        written[created["example"]["id"]] = expected
    refused = server.gql(
        "annotator",
        CREATE,
        input={"taskCode": "minimal-pairs", "fields": _pair("The dog walks.", "A bird sang at dawn.", "a", "other")},
    )["createExample"]
    assert refused["__typename"] == "InvalidInput" and refused["fieldErrors"] == [
        {"field": ["sentence_b"], "rule": "minimal_pair"}
    ]
    stats = server.gql("annotator", '{ task(code: "minimal-pairs") { currentRound { collected fooled } } }')
    assert stats["task"]["currentRound"] == {"collected": 10, "fooled": 3}

    # -- validation: an admin's vote decides each
    validate = (
        "mutation($input: ValidateExampleInput!) { validateExample(input: $input) { __typename "
        "... on ValidationRecorded { decided example { status } } ... on Error { message } } }"
    )
    for example_id in written:
        voted = server.gql("operator", validate, input={"id": example_id, "label": "CORRECT"})
        voted = voted["validateExample"]
        assert voted == {"__typename": "ValidationRecorded", "decided": True, "example": {"status": "ACCEPTED"}}, voted

    # -- the accepted examples become round 1's train, dev and test sets
    made = server.gql(
        "operator",
        "mutation($input: CreateRoundDatasetsInput!) { createRoundDatasets(input: $input) { __typename "
        "... on DatasetsCreated { datasets { name split size } } ... on Error { message } } }",
        input={"taskCode": "minimal-pairs", "round": 1, "seed": 1},
    )["createRoundDatasets"]
    assert made["__typename"] == "DatasetsCreated", made
    # ten pairs make a test split of one: under the platform's minimum for a scoring set (MIN_SCORING_SET_SIZE), so
    # it is kept hidden and gets no perturbed copy; the owner's scoring set below is what the board ranks on
    splits = {d["name"]: (d["split"], d["size"]) for d in made["datasets"]}
    assert splits == {"r1-train": ("TRAIN", 8), "r1-dev": ("DEV", 1), "r1-test": ("TEST", 1)}

    # -- the owner's scoring set, imported with the core's JSONL importer
    scoring = tmp_path / "scoring.jsonl"
    scoring.write_text(
        "".join(
            json.dumps({"format": "dynaforge.example/1", "status": "ACCEPTED", "fields": _pair(*row)}) + "\n"
            for row in SCORING
        )
    )
    # pairs as a published benchmark holds them: their gold is no secret, so every item is public (no private part)
    server.command("datasets", "import", str(scoring), "--task", "minimal-pairs", "--format", "jsonl", "--name",
                   "pairs-v1", "--public-share", "1")  # fmt: skip

    # -- a model builder serves a language model of their own (the bag-of-words baseline) and submits it
    port = free_port()
    config = {"factory": "dynaforge_minimal_pairs.ngram:load", "kwargs": {"use_context": False}}
    server.spawn([str(BIN / "dynaforge"), "model-server", "--backend", "python", "--config", json.dumps(config),
                  "--port", str(port), "--name", "bag-of-words"], "model-server",
                 f"http://127.0.0.1:{port}/health")  # fmt: skip
    submitted = server.gql(
        "builder",
        "mutation($input: SubmitModelInput!) { submitModel(input: $input) { __typename "
        "... on ModelSubmitted { model { id } } ... on Error { message } } }",
        input={
            "taskCode": "minimal-pairs",
            "name": "bag-of-words",
            "backend": "http",
            "config": {"url": f"http://127.0.0.1:{port}"},
            "published": True,
        },  # fmt: skip
    )["submitModel"]
    assert submitted["__typename"] == "ModelSubmitted", submitted
    # ... and the task's own target is evaluated beside it
    targets = server.gql(
        "operator",
        "mutation($input: EvaluateRoundTargetsInput!) { evaluateRoundTargets(input: $input) { __typename "
        "... on RoundTargetsQueued { models { id name } } ... on Error { message } } }",
        input={"taskCode": "minimal-pairs", "published": True},
    )["evaluateRoundTargets"]
    assert targets["__typename"] == "RoundTargetsQueued", targets
    [target] = targets["models"]

    scored = {}
    for model_id in (submitted["model"]["id"], target["id"]):
        model = _wait_evaluated(server, model_id)
        evaluated = [(e["dataset"]["name"], e["status"], e["error"]) for e in model["evaluations"]["nodes"]]
        assert model["status"] == "DONE", evaluated
        evaluations = {e["dataset"]["name"]: e for e in model["evaluations"]["nodes"]}
        assert all(e["status"] == "DONE" for e in evaluations.values()), evaluations
        pairs_v1 = evaluations["pairs-v1"]
        scored[model_id] = {m["name"]: m["value"] for m in pairs_v1["metrics"]}["accuracy"]
        # pair accuracy per phenomenon, from the plugin's slice
        [phenomena] = [s for s in pairs_v1["slices"] if s["slice"] == "minimal-pairs-phenomenon"]
        sizes = {g["group"]: g["size"] for g in phenomena["groups"]}
        assert sizes == {"agreement": 3, "negation": 2, "tense": 2, "word-order": 2, "determiner": 1}
    # the bigram model misses one pair ("read" is also a past tense in its corpus); the bag of words gets 3 of 10:
    # it cannot tell the sentences of a word-order pair apart (a tie counts as wrong), nor most agreement pairs
    assert scored[target["id"]] == pytest.approx(0.9)
    assert scored[submitted["model"]["id"]] == pytest.approx(0.3)

    # -- the leaderboard ranks the two by pair accuracy
    board = server.gql(
        "builder",
        '{ task(code: "minimal-pairs") { leaderboard(sort: DYNASCORE) { principalMetric '
        "rows { rank model { modelId name } metrics { name value } } } } }",
    )["task"]["leaderboard"]
    assert board["principalMetric"] == "accuracy"
    # ranked (no model has a fairness figure, the task has no fairness copy: that axis weighs 0 by default)
    ranked = [(row["rank"], row["model"]["modelId"]) for row in board["rows"]]
    assert ranked == [(1, target["id"]), (2, submitted["model"]["id"])], board
