"""Data selections (DataPerf-style submissions): a task that declares ``DataSelection`` takes a selection of items
from one of its training pools, and the evaluation job trains the task's fixed recipe on them (toy_plugin.fit_words)
and scores it like any model. Which submission kinds a task takes, and the errors of a selection, through GraphQL on
SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from support import gid, make_user, register_user
from toy_plugin import ToyTask

from dynaforge import DataSelection, hookimpl
from dynaforge.db.models import DatasetAccess, ModelRow
from dynaforge.services import datasets, submissions
from dynaforge.services.actor import Actor
from dynaforge.services.evaluation_runner import Runner

SELECT = """
mutation($input: SubmitSelectionInput!) {
  submitSelection(input: $input) {
    __typename
    ... on ModelSubmitted { model { id name backend status config evaluations(first: 10) { nodes { id } } } }
    ... on Error { message }
    ... on InvalidInput { fieldErrors { field code rule } }
  }
}"""
SUBMIT = """
mutation($input: SubmitModelInput!) {
  submitModel(input: $input) { __typename ... on Error { message } ... on InvalidInput { fieldErrors { field rule } } }
}"""
PREDICT = """
mutation($input: SubmitPredictionsInput!) {
  submitPredictions(input: $input) {
    __typename ... on Error { message } ... on InvalidInput { fieldErrors { field rule } }
  }
}"""
# the pool: the recipe learns 'good' from the first two, 'bad' from the rest; the last two are mislabelled
POOL = [
    {"text": "a good sunny day", "label": "good"},
    {"text": "good friends and good food", "label": "good"},
    {"text": "a bad grey day", "label": "bad"},
    {"text": "bad food and bad service", "label": "bad"},
    {"text": "a good good time", "label": "bad"},
    {"text": "bad bad news", "label": "good"},
]
SCORING = [
    {"text": "good weather", "label": "good"},
    {"text": "a good film", "label": "good"},
    {"text": "bad weather", "label": "bad"},
    {"text": "a bad film", "label": "bad"},
]


class SelectionOnly(ToyTask):
    code = "toy-select"
    submission_kinds = ("selection",)


class ModelsOnly(ToyTask):
    code = "toy-models"
    submission_kinds = ("model", "predictions")
    data_selection = None


class Kinds:
    __name__ = "kinds"

    @hookimpl
    def register_tasks(self, register):
        register(SelectionOnly())
        register(ModelsOnly())


@pytest.fixture
async def pools(platform):
    """For the toy task, and the two above: the pool (STANDARD) and a scoring set, made by the operator."""
    platform.plugins.register(Kinds(), "kinds")
    from dynaforge.services import tasks

    await tasks.sync_registered_tasks(platform)
    made = {}
    try:
        for code in ("toy", "toy-select", "toy-models"):
            [pool] = await datasets.create_dataset(
                platform, Actor.system(), code, "pool", [(f"p{i}", dict(f)) for i, f in enumerate(POOL)],
                access=DatasetAccess.STANDARD,
            )  # fmt: skip
            [scoring, *_copies] = await datasets.create_dataset(
                platform, Actor.system(), code, "scoring", [(f"s{i}", dict(f)) for i, f in enumerate(SCORING)]
            )
            made[code] = {"pool": pool, "scoring": scoring}
        yield made
    finally:
        platform.plugins.unregister("kinds")


def _items(pool, *positions: int) -> list[str]:
    return [gid("DatasetItem", f"{pool.id}:{p}") for p in positions]


async def _evaluate(platform, model_id: str) -> dict[str, dict[str, float]]:
    """Run the model's queued evaluations; its metrics by data set."""
    from dynaforge.api.node import decode_global_id
    from dynaforge.db.models import Dataset, Evaluation

    runner = Runner(platform.settings, platform.plugins, db=platform.db)
    pk = int(decode_global_id(model_id)[1])
    async with platform.db.session() as s:
        from sqlmodel import col, select

        rows = (await s.execute(select(Evaluation, Dataset).join(Dataset).where(col(Evaluation.model_id) == pk))).all()
    results = {}
    for evaluation, dataset in rows:
        await runner.run(evaluation.id)
        async with platform.db.session() as s:
            done = await s.get(Evaluation, evaluation.id, populate_existing=True)
        assert done.status == "DONE", done.error
        results[dataset.name] = done.metrics
    return results


