"""Relay cursor connections: every list that grows pages forward (first/after) and back (last/before) on a keyset,
says whether rows lie on either side, and counts the whole list on request. Services and GraphQL; SQLite and
PostgreSQL."""

from __future__ import annotations

import pytest
from support import gid, make_user

from dynaforge.errors import InvalidInput
from dynaforge.services import auth, contexts, examples, stats, submissions, tasks
from dynaforge.services.actor import Actor

KEYWORD = {"callable": "toy_plugin:keyword_model"}


@pytest.fixture
async def builder(platform):
    users = [await make_user(platform, f"cx_builder{i}") for i in range(3)]  # three submissions a day each
    for i in range(7):
        await submissions.submit_model(
            platform, users[i % 3], task_code="toy", name=f"m{i}", backend="python", config=KEYWORD, published=True
        )
    return users[0]


async def _names(page) -> list[str]:
    return [m.name for m, _ in page.items]


async def test_forward_and_back_over_the_same_list(platform, builder):
    first = await submissions.list_models(platform, builder, "toy", first=3)
    assert await _names(first) == ["m6", "m5", "m4"]
    assert (first.window.has_next, first.window.has_previous) == (True, False)
    second = await submissions.list_models(platform, builder, "toy", first=3, after=first.window.end_cursor)
    assert await _names(second) == ["m3", "m2", "m1"]
    assert (second.window.has_next, second.window.has_previous) == (True, True)
    third = await submissions.list_models(platform, builder, "toy", first=3, after=second.window.end_cursor)
    assert await _names(third) == ["m0"] and (third.window.has_next, third.window.has_previous) == (False, True)
    # Back from the last page's start: the page before it, in the list's order.
    back = await submissions.list_models(platform, builder, "toy", last=3, before=third.window.start_cursor)
    assert await _names(back) == ["m3", "m2", "m1"]
    assert (back.window.has_next, back.window.has_previous) == (True, True)
    tail = await submissions.list_models(platform, builder, "toy", last=2)
    assert await _names(tail) == ["m1", "m0"] and (tail.window.has_next, tail.window.has_previous) == (False, True)
    assert await first.total() == 7


async def test_bad_page_requests_are_refused_with_the_field(platform, builder):
    with pytest.raises(InvalidInput) as both:
        await submissions.list_models(platform, builder, "toy", first=2, last=2)
    assert both.value.field_errors[0].field == "last"
    with pytest.raises(InvalidInput) as foreign:
        await submissions.list_models(platform, builder, "toy", last=2, before=examples.encode_cursor(3))
    assert foreign.value.field_errors[0].field == "before"
    with pytest.raises(InvalidInput):
        await submissions.list_models(platform, builder, "toy", last=0)


async def test_contexts_are_listed_for_owners_only(platform):
    owner = await make_user(platform, "cx_owner")
    other = await make_user(platform, "cx_other")
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner.user_id)
    listing = await contexts.list_contexts(platform, owner, "toy", first=2)
    assert len(listing.window.rows) == 2 and listing.window.has_next
    assert await listing.total() >= 3
    from dynaforge.errors import Forbidden

    with pytest.raises(Forbidden):
        await contexts.list_contexts(platform, other, "toy")


async def test_round_leaderboard_pages_by_rank(platform):
    writers = [await make_user(platform, f"cx_w{i}") for i in range(5)]
    for i, writer in enumerate(writers):
        for n in range(i + 1):
            await examples.submit(platform, writer, task_code="toy", fields={"text": f"good {i} {n}", "label": "bad"})
    round_row = await tasks.get_round(platform, (await tasks.get_task(platform, writers[0], "toy")).row.id)
    top, more, previous, total = await stats.leaderboard_page(platform, round_row.id, first=2)
    assert [e.rank for e in top] == [1, 2] and more and not previous and await total() == 5
    assert [e.username for e in top] == ["cx_w4", "cx_w3"]
    nxt, more, previous, _ = await stats.leaderboard_page(platform, round_row.id, first=2, after="cmFuazoy")
    assert [e.rank for e in nxt] == [3, 4] and more and previous
    last, more, previous, _ = await stats.leaderboard_page(platform, round_row.id, last=2)
    assert [e.rank for e in last] == [4, 5] and not more and previous


CONNECTION = """query($t: String!, $first: Int, $after: String, $last: Int, $before: String) {
  models(taskCode: $t, first: $first, after: $after, last: $last, before: $before) {
    totalCount edges { cursor node { id name } } nodes { name }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }"""


async def test_connections_over_graphql(gql, platform, builder):
    gql.token = (await auth.create_token(platform, builder, name="cx"))[1]
    page = (await gql(CONNECTION, {"t": "toy", "first": 2}))["models"]
    assert page["totalCount"] == 7 and [n["name"] for n in page["nodes"]] == ["m6", "m5"]
    assert [e["node"]["name"] for e in page["edges"]] == ["m6", "m5"]
    info = page["pageInfo"]
    assert info["hasNextPage"] and not info["hasPreviousPage"]
    assert (info["startCursor"], info["endCursor"]) == (page["edges"][0]["cursor"], page["edges"][-1]["cursor"])
    back = (await gql(CONNECTION, {"t": "toy", "last": 1, "before": info["endCursor"]}))["models"]
    assert [n["name"] for n in back["nodes"]] == ["m6"] and back["pageInfo"]["hasNextPage"]
    answer = await gql(CONNECTION, {"t": "toy", "first": 1, "last": 1}, expect_errors=True)
    assert answer["errors"][0]["extensions"]["code"] == "INVALID_INPUT"
    assert gid("Model", 1)  # ids in the nodes are global ids (checked in test_nodes)
