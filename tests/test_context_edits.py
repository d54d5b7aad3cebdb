"""Owners edit and delete contexts without changing any in place: an edit retires the context and adds a successor,
a delete retires it; examples written against the old text keep it. SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from support import gid, make_user

from dynaforge.errors import Conflict, Forbidden, InvalidInput
from dynaforge.services import auth, contexts, examples, tasks
from dynaforge.services.actor import Actor


@pytest.fixture
async def owner(platform):
    user = await make_user(platform, "ce_owner")
    await tasks.grant_ownership(platform, Actor.system(), "toy", user.user_id)
    return user


async def _in_service(platform, owner) -> list[int]:
    listing = await contexts.list_contexts(platform, owner, "toy", first=100)
    return [c.id for c in listing.window.rows]


async def test_an_edit_retires_the_context_and_its_successor_is_served(platform, owner):
    writer = await make_user(platform, "ce_writer")
    before = await _in_service(platform, owner)
    old_id = before[-1]
    old = await contexts.get_context(platform, old_id)
    written = await examples.submit(
        platform, writer, task_code="toy", fields={"text": "good", "label": "bad"}, context_id=old_id
    )
    new, retired = await contexts.replace_context(platform, owner, old_id, fields={"topic": "a new topic"}, tag="v2")
    assert retired.id == old_id and retired.retired_at is not None and retired.successor_id == new.id
    assert new.fields == {"topic": "a new topic"} and new.tag == "v2" and new.round_id == old.round_id
    assert (await contexts.get_context(platform, old_id)).fields == old.fields  # unchanged: its examples point here
    assert written.example.context_id == old_id
    now = await _in_service(platform, owner)
    assert old_id not in now and new.id in now and len(now) == len(before)
    served = {(await contexts.next_context(platform, writer, "toy", strategy="uniform")).id for _ in range(40)}
    assert old_id not in served
    with pytest.raises(Conflict):  # edit the successor instead
        await contexts.replace_context(platform, owner, old_id, tag="again")
    with pytest.raises(InvalidInput):
        await contexts.replace_context(platform, owner, new.id, fields={"colour": "red"})
    with pytest.raises(Forbidden):
        await contexts.replace_context(platform, writer, new.id, tag="mine")


async def test_a_delete_takes_the_context_out_of_service(platform, owner):
    ids = await _in_service(platform, owner)
    gone = await contexts.retire_context(platform, owner, ids[0])
    assert gone.retired_at is not None and gone.successor_id is None
    assert ids[0] not in await _in_service(platform, owner)
    with pytest.raises(Conflict):
        await contexts.retire_context(platform, owner, ids[0])


UPDATE = """mutation($input: UpdateContextInput!) { updateContext(input: $input) { __typename
  ... on ContextUpdated { context { id fields tag retired } previous { id retired successor { id tag } } }
  ... on Error { message } } }"""


async def test_edits_over_graphql(gql, platform, owner):
    gql.token = (await auth.create_token(platform, owner, name="ce"))[1]
    old_id = gid("Context", (await _in_service(platform, owner))[0])
    answer = (await gql(UPDATE, {"input": {"id": old_id, "fields": {"topic": "rewritten"}}}))["updateContext"]
    assert answer["__typename"] == "ContextUpdated"
    assert answer["context"]["fields"] == {"topic": "rewritten"} and not answer["context"]["retired"]
    assert answer["previous"] == {
        "id": old_id,
        "retired": True,
        "successor": {"id": answer["context"]["id"], "tag": answer["context"]["tag"]},
    }
    again = (await gql(UPDATE, {"input": {"id": old_id, "tag": "x"}}))["updateContext"]
    assert again["__typename"] == "Conflict"
    deleted = await gql(
        "mutation($id: ID!) { deleteContext(input: {id: $id}) { __typename "
        "... on ContextDeleted { context { retired } } } }",
        {"id": answer["context"]["id"]},
    )
    assert deleted["deleteContext"] == {"__typename": "ContextDeleted", "context": {"retired": True}}
