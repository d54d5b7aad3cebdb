"""Data sets from rounds, model submissions and their queued evaluations; who sees gold targets and configs."""

from __future__ import annotations

import pytest
from support import by_name, gid, make_user, register_user

from dynaforge.db.models import DatasetAccess, EvaluationStatus
from dynaforge.errors import (
    AlreadyExists,
    Forbidden,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    QuotaExceeded,
)
from dynaforge.services import auth, datasets, examples, submissions, tasks, validation
from dynaforge.services.actor import Actor

KEYWORD = {"callable": "toy_plugin:keyword_model"}


@pytest.fixture
async def setup(platform):
    platform.settings.examples_per_minute = 1000
    owner, author, builder = (
        await make_user(platform, "owner1"),
        await make_user(platform, "author1"),
        await make_user(platform, "builder1"),
    )
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner.user_id)
    ids = []
    for i in range(20):
        outcome = await examples.submit(
            platform, author, task_code="toy", fields={"text": f"good day {i}", "label": "bad"}
        )
        ids.append(outcome.example.id)
    for example_id in ids[:17]:
        await validation.validate(platform, owner, example_id, "CORRECT")
    await validation.validate(platform, owner, ids[17], "INCORRECT")
    return {"owner": owner, "author": author, "builder": builder, "accepted": ids[:17]}


async def test_round_datasets_split_deterministically_and_freeze_examples(platform, setup):
    with pytest.raises(Forbidden):
        await datasets.build_from_round(platform, setup["builder"], "toy", 1)
    made = await datasets.build_from_round(platform, setup["owner"], "toy", 1, seed=3)
    assert [(d.name, d.access, d.size) for d in made] == [
        ("r1-train", DatasetAccess.STANDARD, 13),
        ("r1-dev", DatasetAccess.STANDARD, 2),
        ("r1-test", DatasetAccess.SCORING, 2),
    ]  # 17 accepted: 13.6 / 1.7 / 1.7 floor to 13 / 1 / 1; the 2 left go to the largest remainders (.7 and .7)
    with pytest.raises(AlreadyExists):
        await datasets.build_from_round(platform, setup["owner"], "toy", 1)
    with pytest.raises(NotFound):
        await datasets.build_from_round(platform, setup["owner"], "toy", 9)

    pages = {}
    for d in made:
        page = await datasets.items(platform, setup["owner"], d.id, first=500)
        pages[d.name] = page
        assert page.gold_visible and [i.position for i in page.items] == list(range(d.size))
    used = [i.example_id for page in pages.values() for i in page.items]
    assert sorted(used) == sorted(setup["accepted"])  # every accepted example once, nothing else
    assert all(i.fields["label"] == "bad" for i in pages["r1-train"].items)
    assert datasets.split_sizes(17, [0.8, 0.1, 0.1]) == [13, 2, 2]
    assert datasets.split_sizes(10, [0.5, 0.5]) == [5, 5]
    assert sum(datasets.split_sizes(101, [0.8, 0.1, 0.1])) == 101


async def test_gold_targets_of_scoring_and_hidden_sets_stay_on_the_server(platform, setup):
    made = {d.name: d for d in await datasets.build_from_round(platform, setup["owner"], "toy", 1, seed=1)}
    test_set, train_set = made["r1-test"], made["r1-train"]
    for who in (setup["builder"], Actor.anonymous()):
        page = await datasets.items(platform, who, test_set.id)
        assert not page.gold_visible and page.items and all("label" not in i.fields for i in page.items)
        assert all(i.example_id is None for i in page.items)
        assert (await datasets.items(platform, who, train_set.id)).gold_visible
    owner_page = await datasets.items(platform, setup["owner"], test_set.id)
    assert owner_page.gold_visible and all("label" in i.fields for i in owner_page.items)

    async with platform.db.write() as s:
        row = await s.get(type(test_set), test_set.id)
        row.access = DatasetAccess.HIDDEN
    with pytest.raises(NotFound):
        await datasets.items(platform, setup["builder"], test_set.id)
    assert test_set.id not in {d.id for d in await datasets.list_datasets(platform, setup["builder"], "toy")}
    assert test_set.id in {d.id for d in await datasets.list_datasets(platform, setup["owner"], "toy")}
    with pytest.raises(InvalidInput, match="first"):
        await datasets.items(platform, setup["owner"], train_set.id, first=0)


