"""Importing examples and data sets through the API: a GraphQL multipart request, for the task's owners; all or
nothing, problems named by line. SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select
from support import make_user

from dynaforge.db.models import Dataset, Example, User
from dynaforge.services import auth, tasks
from dynaforge.services.actor import Actor

IMPORT_EXAMPLES = """mutation($input: ImportExamplesInput!) { importExamples(input: $input) { __typename
  ... on ExamplesImported { count roundNumber username skipped { reason count } }
  ... on InvalidInput { fieldErrors { field code rule } } ... on Error { message } } }"""
IMPORT_DATASET = """mutation($input: ImportDatasetInput!) { importDataset(input: $input) { __typename
  ... on DatasetsCreated { datasets { name access size } } ... on Error { message } } }"""


def _line(text: str, label: str) -> str:
    return json.dumps(
        {"format": "dynaforge.example/1", "task": "toy", "status": "ACCEPTED", "fields": {"text": text, "label": label}}
    )


async def _post(client, document: str, content: bytes, token: str, **fields):
    return await client.post(
        "/graphql",
        data={
            "operations": json.dumps(
                {"query": document, "variables": {"input": {"taskCode": "toy", "file": None, **fields}}}
            ),
            "map": json.dumps({"0": ["variables.input.file"]}),
        },
        files={"0": ("data.jsonl", content, "application/octet-stream")},
        headers={"Apollo-Require-Preflight": "true", "Authorization": f"Bearer {token}"},
    )


@pytest.fixture
async def owner_token(platform):
    owner = await make_user(platform, "im_owner")
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner.user_id)
    return (await auth.create_token(platform, owner, name="import"))[1]


async def _count(platform, model) -> int:
    async with platform.db.session() as s:
        return int(await s.scalar(select(func.count()).select_from(model)) or 0)


async def test_examples_are_imported_all_or_nothing(client, platform, owner_token):
    good = "\n".join(_line(f"good {i}", "good") for i in range(3)).encode() + b"\n"
    answer = (await _post(client, IMPORT_EXAMPLES, good, owner_token)).json()["data"]["importExamples"]
    assert answer == {
        "__typename": "ExamplesImported",
        "count": 3,
        "roundNumber": 1,
        "username": "importer",
        "skipped": [],
    }
    assert await _count(platform, Example) == 3
    broken = good + b"{not json\n"
    refused = (await _post(client, IMPORT_EXAMPLES, broken, owner_token)).json()["data"]["importExamples"]
    assert refused["__typename"] == "InvalidInput"
    assert refused["fieldErrors"][0]["field"] == ["line 4"] and refused["fieldErrors"][0]["code"] == "FILE"
    assert await _count(platform, Example) == 3  # nothing of the broken file was stored


async def test_a_data_set_is_imported(client, platform, owner_token):
    content = "\n".join(_line(f"fine {i}", "good" if i % 2 else "bad") for i in range(4)).encode() + b"\n"
    made = await _post(client, IMPORT_DATASET, content, owner_token, name="imported", access="STANDARD")
    answer = made.json()["data"]["importDataset"]
    assert answer == {
        "__typename": "DatasetsCreated",
        "datasets": [{"name": "imported", "access": "STANDARD", "size": 4}],
    }
    assert await _count(platform, Dataset) == 1


async def test_others_cannot_import(client, platform):
    other = await make_user(platform, "im_other")
    token = (await auth.create_token(platform, other, name="x"))[1]
    answer = (await _post(client, IMPORT_EXAMPLES, _line("a", "good").encode(), token)).json()["data"]
    assert answer["importExamples"]["__typename"] == "Forbidden"


async def test_imported_examples_are_credited_to_the_importer_or_a_machine_never_another_person(
    client, platform, owner_token
):
    await make_user(platform, "im_rival")
    async with platform.db.write() as s:
        s.add(
            User(
                username="machine:im", email="m@dynaforge.invalid", password_hash="!", is_active=False, is_machine=True
            )
        )
    content = _line("good one", "good").encode() + b"\n"
    refused = (await _post(client, IMPORT_EXAMPLES, content, owner_token, username="im_rival")).json()["data"]
    assert refused["importExamples"]["__typename"] == "Forbidden"
    assert "never to someone else" in refused["importExamples"]["message"]
    assert await _count(platform, Example) == 0
    for author in ("im_owner", "machine:im"):
        done = (await _post(client, IMPORT_EXAMPLES, content, owner_token, username=author)).json()["data"]
        assert done["importExamples"]["username"] == author
    async with platform.db.session() as s:
        authors = set(await s.scalars(select(User.username).join(Example, Example.user_id == User.id)))
    assert authors == {"im_owner", "machine:im"}
