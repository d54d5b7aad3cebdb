"""Global object identification: every cached object implements Node with an opaque id; ``node`` and ``nodes``
refetch any of them with the visibility rules of its own query; ids of one type are refused where another is
expected. SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from graphql import GraphQLObjectType
from support import gid, make_user

from dynaforge.api.node import NODE_TYPES, decode_global_id, global_id
from dynaforge.api.nodes import FETCHERS, NODE_CLASSES
from dynaforge.api.schema import build_schema
from dynaforge.services import (
    auth,
    datasets,
    examples,
    leaderboard,
    proposals,
    submissions,
    tasks,
    training,
    validation,
    webhooks,
)
from dynaforge.services.actor import Actor

NODE = "query($id: ID!) { node(id: $id) { __typename id } }"
NODES = "query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }"


def test_every_object_with_an_id_is_a_node_and_every_node_can_be_fetched():
    schema = build_schema()._schema
    implementing = {
        t.name
        for t in schema.type_map.values()
        if isinstance(t, GraphQLObjectType) and any(i.name == "Node" for i in t.interfaces)
    }
    assert implementing == set(NODE_TYPES) == set(FETCHERS)
    assert {c.__strawberry_definition__.name for c in NODE_CLASSES} == set(NODE_TYPES)
    # The objects that still carry an id without being Nodes are the payloads that name something deleted.
    with_id = {
        t.name
        for t in schema.type_map.values()
        if isinstance(t, GraphQLObjectType) and "id" in t.fields and not t.name.startswith("__")
    }
    assert with_id - implementing == {"DatasetDeleted", "ModelDeleted", "LeaderboardItemDeleted", "WebhookDeleted"}


@pytest.mark.parametrize("key", [1, 42, "nli", "nli:3", "3f1c-message"])
def test_ids_round_trip_and_name_their_type(key):
    made = global_id("Example", key)
    assert "=" not in made and made.isascii()
    assert decode_global_id(made) == ("Example", str(key))
    assert global_id("Model", key) != made


@pytest.fixture
async def world(platform):
    platform.settings.examples_per_minute = 1000
    names = ("author", "owner", "other", "admin")
    people = {n: await make_user(platform, f"nd_{n}", admin=n == "admin") for n in names}
    await tasks.grant_ownership(platform, Actor.system(), "toy", people["owner"].user_id)
    made: dict[str, object] = {}
    first = await examples.submit(
        platform, people["author"], task_code="toy", fields={"text": "good 0", "label": "bad"}
    )
    made["example"] = first.example
    for i in range(1, 8):
        more = await examples.submit(
            platform, people["other"], task_code="toy", fields={"text": f"good {i}", "label": "bad"}
        )
        await validation.validate(platform, people["owner"], more.example.id, "CORRECT")
    await validation.validate(platform, people["other"], first.example.id, "INCORRECT", reason="unsure")
    review = await examples.reviews(platform, people["owner"], [first.example.id])
    made["validation"] = review[first.example.id].validations[0][0]
    made["datasets"] = await datasets.build_from_round(platform, people["owner"], "toy", 1)
    made["model"], _ = await submissions.submit_model(
        platform,
        people["author"],
        task_code="toy",
        name="mine",
        backend="python",
        config={"callable": "toy_plugin:keyword_model"},
    )
    made["token"], _ = await auth.create_token(platform, people["author"], name="laptop")
    made["webhook"] = (
        await webhooks.create(platform, people["author"], "toy", "https://hooks.example.org/a", ["modelFooled"])
    ).webhook
    made["proposal"] = await proposals.propose(platform, people["author"], code="newtask", name="A new task")
    made["fork"] = await leaderboard.save_fork(
        platform, people["author"], "toy", "mine", metric_weights=None, dataset_weights=None
    )
    made["round"] = await tasks.get_round(platform, (await tasks.get_task(platform, people["author"], "toy")).row.id)
    return people, made


async def _token(platform, actor) -> str:
    return (await auth.create_token(platform, actor, name="nodes"))[1]


async def test_node_refetches_each_object_for_those_who_may_see_it(gql, platform, world):
    people, made = world
    scoring = made["datasets"][0]
    cases = [
        # (type, key, who sees it, who does not)
        ("Example", made["example"].id, ("author", "owner", "admin"), ("other",)),
        ("Validation", made["validation"].id, ("owner", "admin"), ("author", "other")),
        ("Model", made["model"].id, ("author", "owner", "admin"), ("other",)),
        ("ApiToken", made["token"].id, ("author",), ("owner", "admin", "other")),
        ("Webhook", made["webhook"].id, ("author", "owner", "admin"), ("other",)),
        ("TaskProposal", made["proposal"].id, ("author", "admin"), ("owner", "other")),
        ("LeaderboardFork", made["fork"].id, ("author", "other", "owner"), ()),
        ("Dataset", scoring.id, ("author", "owner", "other"), ()),
        ("Round", made["round"].id, ("author", "other"), ()),
        ("Task", "toy", ("author", "other", "admin"), ()),
        ("User", people["other"].user_id, ("author", "admin"), ()),
    ]
    tokens = {n: await _token(platform, a) for n, a in people.items()}
    for type_name, key, sees, blind in cases:
        wanted = gid(type_name, key)
        for who in sees:
            found = (await gql(NODE, {"id": wanted}, token=tokens[who]))["node"]
            assert found == {"__typename": type_name, "id": wanted}, (type_name, who, found)
        for who in blind:
            assert (await gql(NODE, {"id": wanted}, token=tokens[who]))["node"] is None, (type_name, who)


async def test_nodes_follow_the_order_given_with_nulls_for_what_is_unseen(gql, platform, world):
    people, made = world
    token = await _token(platform, people["other"])
    ids = [gid("Task", "toy"), gid("Example", made["example"].id), "not an id", gid("User", people["author"].user_id)]
    found = (await gql(NODES, {"ids": ids}, token=token))["nodes"]
    assert found == [
        {"__typename": "Task", "id": ids[0]},
        None,  # the author's example: not for others
        None,
        {"__typename": "User", "id": ids[3]},
    ]
    answer = await gql(NODES, {"ids": [ids[0]] * 101}, token=token, expect_errors=True)
    assert answer["errors"][0]["extensions"]["code"] == "INVALID_INPUT"


async def test_objects_link_to_objects_by_global_id(gql, platform, world):
    people, made = world
    token = await _token(platform, people["author"])
    query = """query($id: ID!) { node(id: $id) { ... on Example { id task { id code } round { id number }
      context { id } } } }"""
    example = (await gql(query, {"id": gid("Example", made["example"].id)}, token=token))["node"]
    assert example["task"] == {"id": gid("Task", "toy"), "code": "toy"}
    assert example["round"] == {"id": gid("Round", made["round"].id), "number": 1}
    model_query = """query($id: ID!) { model(id: $id) { task { code } submitter { id username }
      evaluations { nodes { id dataset { id } } } } }"""
    model = (await gql(model_query, {"id": gid("Model", made["model"].id)}, token=token))["model"]
    assert model["task"] == {"code": "toy"}
    assert model["submitter"] == {"id": gid("User", people["author"].user_id), "username": "nd_author"}
    for evaluation in model["evaluations"]["nodes"]:
        found = (await gql(NODE, {"id": evaluation["id"]}, token=token))["node"]
        assert found == {"__typename": "Evaluation", "id": evaluation["id"]}


async def test_links_are_objects_with_the_visibility_of_their_own_query(gql, platform, world):
    """``Validation.example``, ``Evaluation.model``, ``Webhook.registrant``, ``TaskProposal.proposer`` and
    ``LeaderboardEntry.user`` answer the object itself, as ``node(id:)`` would for the caller: null where it would."""
    people, made = world
    tokens = {n: await _token(platform, a) for n, a in people.items()}
    validation = (
        await gql(
            "query($id: ID!) { node(id: $id) { ... on Validation { example { id fields } } } }",
            {"id": gid("Validation", made["validation"].id)},
            token=tokens["owner"],
        )
    )["node"]
    assert validation["example"]["id"] == gid("Example", made["example"].id)
    model = (
        await gql(
            "query($id: ID!) { model(id: $id) { evaluations { nodes { model { id name } } } } }",
            {"id": gid("Model", made["model"].id)},
            token=tokens["author"],
        )
    )["model"]
    assert model["evaluations"]["nodes"] and all(
        e["model"] == {"id": gid("Model", made["model"].id), "name": "mine"} for e in model["evaluations"]["nodes"]
    )
    hooks = await gql('query { webhooks(taskCode: "toy") { registrant { username } } }', token=tokens["owner"])
    assert [w["registrant"] for w in hooks["webhooks"]] == [{"username": "nd_author"}]
    proposal_query = "query($id: ID!) { node(id: $id) { ... on TaskProposal { proposer { id username } } } }"
    proposal = await gql(proposal_query, {"id": gid("TaskProposal", made["proposal"].id)}, token=tokens["admin"])
    assert proposal["node"]["proposer"] == {"id": gid("User", people["author"].user_id), "username": "nd_author"}
    board = await gql(
        'query { round(taskCode: "toy") { leaderboard(first: 5) { nodes { username user { id username } } } } }',
        token=tokens["author"],
    )
    entries = board["round"]["leaderboard"]["nodes"]
    assert entries and all(e["user"]["username"] == e["username"] for e in entries)
    rounds = await gql('query { round(taskCode: "toy") { task { id code } } }', token=tokens["other"])
    assert rounds["round"]["task"] == {"id": gid("Task", "toy"), "code": "toy"}
    # a registered model links to the model that scores it: its owners see it, others do not (it is unpublished)
    made_models = await training.evaluate_round_targets(platform, people["owner"], "toy")
    registry = 'query { registeredModels(taskCode: "toy") { id model { id } } }'
    owned = (await gql(registry, token=tokens["owner"]))["registeredModels"]
    assert sorted(r["model"]["id"] for r in owned if r["model"]) == sorted(gid("Model", m.id) for m in made_models)
    assert made_models
    others = (await gql(registry, token=tokens["other"]))["registeredModels"]
    assert all(r["model"] is None for r in others)


async def test_an_id_of_another_type_is_refused_with_the_type_expected(gql, platform, world):
    people, made = world
    token = await _token(platform, people["author"])
    wrong = gid("Model", made["example"].id)  # the right number inside the wrong type
    answer = await gql(
        """mutation($input: RetractExampleInput!) { retractExample(input: $input) { __typename
          ... on InvalidInput { fieldErrors { field rule message } } } }""",
        {"input": {"id": wrong}},
        token=token,
    )
    result = answer["retractExample"]
    assert result["__typename"] == "InvalidInput"
    assert result["fieldErrors"][0]["field"] == ["id"] and result["fieldErrors"][0]["rule"] == "id"
    assert "an Example" in result["fieldErrors"][0]["message"]
    bare = await gql(
        "query($id: ID!) { example(id: $id) { id } }", {"id": str(made["example"].id)}, token=token, expect_errors=True
    )
    assert bare["data"]["example"] is None  # a bare row number names nothing
    assert bare["errors"][0]["extensions"]["code"] == "INVALID_INPUT"


async def test_contexts_items_snapshots_and_deliveries_are_nodes_too(gql, platform, world):
    people, made = world
    token = await _token(platform, people["author"])
    context = (await gql('query { nextContext(taskCode: "toy") { id } }', token=token))["nextContext"]
    standard = next(d for d in made["datasets"] if d.access == "STANDARD")
    items = await gql(
        "query($id: ID!) { datasetItems(id: $id, first: 2) { nodes { id position } } }",
        {"id": gid("Dataset", standard.id)},
        token=token,
    )
    snapshot = await leaderboard.snapshot(
        platform, people["author"], "toy", "now", metric_weights=None, dataset_weights=None
    )
    await examples.submit(platform, people["author"], task_code="toy", fields={"text": "good day", "label": "bad"})
    hook = await gql('query { webhooks(taskCode: "toy") { deliveries { nodes { id } } } }', token=token)
    deliveries = [d["id"] for w in hook["webhooks"] for d in w["deliveries"]["nodes"]]
    assert deliveries  # the author's fooling example above was sent to their webhook
    wanted = [
        context["id"],
        *[i["id"] for i in items["datasetItems"]["nodes"]],
        gid("LeaderboardSnapshot", snapshot.id),
        *deliveries,
    ]
    found = (await gql(NODES, {"ids": wanted}, token=token))["nodes"]
    assert [f["id"] for f in found] == wanted
    assert [f["__typename"] for f in found][:4] == ["Context", "DatasetItem", "DatasetItem", "LeaderboardSnapshot"]
    assert all(f["__typename"] == "WebhookDelivery" for f in found[4:])
    other = await _token(platform, people["other"])
    assert (await gql(NODES, {"ids": deliveries}, token=other))["nodes"] == [None] * len(deliveries)