async def test_a_selection_is_trained_on_and_scored_like_a_model(gql, platform, pools):
    token, _ = await register_user(gql, "selector")
    task = await gql('{ task(code: "toy") { submissionKinds dataSelection { budget description } } }', token=token)
    assert task["task"] == {
        "submissionKinds": ["MODEL", "PREDICTIONS", "SELECTION"],
        "dataSelection": {"budget": 5, "description": "Naive Bayes over words."},
    }
    pool = pools["toy"]["pool"]
    clean = {"taskCode": "toy", "name": "clean", "datasetName": "pool", "itemIds": _items(pool, 0, 1, 2, 3)}
    result = (await gql(SELECT, {"input": {**clean, "published": True}}, token=token))["submitSelection"]
    assert result["__typename"] == "ModelSubmitted", result
    model = result["model"]
    assert model["name"] == "clean" and model["backend"] == "python" and model["status"] == "SUBMITTED"
    # the recipe and the selected items' fields, copied: the pool may change later, the model does not
    assert model["config"]["factory"] == "toy_plugin:fit_words"
    assert model["config"]["kwargs"] == {"examples": POOL[:4], "seed": 0}
    assert model["config"]["selection"] == {"dataset": "pool", "positions": [0, 1, 2, 3]}
    assert len(model["evaluations"]["nodes"]) == 1  # on the scoring set

    noisy = {**clean, "name": "noisy", "itemIds": _items(pool, 4, 5, 0)}
    noisy_model = (await gql(SELECT, {"input": noisy}, token=token))["submitSelection"]["model"]
    clean_scores = await _evaluate(platform, model["id"])
    noisy_scores = await _evaluate(platform, noisy_model["id"])
    assert clean_scores["scoring"]["accuracy"] == 1.0
    # trained on mislabelled items, the recipe says 'bad' for 'good' texts and the other way round
    assert noisy_scores["scoring"]["accuracy"] == 0.0


async def test_a_selection_that_breaks_the_rules_is_refused_and_stores_nothing(gql, platform, pools):
    token, _ = await register_user(gql, "careless")
    pool, scoring = pools["toy"]["pool"], pools["toy"]["scoring"]
    base = {"taskCode": "toy", "name": "mine", "datasetName": "pool"}

    async def refused(**changes) -> list[tuple[list[str], str, str]]:
        result = (await gql(SELECT, {"input": {**base, **changes}}, token=token))["submitSelection"]
        assert result["__typename"] == "InvalidInput", result
        return [(e["field"], e["code"], e["rule"]) for e in result["fieldErrors"]]

    assert await refused(itemIds=_items(pool, 0, 1, 2, 3, 4, 5)) == [(["itemIds"], "RANGE", "budget")]
    assert await refused(itemIds=[]) == [(["itemIds"], "RANGE", "count")]
    assert await refused(itemIds=_items(pool, 1, 1)) == [(["itemIds", "1"], "UNIQUE", "repeated")]
    assert await refused(itemIds=[*_items(pool, 0), *_items(scoring, 0)]) == [
        (["itemIds", "1"], "NOT_FOUND", "not_in_pool")
    ]
    assert await refused(itemIds=_items(pool, 0, 99)) == [(["itemIds", "1"], "NOT_FOUND", "not_in_pool")]
    assert await refused(itemIds=[gid("Example", 1)]) == [(["itemIds", "0"], "ID", "id")]
    assert await refused(datasetName="scoring", itemIds=_items(scoring, 0)) == [
        (["datasetName"], "NOT_ALLOWED", "pool")
    ]
    missing = await gql(SELECT, {"input": {**base, "datasetName": "nope", "itemIds": _items(pool, 0)}}, token=token)
    assert missing["submitSelection"]["__typename"] == "NotFound"
    anonymous = (await gql(SELECT, {"input": {**base, "itemIds": _items(pool, 0)}}, token=None))["submitSelection"]
    assert anonymous["__typename"] == "NotAuthenticated"
    async with platform.db.session() as s:
        from sqlalchemy import func, select

        assert await s.scalar(select(func.count()).select_from(ModelRow)) == 0


