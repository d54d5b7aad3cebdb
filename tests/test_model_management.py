"""A model builder's own models: listing a task's models (who sees which), publishing and withdrawing, renaming,
hiding one's name, replacing the card, deleting; services and GraphQL, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update
from support import gid, make_user

from dynaforge.db.models import Evaluation, EvaluationStatus
from dynaforge.errors import Conflict, Forbidden, InvalidInput, NotAuthenticated, NotFound
from dynaforge.services import datasets, examples, submissions, tasks, validation
from dynaforge.services.actor import Actor

KEYWORD = {"callable": "toy_plugin:keyword_model"}


@pytest.fixture
async def people(platform):
    platform.settings.examples_per_minute = 1000
    names = ("owner", "builder", "other", "admin")
    actors = {n: await make_user(platform, f"mm_{n}", admin=n == "admin") for n in names}
    await tasks.grant_ownership(platform, Actor.system(), "toy", actors["owner"].user_id)
    for i in range(10):
        made = await examples.submit(
            platform, actors["other"], task_code="toy", fields={"text": f"good {i}", "label": "bad"}
        )
        await validation.validate(platform, actors["owner"], made.example.id, "CORRECT")
    await datasets.build_from_round(platform, actors["owner"], "toy", 1)
    return actors


async def _submit(p, actor, name, **kw):
    model, _ = await submissions.submit_model(
        p, actor, task_code="toy", name=name, backend="python", config=KEYWORD, **kw
    )
    return model


async def _names(p, actor, **kw) -> list[str]:
    page = await submissions.list_models(p, actor, "toy", **kw)
    return [m.name for m, _ in page.items]


async def test_who_sees_which_models(platform, people):
    builder, other, owner = people["builder"], people["other"], people["owner"]
    await _submit(platform, builder, "private")
    await _submit(platform, builder, "public", published=True)
    await _submit(platform, other, "theirs")
    assert await _names(platform, builder) == ["public", "private"]  # newest first; one's own included
    assert await _names(platform, other) == ["theirs", "public"]
    assert await _names(platform, Actor.anonymous()) == ["public"]
    assert await _names(platform, owner) == ["theirs", "public", "private"]  # owners see every model
    assert await _names(platform, builder, mine=True) == ["public", "private"]
    assert await _names(platform, owner, mine=True) == []
    assert await _names(platform, owner, published=False) == ["theirs", "private"]
    page = await submissions.list_models(platform, owner, "toy")
    assert [privileged for _, privileged in page.items] == [True, True, True]
    page = await submissions.list_models(platform, other, "toy")
    assert [(m.name, privileged) for m, privileged in page.items] == [("theirs", True), ("public", False)]
    with pytest.raises(NotAuthenticated):
        await submissions.list_models(platform, Actor.anonymous(), "toy", mine=True)
    with pytest.raises(InvalidInput):
        await submissions.list_models(platform, owner, "toy", first=0)
    with pytest.raises(InvalidInput):
        await submissions.list_models(platform, owner, "toy", after="not a cursor")


async def test_pages_follow_their_cursor(platform, people):
    for i in range(5):  # 3 submissions a day each
        await _submit(platform, people["builder" if i < 3 else "admin"], f"m{i}", published=True)
    seen, after = [], None
    while True:
        page = await submissions.list_models(platform, people["other"], "toy", first=2, after=after)
        seen += [m.name for m, _ in page.items]
        if not page.has_next:
            break
        after = submissions.encode_model_cursor(page.items[-1][0].id)
    assert seen == ["m4", "m3", "m2", "m1", "m0"]


async def test_the_submitter_publishes_renames_and_hides_their_name(platform, people):
    builder, other = people["builder"], people["other"]
    model = await _submit(platform, builder, "draft")
    with pytest.raises(NotFound):  # unpublished: others cannot even see it
        await submissions.update_model(platform, other, model.id, published=True)
    changed = await submissions.update_model(
        platform, builder, model.id, name="  final  ", published=True, anonymous=True, card={"license": "MIT"}
    )
    assert (changed.name, changed.published, changed.anonymous, changed.card) == (
        "final",
        True,
        True,
        {"license": "MIT"},
    )
    assert await _names(platform, Actor.anonymous()) == ["final"]
    with pytest.raises(Forbidden):  # published: visible, but not theirs to change
        await submissions.update_model(platform, other, model.id, published=False)
    with pytest.raises(Forbidden):  # owners see every model but do not change others'
        await submissions.update_model(platform, people["owner"], model.id, published=False)
    withdrawn = await submissions.update_model(platform, people["admin"], model.id, published=False)
    assert not withdrawn.published and await _names(platform, Actor.anonymous()) == []
    with pytest.raises(InvalidInput) as error:
        await submissions.update_model(platform, builder, model.id, name=" ", card={"paper": "ftp://x"})
    assert {e.field for e in error.value.field_errors} == {"name", "card.paper"}
    with pytest.raises(NotFound):
        await submissions.update_model(platform, builder, 10**9, published=True)


async def test_deleting_a_model_takes_its_evaluations_but_not_while_one_runs(platform, people):
    builder = people["builder"]
    model = await _submit(platform, builder, "gone soon", published=True)
    assert [e.status for e, _ in await submissions.evaluations_of(platform, model.id)] == [EvaluationStatus.QUEUED]
    async with platform.db.write() as s:
        await s.execute(
            update(Evaluation).where(Evaluation.model_id == model.id).values(status=EvaluationStatus.RUNNING)
        )
    with pytest.raises(Conflict, match="running"):
        await submissions.delete_model(platform, builder, model.id)
    with pytest.raises(Forbidden):
        await submissions.delete_model(platform, people["other"], model.id)
    async with platform.db.write() as s:
        await s.execute(update(Evaluation).where(Evaluation.model_id == model.id).values(status=EvaluationStatus.DONE))
    await submissions.delete_model(platform, builder, model.id)
    with pytest.raises(NotFound):
        await submissions.get_model(platform, builder, model.id)
    async with platform.db.session() as s:
        assert list(await s.scalars(select(Evaluation).where(Evaluation.model_id == model.id))) == []
    with pytest.raises(NotFound):
        await submissions.delete_model(platform, builder, model.id)


MODELS = """query($mine: Boolean!, $after: String) { models(taskCode: "toy", mine: $mine, first: 1, after: $after) {
  edges { cursor node { id name published submitter { username } config } } pageInfo { hasNextPage endCursor } } }"""
UPDATE = """mutation($input: UpdateModelInput!) { updateModel(input: $input) {
  __typename ... on ModelUpdated { model { id name published anonymous
  card { parameters license paper description trainingData } } } ... on Error { message } } }"""
DELETE = """mutation($id: ID!) { deleteModel(input: {id: $id}) {
  __typename ... on ModelDeleted { id } ... on Error { message } } }"""


async def test_the_graphql_contract(gql, platform, people):
    from dynaforge.services import auth

    _, token = await auth.create_token(platform, people["builder"], name="api")
    gql.token = token
    first = await _submit(platform, people["builder"], "one")
    second = await _submit(platform, people["builder"], "two")
    page = (await gql(MODELS, {"mine": True}))["models"]
    assert [e["node"]["name"] for e in page["edges"]] == ["two"] and page["pageInfo"]["hasNextPage"]
    assert page["edges"][0]["node"]["config"] == KEYWORD  # one's own: everything
    rest = (await gql(MODELS, {"mine": True, "after": page["pageInfo"]["endCursor"]}))["models"]
    assert [e["node"]["name"] for e in rest["edges"]] == ["one"] and not rest["pageInfo"]["hasNextPage"]

    updated = await gql(
        UPDATE, {"input": {"id": gid("Model", second.id), "published": True, "card": {"license": "MIT"}}}
    )
    assert updated["updateModel"]["model"] == {
        "id": gid("Model", second.id),
        "name": "two",
        "published": True,
        "anonymous": False,
        "card": {"parameters": None, "license": "MIT", "paper": None, "description": None, "trainingData": None},
    }
    anonymous = (await gql(MODELS, {"mine": False}, token=None))["models"]["edges"]
    assert [(e["node"]["name"], e["node"]["config"]) for e in anonymous] == [("two", None)]  # no config for others
    assert (await gql(DELETE, {"id": gid("Model", first.id)}))["deleteModel"] == {
        "__typename": "ModelDeleted",
        "id": gid("Model", first.id),
    }
    assert (await gql(DELETE, {"id": gid("Model", first.id)}))["deleteModel"]["__typename"] == "NotFound"
    refused = (await gql(UPDATE, {"input": {"id": gid("Model", second.id), "name": "x" * 101}}))["updateModel"]
    assert refused["__typename"] == "InvalidInput"