async def test_submissions_queue_one_evaluation_per_scoring_set_and_are_throttled(platform, setup):
    await datasets.build_from_round(platform, setup["owner"], "toy", 1)
    builder = setup["builder"]
    with pytest.raises(NotAuthenticated):
        await submissions.submit_model(
            platform, Actor.anonymous(), task_code="toy", name="m", backend="python", config=KEYWORD
        )
    with pytest.raises(InvalidInput) as error:
        await submissions.submit_model(
            platform,
            builder,
            task_code="toy",
            name="m",
            backend="nope",
            config={},
            card={"parameters": -1, "paper": "ftp://x", "colour": "red"},
        )
    assert "backend" in str(error.value)
    with pytest.raises(InvalidInput) as error:
        await submissions.submit_model(
            platform,
            builder,
            task_code="toy",
            name="m",
            backend="python",
            config=KEYWORD,
            card={"parameters": -1, "paper": "ftp://x", "colour": "red"},
        )
    assert {e.field for e in error.value.field_errors} == {"card.parameters", "card.paper", "card.colour"}

    card = {"parameters": 12, "license": "MIT", "paper": "https://example.org/paper", "description": "keywords"}
    model, queued = await submissions.submit_model(
        platform, builder, task_code="toy", name="kw", backend="python", config=KEYWORD, card=card
    )
    assert model.card == card and not model.published
    pairs = await submissions.evaluations_of(platform, model.id)
    assert [(d.name, e.status) for e, d in pairs] == [("r1-test", EvaluationStatus.QUEUED)] and len(queued) == 1
    for i in range(2):
        await submissions.submit_model(
            platform, builder, task_code="toy", name=f"kw{i}", backend="python", config=KEYWORD
        )
    with pytest.raises(QuotaExceeded, match="3 submissions"):
        await submissions.submit_model(platform, builder, task_code="toy", name="kw9", backend="python", config=KEYWORD)


async def test_unpublished_and_anonymous_models(platform, setup):
    builder, other, owner = setup["builder"], setup["author"], setup["owner"]
    private, _ = await submissions.submit_model(
        platform, builder, task_code="toy", name="p", backend="python", config=KEYWORD
    )
    with pytest.raises(NotFound):
        await submissions.get_model(platform, other, private.id)
    with pytest.raises(NotFound):
        await submissions.get_model(platform, Actor.anonymous(), private.id)
    assert (await submissions.get_model(platform, builder, private.id))[1] is True
    assert (await submissions.get_model(platform, owner, private.id))[1] is True
    public, _ = await submissions.submit_model(
        platform, builder, task_code="toy", name="q", backend="python", config=KEYWORD, published=True, anonymous=True
    )
    row, privileged = await submissions.get_model(platform, other, public.id)
    assert row.id == public.id and privileged is False


MODEL = """query($id: ID!) { model(id: $id) { id name submitter { username } config
  card { parameters license paper description trainingData }
  evaluations { totalCount nodes { dataset { name access } status progress error } } } }"""
SUBMIT = """mutation($input: SubmitModelInput!) { submitModel(input: $input) {
  __typename ... on ModelSubmitted { model { id } } ... on Error { message } } }"""


async def test_graphql_contract(gql, platform, setup):
    token, _ = await register_user(gql, "modeller")
    reader, _ = await register_user(gql, "onlooker")
    built = await gql(
        'mutation { createRoundDatasets(input: {taskCode: "toy", round: 1}) { __typename } }', token=token
    )
    assert built["createRoundDatasets"]["__typename"] == "Forbidden"
    await datasets.build_from_round(platform, setup["owner"], "toy", 1)
    listed = await gql('{ datasets(taskCode: "toy") { totalCount nodes { name access size } } }', token=None)
    assert sorted(d["name"] for d in listed["datasets"]["nodes"]) == ["r1-dev", "r1-test", "r1-train"]
    assert listed["datasets"]["totalCount"] == 3
    # Oldest first, in pages: the second page of one starts after the first's cursor.
    paged = """query($after: String) { datasets(taskCode: "toy", first: 2, after: $after) {
      nodes { name } pageInfo { hasNextPage hasPreviousPage endCursor } } }"""
    first = (await gql(paged, {"after": None}, token=None))["datasets"]
    rest = (await gql(paged, {"after": first["pageInfo"]["endCursor"]}, token=None))["datasets"]
    assert first["pageInfo"]["hasNextPage"] and not first["pageInfo"]["hasPreviousPage"]
    assert not rest["pageInfo"]["hasNextPage"] and rest["pageInfo"]["hasPreviousPage"]
    assert [d["name"] for d in first["nodes"] + rest["nodes"]] == [d["name"] for d in listed["datasets"]["nodes"]]

    result = await gql(
        SUBMIT,
        {
            "input": {
                "taskCode": "toy",
                "name": "kw",
                "backend": "python",
                "config": KEYWORD,
                "card": {"parameters": 3},
                "published": True,
                "anonymous": True,
            }
        },
        token=token,
    )
    model_id = result["submitModel"]["model"]["id"]
    mine = (await gql(MODEL, {"id": model_id}, token=token))["model"]
    assert (
        mine["submitter"] == {"username": "modeller"}
        and mine["config"] == KEYWORD
        and mine["card"] == {"parameters": 3, "license": None, "paper": None, "description": None, "trainingData": None}
    )
    assert mine["evaluations"] == {
        "totalCount": 1,
        "nodes": [
            {"dataset": {"name": "r1-test", "access": "SCORING"}, "status": "QUEUED", "progress": 0.0, "error": None}
        ],
    }
    theirs = (await gql(MODEL, {"id": model_id}, token=reader))["model"]
    assert theirs["submitter"] is None and theirs["config"] is None  # anonymous, and configs may hold credentials
    assert (await gql(MODEL, {"id": gid("Model", 999999)}, token=token))["model"] is None