async def test_a_task_takes_only_the_kinds_it_declares(gql, platform, pools):
    token, _ = await register_user(gql, "builder")
    both = (
        '{ a: task(code: "toy-select") { submissionKinds dataSelection { budget } } '
        'b: task(code: "toy-models") { submissionKinds dataSelection { budget } } }'
    )
    kinds = await gql(both, token=token)
    assert kinds == {
        "a": {"submissionKinds": ["SELECTION"], "dataSelection": {"budget": 5}},
        "b": {"submissionKinds": ["MODEL", "PREDICTIONS"], "dataSelection": None},
    }
    model = {"name": "kw", "backend": "http", "config": {"url": "https://models.example.org/kw"}}
    refused = (await gql(SUBMIT, {"input": {"taskCode": "toy-select", **model}}, token=token))["submitModel"]
    assert refused["fieldErrors"] == [{"field": ["taskCode"], "rule": "submission_kind"}]
    assert refused["message"] == (
        "Invalid input: taskCode: toy-select takes no models: submit data selections (Task.submissionKinds)"
    )
    predictions = {"taskCode": "toy-select", "name": "p", "datasetName": "scoring", "predictions": [{}] * 4}
    refused = (await gql(PREDICT, {"input": predictions}, token=token))["submitPredictions"]
    assert refused["fieldErrors"] == [{"field": ["taskCode"], "rule": "submission_kind"}]
    pool = pools["toy-models"]["pool"]
    selection = {"taskCode": "toy-models", "name": "s", "datasetName": "pool", "itemIds": _items(pool, 0)}
    refused = (await gql(SELECT, {"input": selection}, token=token))["submitSelection"]
    assert refused["message"] == (
        "Invalid input: taskCode: toy-models takes no data selections: submit models, predictions "
        "(Task.submissionKinds)"
    )
    builder = await make_user(platform, "builder-direct")
    select_pool = pools["toy-select"]["pool"]
    model_row, queued = await submissions.submit_selection(
        platform, builder, task_code="toy-select", name="direct", dataset_name="pool", items=[(select_pool.id, 0)]
    )
    assert model_row.config["selection"] == {"dataset": "pool", "positions": [0]} and len(queued) == 1


def test_declarations_of_kinds_are_checked():
    class NoRules(ToyTask):
        code = "toy-norules"
        submission_kinds = ("selection",)
        data_selection = None

    class Unknown(ToyTask):
        code = "toy-unknown"
        submission_kinds = ("model", "weights")
        data_selection = None

    class RulesUnused(ToyTask):
        code = "toy-unused"
        submission_kinds = ("model",)
        data_selection = DataSelection(budget=0, trainer="no-colon")

    assert NoRules().check_declaration() == [
        'a task takes "selection" submissions exactly when it declares data_selection'
    ]
    assert Unknown().check_declaration() == [
        "submission_kinds must be distinct kinds among model, predictions, selection; got ('model', 'weights')"
    ]
    assert RulesUnused().check_declaration() == [
        'a task takes "selection" submissions exactly when it declares data_selection',
        "data_selection.budget must be a whole number of at least 1",
        "data_selection.trainer must be an import path pkg.module:name",
    ]
