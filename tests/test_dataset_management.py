"""Owners change a data set's access, name and description, and delete it, through GraphQL on SQLite and
PostgreSQL: a set made SCORING gets its perturbed copies and an evaluation of every model; a copy follows its
parent; a deleted set takes its copies, items and evaluations with it, and the board forgets it.
"""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from support import gid, make_user
from toy_plugin import ToyTask

from dynaforge.db.models import Dataset, DatasetItem, Evaluation, EvaluationStatus, ModelRow
from dynaforge.services import auth, datasets, submissions, tasks
from dynaforge.services.actor import Actor

UPDATE = """mutation($input: UpdateDatasetInput!) { updateDataset(input: $input) { __typename
  ... on DatasetUpdated { dataset { id name description access } }
  ... on InvalidInput { fieldErrors { field rule message } } ... on Error { message } } }"""
DELETE = """mutation($id: ID!) { deleteDataset(input: {id: $id}) { __typename
  ... on DatasetDeleted { id copyIds } ... on Error { message } } }"""
RECORDS = [
    (f"line {i + 1}", {"text": text, "label": label})
    for i, (text, label) in enumerate([("good day", "good"), ("bad day", "bad"), ("dull day", "bad")])
]


async def _owner(platform) -> tuple[Actor, str]:
    owner = await make_user(platform, "keeper")
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner.user_id)
    return owner, (await auth.create_token(platform, owner, name="sets"))[1]


async def _model(platform, name: str) -> ModelRow:
    builder = await make_user(platform, name)
    model, _ = await submissions.submit_model(
        platform, builder, task_code="toy", name=name, backend="python", config={"callable": "toy_plugin:keyword_model"}
    )
    return model


async def _count(platform, statement) -> int:
    async with platform.db.session() as s:
        return int(await s.scalar(statement))


@pytest.fixture
def perturbed(monkeypatch):
    """The toy task with a perturbation, so that a scoring set has a copy."""
    monkeypatch.setattr(ToyTask, "perturbations", ("uppercase",))


async def test_a_standard_set_made_scoring_gets_copies_and_every_model_queued(gql, platform, perturbed):
    owner, token = await _owner(platform)
    [standard] = await datasets.create_dataset(platform, owner, "toy", "extra", list(RECORDS), access="STANDARD")
    model = await _model(platform, "builder1")
    async with platform.db.session() as s:
        assert await datasets.scoring_dataset_ids(s, standard.task_id) == []  # nothing scores yet
    made = await gql(UPDATE, {"input": {"id": gid("Dataset", standard.id), "access": "SCORING"}}, token=token)
    assert made["updateDataset"]["dataset"]["access"] == "SCORING"
    async with platform.db.session() as s:
        copies = list(await s.scalars(select(Dataset).where(Dataset.parent_id == standard.id)))
        scoring = await datasets.scoring_dataset_ids(s, standard.task_id)
        evaluated = set(await s.scalars(select(Evaluation.dataset_id).where(Evaluation.model_id == model.id)))
    assert copies and all(c.access == "SCORING" for c in copies)
    assert set(scoring) == {standard.id, *(c.id for c in copies)} == evaluated
    # a copy's access follows its parent; making it SCORING again changes nothing and queues nothing more
    refused = await gql(UPDATE, {"input": {"id": gid("Dataset", copies[0].id), "access": "HIDDEN"}}, token=token)
    assert refused["updateDataset"]["fieldErrors"][0]["rule"] == "copy"
    again = await gql(UPDATE, {"input": {"id": gid("Dataset", standard.id), "access": "SCORING"}}, token=token)
    assert again["updateDataset"]["__typename"] == "DatasetUpdated"
    assert await _count(platform, select(func.count()).select_from(Evaluation)) == len(evaluated)
    # and back to STANDARD, copies with it: the board forgets them, the evaluations stay on the model's page
    back = await gql(UPDATE, {"input": {"id": gid("Dataset", standard.id), "access": "STANDARD"}}, token=token)
    assert back["updateDataset"]["dataset"]["access"] == "STANDARD"
    async with platform.db.session() as s:
        assert await datasets.scoring_dataset_ids(s, standard.task_id) == []
        assert {c.access for c in await s.scalars(select(Dataset).where(Dataset.parent_id == standard.id))} == {
            "STANDARD"
        }
    assert await _count(platform, select(func.count()).select_from(Evaluation)) == len(evaluated)