async def test_scoring_sets_get_seeded_perturbed_copies_that_submissions_are_queued_on(platform, setup, monkeypatch):
    task = platform.plugins.registry.tasks["toy"]
    monkeypatch.setattr(task, "perturbations", ("uppercase", "typo"))
    made = await datasets.build_from_round(platform, setup["owner"], "toy", 1, seed=5)
    by_name = {d.name: d for d in made}
    parent = by_name["r1-test"]
    copies = [d for d in made if d.parent_id == parent.id]
    assert sorted(d.name for d in copies) == ["r1-test~typo", "r1-test~uppercase"]
    assert all(d.source == "perturbed" and d.access == DatasetAccess.SCORING and d.seed == 5 for d in copies)

    originals = (await datasets.items(platform, setup["owner"], parent.id)).items
    upper = (await datasets.items(platform, setup["owner"], by_name["r1-test~uppercase"].id)).items
    assert len(upper) == len(originals)  # every text changes when upper-cased
    for item in upper:
        source = originals[item.original_position]
        assert item.fields["text"] == source.fields["text"].upper() and item.fields["label"] == source.fields["label"]
    hidden = (await datasets.items(platform, setup["builder"], by_name["r1-test~typo"].id)).items
    assert all("label" not in i.fields for i in hidden)

    model, queued = await submissions.submit_model(
        platform, setup["builder"], task_code="toy", name="kw", backend="python", config=KEYWORD
    )
    names = [d.name for _, d in await submissions.evaluations_of(platform, model.id)]
    assert names == ["r1-test", "r1-test~typo", "r1-test~uppercase"] and len(queued) == 3


async def test_uploaded_datasets_are_validated_all_or_nothing(platform, setup):
    owner = setup["owner"]
    records = [("line 1", {"text": "good stuff", "label": "good"}), ("line 2", {"text": "x" * 101, "label": "meh"})]
    with pytest.raises(InvalidInput) as error:
        await datasets.create_dataset(platform, owner, "toy", "held-out", records)
    assert {e.field for e in error.value.field_errors} == {"line 2.text", "line 2.label"}
    assert await datasets.list_datasets(platform, owner, "toy") == []
    with pytest.raises(Forbidden):
        await datasets.create_dataset(platform, setup["builder"], "toy", "held-out", records[:1])
    made = await datasets.create_dataset(platform, owner, "toy", "held-out", records[:1], access=DatasetAccess.HIDDEN)
    assert [(d.name, d.source, d.size) for d in made] == [("held-out", "upload", 1)]
    with pytest.raises(AlreadyExists):
        await datasets.create_dataset(platform, owner, "toy", "held-out", records[:1])
    with pytest.raises(InvalidInput, match="name"):
        await datasets.create_dataset(platform, owner, "toy", "Bad Name", records[:1])