async def test_names_and_descriptions_change_under_the_rules_and_only_owners_change_them(gql, platform):
    owner, token = await _owner(platform)
    first, second = [
        (await datasets.create_dataset(platform, owner, "toy", name, list(RECORDS), access="STANDARD"))[0]
        for name in ("first", "second")
    ]
    renamed = await gql(
        UPDATE, {"input": {"id": gid("Dataset", first.id), "name": "renamed", "description": "why"}}, token=token
    )
    assert renamed["updateDataset"]["dataset"] == {
        "id": gid("Dataset", first.id),
        "name": "renamed",
        "description": "why",
        "access": "STANDARD",
    }
    taken = await gql(UPDATE, {"input": {"id": gid("Dataset", first.id), "name": "second"}}, token=token)
    assert taken["updateDataset"]["__typename"] == "AlreadyExists"
    bad = await gql(UPDATE, {"input": {"id": gid("Dataset", second.id), "name": "No Spaces"}}, token=token)
    assert bad["updateDataset"]["fieldErrors"][0]["field"] == ["name"]
    stranger = await make_user(platform, "stranger")
    theirs = (await auth.create_token(platform, stranger, name="x"))[1]
    forbidden = await gql(UPDATE, {"input": {"id": gid("Dataset", second.id), "description": "mine"}}, token=theirs)
    assert forbidden["updateDataset"]["__typename"] == "Forbidden"
    async with platform.db.session() as s:
        assert (await s.get(Dataset, second.id)).description == ""


async def test_a_deleted_set_takes_its_copies_items_and_evaluations_and_waits_for_running_ones(
    gql, platform, perturbed
):
    owner, token = await _owner(platform)
    [scoring, *copies] = await datasets.create_dataset(platform, owner, "toy", "gone", list(RECORDS))
    assert copies
    [kept] = await datasets.create_dataset(platform, owner, "toy", "kept", list(RECORDS), access="STANDARD")
    model = await _model(platform, "builder2")
    family = [scoring.id, *(c.id for c in copies)]
    async with platform.db.write() as s:
        running = await s.scalar(select(Evaluation).where(Evaluation.dataset_id == scoring.id))
        running.status = EvaluationStatus.RUNNING
    busy = (await gql(DELETE, {"id": gid("Dataset", scoring.id)}, token=token))["deleteDataset"]
    assert busy["__typename"] == "Conflict" and "running" in busy["message"]
    async with platform.db.write() as s:
        (await s.get(Evaluation, running.id)).status = EvaluationStatus.QUEUED
    gone = (await gql(DELETE, {"id": gid("Dataset", scoring.id)}, token=token))["deleteDataset"]
    assert gone == {
        "__typename": "DatasetDeleted",
        "id": gid("Dataset", scoring.id),
        "copyIds": [gid("Dataset", c.id) for c in copies],
    }
    for table, column in (
        (Dataset, Dataset.id),
        (DatasetItem, DatasetItem.dataset_id),
        (Evaluation, Evaluation.dataset_id),
    ):
        assert await _count(platform, select(func.count()).select_from(table).where(column.in_(family))) == 0
    assert await _count(platform, select(func.count()).select_from(Dataset).where(Dataset.id == kept.id)) == 1
    async with platform.db.session() as s:
        assert (await s.get(ModelRow, model.id)).status != "EVALUATING"  # nothing left to evaluate it on
    again = (await gql(DELETE, {"id": gid("Dataset", scoring.id)}, token=token))["deleteDataset"]
    assert again["__typename"] == "NotFound"