def test_cli_imports_a_dataset_through_a_task_importer(tmp_path):
    import asyncio

    from click.testing import CliRunner

    from dynaforge import cli
    from dynaforge.db.engine import Database
    from dynaforge.db.migrate import upgrade

    url = f"sqlite+aiosqlite:///{tmp_path}/cli.db"

    async def migrate():
        database = Database(url)
        await upgrade(database)
        await database.dispose()

    asyncio.run(migrate())
    path = tmp_path / "held-out.tsv"
    path.write_text("sentence\tlabel\na lovely walk in the rain\t1\nthe soup was cold and late\t0\n", encoding="utf-8")
    result = CliRunner().invoke(
        cli.main,
        [
            "datasets",
            "import",
            "--task",
            "sentiment",
            "--format",
            "sst",
            "--name",
            "held-out",
            "--access",
            "STANDARD",
            str(path),
            "--database-url",
            url,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "data set held-out: 2 examples (standard)" in result.output
    again = CliRunner().invoke(
        cli.main,
        [
            "datasets",
            "import",
            "--task",
            "sentiment",
            "--format",
            "sst",
            "--name",
            "held-out",
            "--access",
            "HIDDEN",
            str(path),
            "--database-url",
            url,
        ],
    )
    assert again.exit_code == 1 and "already has a data set named 'held-out'" in again.output


PREDICT = """mutation($input: SubmitPredictionsInput!) { submitPredictions(input: $input) {
  __typename ... on ModelSubmitted {
    model { id status evaluations { nodes { status metrics { name value } throughput } } } }
  ... on InvalidInput { fieldErrors { field } } ... on Error { message } } }"""


async def test_uploaded_predictions_are_scored_but_not_timed(gql, platform, setup):
    made = {d.name: d for d in await datasets.build_from_round(platform, setup["owner"], "toy", 1, seed=2)}
    token, _ = await register_user(gql, "uploader")
    size = made["r1-test"].size
    wrong_count = {"taskCode": "toy", "name": "mine", "datasetName": "r1-test", "predictions": [{"label": "bad"}]}
    result = (await gql(PREDICT, {"input": wrong_count}, token=token))["submitPredictions"]
    assert result["fieldErrors"] == [{"field": ["predictions"]}]
    missing = {**wrong_count, "datasetName": "r9-test"}
    assert (await gql(PREDICT, {"input": missing}, token=token))["submitPredictions"]["__typename"] == "NotFound"
    # every accepted example says 'bad' in the toy fixture: all-'bad' predictions are right, all-'good' ones wrong
    right = {**wrong_count, "predictions": [{"label": "bad"}] * size}
    model = (await gql(PREDICT, {"input": right}, token=token))["submitPredictions"]["model"]
    assert model["status"] == "DONE"
    assert [{**e, "metrics": by_name(e["metrics"])} for e in model["evaluations"]["nodes"]] == [
        {"status": "DONE", "metrics": {"accuracy": 1.0, "macro_f1": 1.0}, "throughput": None}
    ]
    wrong = {**wrong_count, "name": "contrary", "predictions": [{"label": "good"}] * size}
    model = (await gql(PREDICT, {"input": wrong}, token=token))["submitPredictions"]["model"]
    assert by_name(model["evaluations"]["nodes"][0]["metrics"])["accuracy"] == 0.0


UPLOAD_COPY = """
mutation($input: UploadPerturbedCopyInput!) {
  uploadPerturbedCopy(input: $input) {
    __typename
    ... on DatasetsCreated { datasets { name source perturbation perturbationKind parent { id } size } }
    ... on Error { message }
    ... on InvalidInput { fieldErrors { field rule } }
  }
}"""


async def test_owners_upload_a_perturbed_copy_through_a_multipart_request(gql, platform, setup):
    import json

    from dynaforge.api.node import parse_id
    from dynaforge.db.models import ModelRow

    made = {d.name: d for d in await datasets.build_from_round(platform, setup["owner"], "toy", 1, seed=3)}
    test_set = made["r1-test"]
    model, _ = await submissions.submit_model(
        platform, setup["builder"], task_code="toy", name="k", backend="python", config=KEYWORD
    )
    token, user_id = await register_user(gql, "copyowner")

    async def post(content: bytes, **fields):
        variables = {
            "input": {
                "datasetId": gid("Dataset", test_set.id),
                "perturbation": "dialect",
                "kind": "FAIRNESS",
                "file": None,
                **fields,
            }
        }
        response = await gql.http.post(
            "/graphql",
            data={
                "operations": json.dumps({"query": UPLOAD_COPY, "variables": variables}),
                "map": json.dumps({"0": ["variables.input.file"]}),
            },
            files={"0": ("copy.jsonl", content, "application/octet-stream")},
            headers={"Apollo-Require-Preflight": "true", "Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200, response.text
        return response.json()["data"]["uploadPerturbedCopy"]

    lines = b"".join(
        json.dumps({"original_position": i, "text": f"goood day {i}"}).encode() + b"\n" for i in range(test_set.size)
    )
    assert (await post(lines))["__typename"] == "Forbidden"
    await tasks.grant_ownership(platform, Actor.system(), "toy", parse_id(user_id, "id", "User"))
    refused = await post(lines + b'{"original_position": 99, "text": "far away"}\n')
    assert refused["__typename"] == "InvalidInput"
    assert refused["fieldErrors"] == [{"field": [f"line {test_set.size + 1}", "original_position"], "rule": "original"}]
    added = await post(lines)
    assert added == {
        "__typename": "DatasetsCreated",
        "datasets": [
            {
                "name": "r1-test~dialect",
                "source": "UPLOAD",
                "perturbation": "dialect",
                "perturbationKind": "FAIRNESS",
                "parent": {"id": gid("Dataset", test_set.id)},
                "size": test_set.size,
            }
        ],
    }
    assert (await post(lines))["__typename"] == "AlreadyExists"
    evaluations = {d.name: e.status for e, d in await submissions.evaluations_of(platform, model.id)}
    assert evaluations["r1-test~dialect"] == EvaluationStatus.QUEUED
    async with platform.db.session() as s:
        assert (await s.get(ModelRow, model.id)).status == "EVALUATING"


async def test_backends_that_run_code_are_for_admins_only(platform, setup, monkeypatch):
    """The production default: models run over http or transformers; a python import path (code the worker would
    run, with the server's environment and secrets) is refused to model builders and task owners alike, as a
    submission and as a target model; admins may use it."""
    monkeypatch.setattr(platform.settings, "submission_backends", "http,transformers")
    await datasets.build_from_round(platform, setup["owner"], "toy", 1)
    with pytest.raises(InvalidInput) as refused:
        await submissions.submit_model(
            platform, setup["builder"], task_code="toy", name="code", backend="python", config=KEYWORD
        )
    assert refused.value.field_errors[0].field == "backend" and refused.value.field_errors[0].rule == "not_allowed"
    with pytest.raises(InvalidInput) as refused:
        await submissions.submit_model(
            platform, setup["owner"], task_code="toy", name="owned", backend="python", config=KEYWORD
        )
    assert refused.value.field_errors[0].rule == "not_allowed" and "admins only" in refused.value.message
    with pytest.raises(InvalidInput) as refused:
        await tasks.set_target_models(
            platform, setup["owner"], "toy", [{"name": "code", "backend": "python", "config": KEYWORD}]
        )
    assert refused.value.field_errors[0].field == "models[0].backend"
    admin = await make_user(platform, "root1", admin=True)
    model, queued = await submissions.submit_model(
        platform, admin, task_code="toy", name="admin's", backend="python", config=KEYWORD
    )
    assert queued
    remote, _ = await submissions.submit_model(
        platform, setup["builder"], task_code="toy", name="remote", backend="http", config={"url": "http://127.0.0.1:9"}
    )
    assert remote.backend == "http"


async def test_transformers_models_from_non_admins_name_a_hub_commit(platform, setup, tmp_path):
    """A local folder reads the server's own files, and a branch can change the weights under a round: model
    builders and owners name owner/name at a commit; admins may name a folder."""
    await datasets.build_from_round(platform, setup["owner"], "toy", 1)
    commit = "0123456789abcdef0123456789abcdef01234567"
    for who in ("builder", "owner"):
        for config, words in (
            ({"path": str(tmp_path)}, "folder on the server"),
            ({"path": "/etc"}, "folder on the server"),
            ({"path": "../models/x"}, "folder on the server"),
            ({"path": "acme/sentiment-base"}, "must name the hub commit"),
            ({"path": "acme/sentiment-base", "revision": "main"}, "must name the hub commit"),
        ):
            with pytest.raises(InvalidInput, match=words) as refused:
                await submissions.submit_model(
                    platform, setup[who], task_code="toy", name="hub", backend="transformers", config=config
                )
            assert refused.value.field_errors[0].field == "config"
    model, _ = await submissions.submit_model(
        platform,
        setup["builder"],
        task_code="toy",
        name="pinned",
        backend="transformers",
        config={"path": "acme/sentiment-base", "revision": commit},
    )
    assert model.config["revision"] == commit
    with pytest.raises(InvalidInput, match="folder on the server"):
        await tasks.set_target_models(
            platform, setup["owner"], "toy", [{"name": "local", "backend": "transformers", "config": {"path": "/srv"}}]
        )
    admin = await make_user(platform, "root3", admin=True)
    local, _ = await submissions.submit_model(
        platform, admin, task_code="toy", name="local", backend="transformers", config={"path": str(tmp_path)}
    )
    assert local.backend == "transformers"


async def test_models_on_internal_addresses_are_refused_when_submitted_or_set(platform, setup):
    """The outbound policy at the door: a model server on an internal address is refused when the model is
    submitted or set as a target, not only when it loads (a name that does not resolve yet passes, as it may not
    be up yet; it is checked again when it loads)."""
    platform.settings.outbound_allow = ""
    await datasets.build_from_round(platform, setup["owner"], "toy", 1)
    for url in ("http://127.0.0.1:8080", "http://169.254.169.254/latest", "http://[::1]:9000"):
        with pytest.raises(InvalidInput) as refused:
            await submissions.submit_model(
                platform, setup["builder"], task_code="toy", name="probe", backend="http", config={"url": url}
            )
        assert (refused.value.field_errors[0].field, refused.value.field_errors[0].rule) == ("config.url", "internal")
    with pytest.raises(InvalidInput) as refused:
        await tasks.set_target_models(
            platform,
            setup["owner"],
            "toy",
            [{"name": "probe", "backend": "http", "config": {"url": "http://10.0.0.1"}}],
        )
    assert refused.value.field_errors[0].field == "models[0].config.url"
    later, _ = await submissions.submit_model(
        platform,
        setup["builder"],
        task_code="toy",
        name="later",
        backend="http",
        config={"url": "http://models.not-up-yet.invalid"},
    )
    assert later.backend == "http"


PRIVATE = """query($id: ID!) { node(id: $id) { ... on Model { evaluations { nodes {
  scoredPart itemCount privateItemCount metrics { name value } privateMetrics { name value interval { low high } }
} } } } }"""
BOARD = """{ leaderboard(taskCode: "toy") { rows { model { name } metrics { name value } } } }"""


async def test_uploaded_predictions_show_the_public_part_until_the_round_ends(gql, platform, setup):
    """Subset queries cannot read the gold that decides the final ranking: the scores shown at once are those of the
    set's public part (the same items for every submission); the private part's appear, and rank the predictions,
    once the round has ended."""
    from dynaforge.db.models import Dataset
    from dynaforge.services import visibility

    made = {d.name: d for d in await datasets.build_from_round(platform, setup["owner"], "toy", 1, seed=2)}
    test_set = made["r1-test"]
    async with platform.db.session() as s:
        test_set = await s.get(Dataset, test_set.id)
    public = visibility.public_part(test_set, platform.settings.scoring_public_share)
    assert public == visibility.public_part(test_set, 0.5) and True in public and False in public
    # every item's gold is 'bad': right on the public part, wrong on the private part
    predictions = [{"label": "bad" if flag else "good"} for flag in public]
    model, _ = await submissions.submit_predictions(
        platform,
        setup["builder"],
        task_code="toy",
        name="split",
        dataset_name="r1-test",
        predictions=predictions,
        published=True,
    )
    query = {"id": gid("Model", model.id)}  # published: anyone reads it
    [evaluation] = (await gql(PRIVATE, query))["node"]["evaluations"]["nodes"]
    assert evaluation["scoredPart"] == "PUBLIC" and evaluation["privateMetrics"] is None
    assert (evaluation["itemCount"], evaluation["privateItemCount"]) == (public.count(True), public.count(False))
    assert by_name(evaluation["metrics"])["accuracy"] == 1.0
    [row] = (await gql(BOARD))["leaderboard"]["rows"]
    assert by_name(row["metrics"])["accuracy"] == 1.0

    await tasks.close_round(platform, setup["owner"], "toy")
    [evaluation] = (await gql(PRIVATE, query))["node"]["evaluations"]["nodes"]
    assert by_name(evaluation["metrics"])["accuracy"] == 1.0  # the public part's figures stay what they were
    assert by_name(evaluation["privateMetrics"])["accuracy"] == 0.0
    [row] = (await gql(BOARD))["leaderboard"]["rows"]
    assert by_name(row["metrics"])["accuracy"] == 0.0  # the final standing: the private part


async def test_predictions_that_cannot_be_scored_still_count_against_the_limit(platform, setup, monkeypatch):
    """Else failures would be free probes: the attempt stays, unpublished, with a FAILED evaluation that says why."""
    from sqlalchemy import select

    from dynaforge.db.models import Evaluation, ModelRow
    from dynaforge.evaluation import scoring

    await datasets.build_from_round(platform, setup["owner"], "toy", 1, seed=2)

    def broken(*args, **kwargs):
        raise ValueError("the outputs do not fit the task")

    monkeypatch.setattr(scoring, "score", broken)
    for attempt in range(tasks.DEFAULT_SUBMISSIONS_PER_DAY):
        with pytest.raises(ValueError, match="do not fit"):
            await submissions.submit_predictions(
                platform,
                setup["builder"],
                task_code="toy",
                name=f"probe{attempt}",
                dataset_name="r1-test",
                predictions=[{"label": "bad"}] * 2,
                published=True,
            )
    async with platform.db.session() as s:
        [model] = [m for m in await s.scalars(select(ModelRow)) if m.name == "probe0"]
        [evaluation] = list(await s.scalars(select(Evaluation).where(Evaluation.model_id == model.id)))
    assert model.published is False and model.status == "FAILED"
    assert evaluation.status == EvaluationStatus.FAILED and "do not fit" in evaluation.error
    monkeypatch.undo()
    with pytest.raises(QuotaExceeded):
        await submissions.submit_predictions(
            platform,
            setup["builder"],
            task_code="toy",
            name="again",
            dataset_name="r1-test",
            predictions=[{"label": "bad"}] * 2,
        )


MODEL_EVALUATIONS = """query($id: ID!) { node(id: $id) { ... on Model {
  evaluations { totalCount nodes { id dataset { name access } } } } } }"""


async def test_a_hidden_sets_figures_are_for_its_owners_only(gql, platform, setup):
    """A set made HIDDEN after models were scored on it (owners take a test set back) keeps its evaluations for the
    task's owners: the model's submitter no longer sees them, in the model's evaluations or by id."""
    from dynaforge.db.models import Dataset

    made = {d.name: d for d in await datasets.build_from_round(platform, setup["owner"], "toy", 1, seed=2)}
    model, queued = await submissions.submit_model(
        platform, setup["builder"], task_code="toy", name="k", backend="python", config=KEYWORD
    )
    async with platform.db.write() as s:
        row = await s.get(Dataset, made["r1-test"].id)
        row.access = DatasetAccess.HIDDEN
    hidden = [e for e in queued if e.dataset_id == made["r1-test"].id]
    assert len(hidden) == 1
    query = {"id": gid("Model", model.id)}
    from dynaforge.services import auth

    _, builder_token = await auth.create_token(platform, setup["builder"], name="t")
    _, owner_token = await auth.create_token(platform, setup["owner"], name="t")
    seen = (await gql(MODEL_EVALUATIONS, query, token=builder_token))["node"]["evaluations"]
    assert "HIDDEN" not in {e["dataset"]["access"] for e in seen["nodes"]}
    assert seen["totalCount"] == len(seen["nodes"]) == len(queued) - 1
    owners = (await gql(MODEL_EVALUATIONS, query, token=owner_token))["node"]["evaluations"]
    assert owners["totalCount"] == len(queued) and "HIDDEN" in {e["dataset"]["access"] for e in owners["nodes"]}
    by_id = {"id": gid("Evaluation", hidden[0].id)}
    assert (await gql("query($id: ID!) { node(id: $id) { id } }", by_id, token=builder_token))["node"] is None
    assert (await gql("query($id: ID!) { node(id: $id) { id } }", by_id, token=owner_token))["node"] is not None


async def test_no_empty_or_tiny_set_is_a_scoring_set(platform):
    """A round with four accepted examples splits 3 / 1 / 0: the empty test split is not made, and nothing is
    queued (there is nothing to score, and a model lacking figures everywhere would never rank). With more examples
    but fewer than MIN_SCORING_SET_SIZE in the test split, it is made HIDDEN; an upload that small is refused as
    SCORING, saying what to do."""
    from sqlalchemy import func, select

    from dynaforge.db.models import Evaluation

    platform.settings.examples_per_minute = 1000
    platform.settings.min_scoring_set_size = 3
    owner, author = await make_user(platform, "owner9"), await make_user(platform, "author9")
    builder = await make_user(platform, "builder9")
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner.user_id)

    async def accepted(n: int, prefix: str) -> None:
        for i in range(n):
            fields = {"text": f"{prefix} day {i}", "label": "good"}
            outcome = await examples.submit(platform, author, task_code="toy", fields=fields)
            await validation.validate(platform, owner, outcome.example.id, "CORRECT")

    await accepted(4, "fine")
    await submissions.submit_model(platform, builder, task_code="toy", name="early", backend="python", config=KEYWORD)
    made = await datasets.build_from_round(platform, owner, "toy", 1)
    assert [(d.name, d.access, d.size) for d in made] == [
        ("r1-train", DatasetAccess.STANDARD, 3),
        ("r1-dev", DatasetAccess.STANDARD, 1),
    ]
    _, queued = await submissions.submit_model(
        platform, builder, task_code="toy", name="late", backend="python", config=KEYWORD
    )
    assert queued == []
    async with platform.db.session() as s:
        assert await s.scalar(select(func.count()).select_from(Evaluation)) == 0  # the early model was not queued

    await tasks.close_round(platform, owner, "toy")
    await tasks.open_next_round(platform, owner, "toy")
    await accepted(20, "bright")  # 16 / 2 / 2: two test items, fewer than three
    made = await datasets.build_from_round(platform, owner, "toy", 2)
    test = next(d for d in made if d.name == "r2-test")
    assert (test.access, test.size) == (DatasetAccess.HIDDEN, 2) and "MIN_SCORING_SET_SIZE" in test.description
    assert not [d for d in made if d.parent_id is not None]  # no perturbed copies: it scores nothing

    records = [("line 1", {"text": "a fine day", "label": "good"}), ("line 2", {"text": "a grey day", "label": "bad"})]
    with pytest.raises(InvalidInput) as refused:
        await datasets.create_dataset(platform, owner, "toy", "tiny", records)
    [error] = refused.value.field_errors
    assert (error.field, error.rule) == ("access", "min_size") and "HIDDEN" in error.message
    [hidden] = await datasets.create_dataset(platform, owner, "toy", "tiny", records, access=DatasetAccess.HIDDEN)
    assert hidden.size == 2


async def test_a_set_whose_gold_is_public_shows_every_item(gql, platform, setup):
    """A published benchmark has no gold to keep back: imported with publicShare 1, every model is scored on the
    whole set at once (and so are its copies); a share outside (0, 1] is refused."""
    records = [(f"line {i}", {"text": f"good thing {i}", "label": "good" if i % 2 else "bad"}) for i in range(6)]
    with pytest.raises(InvalidInput) as refused:
        await datasets.create_dataset(platform, setup["owner"], "toy", "bench", records, public_share=0.0)
    assert [(e.field, e.rule) for e in refused.value.field_errors] == [("publicShare", "range")]
    [bench] = await datasets.create_dataset(platform, setup["owner"], "toy", "bench", records, public_share=1.0)
    model, _ = await submissions.submit_predictions(
        platform,
        setup["builder"],
        task_code="toy",
        name="all good",
        dataset_name="bench",
        predictions=[{"label": "good"}] * 6,
        published=True,
    )
    [evaluation] = (await gql(PRIVATE, {"id": gid("Model", model.id)}))["node"]["evaluations"]["nodes"]
    assert evaluation["scoredPart"] == "WHOLE" and evaluation["itemCount"] == 6
    assert evaluation["privateItemCount"] is None and by_name(evaluation["metrics"])["accuracy"] == 0.5
    shares = await gql("""{ datasets(taskCode: "toy") { nodes { name publicShare } } }""")
    assert by_name(shares["datasets"]["nodes"], "publicShare")["bench"] == 1.0


async def test_queued_evaluations_say_where_they_wait(gql, platform, setup):
    """Each QUEUED evaluation tells its place: 1 + the evaluations queued before it still waiting or running."""
    from dynaforge.db.models import Evaluation

    await datasets.build_from_round(platform, setup["owner"], "toy", 1, seed=2)
    first, _ = await submissions.submit_model(
        platform, setup["builder"], task_code="toy", name="first", backend="python", config=KEYWORD
    )
    second, _ = await submissions.submit_model(
        platform, setup["builder"], task_code="toy", name="second", backend="python", config=KEYWORD
    )
    query = """query($id: ID!) { node(id: $id) { ... on Model { evaluations { nodes { status queuePosition } } } } }"""
    _, token = await auth.create_token(platform, setup["builder"], name="queue")

    async def positions(model) -> list[tuple[str, int | None]]:
        nodes = (await gql(query, {"id": gid("Model", model.id)}, token=token))["node"]
        return [(e["status"], e["queuePosition"]) for e in nodes["evaluations"]["nodes"]]

    assert await positions(first) == [("QUEUED", 1)]
    assert await positions(second) == [("QUEUED", 2)]
    [(evaluation, _)] = await submissions.evaluations_of(platform, first.id)
    async with platform.db.write() as s:  # the first one starts
        row = await s.get(Evaluation, evaluation.id)
        row.status = EvaluationStatus.RUNNING
    assert await positions(first) == [("RUNNING", None)]
    assert await positions(second) == [("QUEUED", 2)]  # the running one is still ahead of it


ADJACENT = """{ leaderboard(taskCode: "toy", metricWeights: [{name: "accuracy", weight: 1}]) {
  rows { key rank model { name } }
  adjacentTests { upperKey lowerKey datasets items onlyUpperRight onlyLowerRight pValue significant } } }"""


async def test_the_board_says_whether_neighbours_differ_by_more_than_chance(gql, platform, setup):
    """Leaderboard.adjacentTests: McNemar's exact test between each two neighbours, on the items the board's figures
    come from (a scoring set's public part while its round runs), equal to scipy's exact binomial test there."""
    from scipy.stats import binomtest

    from dynaforge.db.models import Dataset
    from dynaforge.services import visibility

    n = 40
    records = [(f"line {i}", {"text": f"a day numbered {i}", "label": "bad"}) for i in range(n)]
    [made] = await datasets.create_dataset(platform, setup["owner"], "toy", "duel", records)
    async with platform.db.session() as s:
        duel = await s.get(Dataset, made.id)
    public = visibility.public_part(duel, platform.settings.scoring_public_share)
    # right on every item / on the first half / on two fewer (by position)
    rights = {"all": [True] * n, "half": [i < 20 for i in range(n)], "fewer": [i < 18 for i in range(n)]}
    for (name, right), who in zip(rights.items(), ("builder", "author", "owner"), strict=True):
        await submissions.submit_predictions(
            platform,
            setup[who],
            task_code="toy",
            name=name,
            dataset_name="duel",
            predictions=[{"label": "bad" if r else "good"} for r in right],
            published=True,
        )
    board = (await gql(ADJACENT))["leaderboard"]  # anyone who sees the board
    ranked = [r for r in board["rows"] if r["rank"] is not None]
    assert [r["model"]["name"] for r in ranked] == ["all", "half", "fewer"]
    tests = board["adjacentTests"]
    assert [(t["upperKey"], t["lowerKey"]) for t in tests] == [
        (ranked[0]["key"], ranked[1]["key"]),
        (ranked[1]["key"], ranked[2]["key"]),
    ]
    for test, (upper, lower) in zip(tests, (("all", "half"), ("half", "fewer")), strict=True):
        shown = [i for i in range(n) if public[i]]  # the public part only, until the round ends
        only_upper = sum(rights[upper][i] and not rights[lower][i] for i in shown)
        only_lower = sum(rights[lower][i] and not rights[upper][i] for i in shown)
        assert (test["items"], test["onlyUpperRight"], test["onlyLowerRight"]) == (len(shown), only_upper, only_lower)
        assert test["datasets"] == ["duel"]
        expected = binomtest(only_upper, only_upper + only_lower, 0.5).pvalue if only_upper + only_lower else 1.0
        assert test["pValue"] == pytest.approx(expected)
        assert test["significant"] == (expected < 0.05 and only_upper > only_lower)
    # half the set apart is more than chance; two items apart is not
    assert tests[0]["significant"] is True and tests[1]["significant"] is False
