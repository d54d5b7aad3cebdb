"""The GraphQL API driven in-process through httpx's ASGI transport, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import REGISTER_USER, register_user

from dynaforge.api.schema import sdl

CREATE = """
mutation($input: CreateExampleInput!) {
  createExample(input: $input) {
    __typename
    ... on ExampleCreated {
      fooled prediction { label fields }
      example { id fooled status prediction { label fields } fields round { number } task { code } }
    }
    ... on PredictionPending { message example { id status } }
    ... on Error { message }
    ... on InvalidInput { fieldErrors { field rule message } }
  }
}"""


def test_schema_graphql_is_up_to_date():
    committed = (Path(__file__).parent.parent / "schema.graphql").read_text()
    assert committed == sdl(), "schema.graphql drifted from the code: run `dynaforge schema > schema.graphql`"


async def test_tasks_query_is_public(gql):
    data = await gql(
        "{ tasks { code name labels fieldsJsonSchema currentRound { number collected } fields { name role type "
        "choices } } }",
        token=None,
    )
    toy = next(t for t in data["tasks"] if t["code"] == "toy")
    assert toy["labels"] == ["good", "bad"]
    assert toy["currentRound"] == {"number": 1, "collected": 0}
    assert toy["fieldsJsonSchema"]["properties"]["label"]["enum"] == ["good", "bad"]
    assert {"name": "label", "role": "TARGET", "type": "CHOICE", "choices": ["good", "bad"]} in toy["fields"]
    inputs_only = await gql('{ task(code: "toy") { fieldsJsonSchema(roles: [INPUT]) } }', token=None)
    assert list(inputs_only["task"]["fieldsJsonSchema"]["properties"]) == ["text"]
    assert (await gql('{ task(code: "missing") { code } }', token=None))["task"] is None
    rounds = await gql(
        '{ round(taskCode: "toy") { number } first: round(taskCode: "toy", number: 1) { number } '
        'none: round(taskCode: "toy", number: 9) { number } }',
        token=None,
    )
    assert rounds == {"round": {"number": 1}, "first": {"number": 1}, "none": None}


async def test_register_create_example_and_page(gql):
    gql.token, _ = await register_user(gql)
    context = (await gql('{ nextContext(taskCode: "toy") { id fields } }'))["nextContext"]
    assert "topic" in context["fields"]
    created = (
        await gql(
            CREATE,
            {
                "input": {
                    "taskCode": "toy",
                    "contextId": context["id"],
                    "fields": {"text": "good vibes", "label": "bad"},
                }
            },
        )
    )["createExample"]
    assert created["__typename"] == "ExampleCreated"
    assert created["fooled"] is True and created["example"]["status"] == "CREATED"
    assert created["prediction"] == created["example"]["prediction"] == {"label": "good", "fields": {"label": "good"}}
    assert created["example"]["round"]["number"] == 1 and created["example"]["task"]["code"] == "toy"
    second = await gql(CREATE, {"input": {"taskCode": "toy", "fields": {"text": "good", "label": "good"}}})
    assert second["createExample"]["fooled"] is False

    page = (
        await gql(
            '{ examples(taskCode: "toy", first: 1) { edges { node { id fooled } cursor } '
            "pageInfo { hasNextPage endCursor } } }"
        )
    )["examples"]
    assert page["pageInfo"]["hasNextPage"] is True
    assert page["edges"][0]["node"]["id"] == second["createExample"]["example"]["id"]
    rest = (
        await gql(
            'query($a: String) { examples(taskCode: "toy", first: 5, after: $a) { edges { node { id } } '
            "pageInfo { hasNextPage } } }",
            {"a": page["pageInfo"]["endCursor"]},
        )
    )["examples"]
    assert [e["node"]["id"] for e in rest["edges"]] == [created["example"]["id"]]
    me = (await gql("{ me { username email apiTokens { nodes { name revoked } } } }"))["me"]
    assert me["username"] == "alice" and me["email"] == "alice@example.org"


async def test_typed_errors_and_nothing_written(gql):
    result = (
        await gql(CREATE, {"input": {"taskCode": "toy", "fields": {"text": "good", "label": "good"}}}, token=None)
    )["createExample"]
    assert result["__typename"] == "NotAuthenticated" and "Bearer" in result["message"]
    gql.token, _ = await register_user(gql)
    bad_label = await gql(CREATE, {"input": {"taskCode": "toy", "fields": {"text": "ok", "label": "ugly"}}})
    assert bad_label["createExample"]["__typename"] == "InvalidInput"
    assert bad_label["createExample"]["fieldErrors"][0]["field"] == ["label"]
    unknown = (await gql(CREATE, {"input": {"taskCode": "zzz", "fields": {}}}))["createExample"]
    assert unknown["__typename"] == "NotFound" and "known tasks: toy" in unknown["message"]
    bad_id = (await gql(CREATE, {"input": {"taskCode": "toy", "contextId": "abc", "fields": {}}}))["createExample"]
    assert bad_id["__typename"] == "InvalidInput"
    not_object = (await gql(CREATE, {"input": {"taskCode": "toy", "fields": [1, 2]}}))["createExample"]
    assert not_object["fieldErrors"][0]["rule"] == "type"
    counts = await gql(
        '{ task(code: "toy") { currentRound { collected pending } } examples(taskCode: "toy") { edges { node { id } } '
        "} }"
    )
    assert counts["task"]["currentRound"] == {"collected": 0, "pending": 0}
    assert counts["examples"]["edges"] == []


async def test_revoked_token_is_refused_with_a_clear_message(gql):
    gql.token, _ = await register_user(gql)
    made = await gql(
        'mutation { createApiToken(input: {name: "ci"}) { ... on ApiTokenCreated { token apiToken { id } } } }'
    )
    token, token_id = made["createApiToken"]["token"], made["createApiToken"]["apiToken"]["id"]
    revoked = await gql(
        "mutation($id: ID!) { revokeApiToken(input: {id: $id}) { __typename ... on ApiTokenRevoked { apiToken { "
        "revoked } } } }",
        {"id": token_id},
    )
    assert revoked["revokeApiToken"]["apiToken"]["revoked"] is True
    result = (
        await gql(CREATE, {"input": {"taskCode": "toy", "fields": {"text": "good", "label": "good"}}}, token=token)
    )["createExample"]
    assert result["__typename"] == "NotAuthenticated" and "revoked" in result["message"]


async def test_login_and_duplicate_registration(gql):
    await register_user(gql, "zoe")
    again = await gql(REGISTER_USER, {"u": "zoe", "e": "zoe2@example.org", "p": "correct horse battery"}, token=None)
    assert again["register"]["__typename"] == "AlreadyExists"
    # the same address again, under another name: answered like any registration, never "that email is used"
    same_email = await gql(
        REGISTER_USER, {"u": "zoe-too", "e": "ZOE@example.org", "p": "correct horse battery"}, token=None
    )
    assert same_email["register"]["__typename"] == "AuthPayload"
    assert set(same_email["register"]) == set(
        (await gql(REGISTER_USER, {"u": "yves", "e": "yves@example.org", "p": "correct horse battery"}, token=None))[
            "register"
        ]
    )
    ok = await gql(
        'mutation { login(input: {username: "zoe", password: "correct horse battery"}) { __typename ... on '
        "AuthPayload { token } } }",
        token=None,
    )
    assert ok["login"]["token"].startswith("dfk_")
    bad = await gql('mutation { login(input: {username: "zoe", password: "nope nope"}) { __typename } }', token=None)
    assert bad["login"]["__typename"] == "InvalidCredentials"


async def test_query_errors_carry_codes_and_unexpected_errors_are_masked(gql, platform, monkeypatch):
    body = await gql('{ nextContext(taskCode: "nope") { id } }', token=None, expect_errors=True)
    assert body["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    assert "known tasks" in body["errors"][0]["message"]

    async def explode(*args, **kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr("dynaforge.services.tasks.list_tasks", explode)
    body = await gql("{ tasks { code } }", token=None, expect_errors=True)
    assert body["errors"][0]["message"] == "Unexpected error; it has been logged."
    assert "secret" not in str(body)


async def test_depth_alias_and_token_limits(gql, platform):
    deep = "{ tasks { currentRound { targetModels { name } } } }"
    assert "errors" not in await gql(deep, token=None, expect_errors=True)
    aliases = "{ " + " ".join(f"a{i}: tasks {{ code }}" for i in range(20)) + " }"
    body = await gql(aliases, token=None, expect_errors=True)
    assert "aliases" in body["errors"][0]["message"].lower()
    many_tokens = "{ " + " ".join("tasks { code name labels }" for _ in range(400)) + " }"
    body = await gql(many_tokens, token=None, expect_errors=True)
    assert "token" in body["errors"][0]["message"].lower()


async def test_plugins_query_lists_core_defaults_and_task_plugins(gql):
    plugins = (await gql("{ plugins { name isDefault error hooks } }", token=None))["plugins"]
    names = {p["name"]: p for p in plugins}
    assert names["dynaforge.defaults.metrics"]["isDefault"] is True
    assert "register_tasks" in names["toy_plugin"]["hooks"]


async def test_a_broken_plugins_error_is_for_admins(gql, platform, monkeypatch):
    from support import make_user

    monkeypatch.setitem(platform.plugins.errors, "broken_plugin", "ImportError: /srv/secret/path/plugin.py line 3")
    query = "{ plugins { name error } }"
    shown = {p["name"]: p["error"] for p in (await gql(query, token=None))["plugins"]}
    assert shown["broken_plugin"] == "failed to load (admins see why)"
    admin = await make_user(platform, "root2", admin=True)
    from dynaforge.services import auth

    _, token = await auth.create_token(platform, admin, name="t")
    seen = {p["name"]: p["error"] for p in (await gql(query, token=token))["plugins"]}
    assert seen["broken_plugin"].startswith("ImportError") and seen["toy_plugin"] is None


async def test_healthz(client):
    response = await client.get("/healthz")
    assert response.status_code == 200 and response.json()["tasks"] == 1  # a count: hidden tasks' codes stay hidden


@pytest.mark.parametrize("header", ["Bearer", "Basic abc", "Bearer dfk_unknown"])
async def test_malformed_authorization_headers_are_not_trusted(client, header):
    response = await client.post("/graphql", json={"query": "{ me { id } }"}, headers={"Authorization": header})
    assert response.json()["data"]["me"] is None


ADD_CONTEXTS = """
mutation($input: AddContextsInput!) {
  addContexts(input: $input) { __typename ... on ContextsAdded { ids } ... on Error { message }
    ... on InvalidInput { fieldErrors { field rule } } }
}"""


async def test_add_contexts_is_for_owners_and_all_or_nothing(gql, platform):
    from dynaforge.api.node import parse_id
    from dynaforge.services import tasks as task_service
    from dynaforge.services.actor import Actor

    gql.token, user_id = await register_user(gql)
    contexts = {"taskCode": "toy", "contexts": [{"topic": "rivers"}, {"topic": "maps"}]}
    refused = (await gql(ADD_CONTEXTS, {"input": contexts}))["addContexts"]
    assert refused["__typename"] == "Forbidden"
    await task_service.grant_ownership(platform, Actor.system(), "toy", parse_id(user_id, "id", "User"))
    bad = await gql(ADD_CONTEXTS, {"input": {"taskCode": "toy", "contexts": [{"topic": "ok"}, {"colour": 1}]}})
    assert bad["addContexts"]["fieldErrors"] == [{"field": ["contexts", "1", "colour"], "rule": "unknown_field"}]
    added = (await gql(ADD_CONTEXTS, {"input": contexts}))["addContexts"]
    assert added["__typename"] == "ContextsAdded" and len(added["ids"]) == 2
    anonymous = (await gql(ADD_CONTEXTS, {"input": contexts}, token=None))["addContexts"]
    assert anonymous["__typename"] == "NotAuthenticated"


async def test_graphiql_is_served_outside_production(client):
    response = await client.get("/graphql", headers={"Accept": "text/html"})
    assert response.status_code == 200 and "graphiql" in response.text.lower()


def test_production_refuses_the_placeholder_secret_and_hides_graphiql():
    from dynaforge.settings import Settings

    with pytest.raises(ValueError, match="SECRET_KEY"):
        Settings(environment="production")
    assert Settings(environment="production", secret_key="x" * 32).graphiql_enabled is False


async def test_read_admission_limits_concurrent_queries_but_never_mutations():
    import asyncio
    from types import SimpleNamespace

    from strawberry.types.graphql import OperationType

    from dynaforge.api.schema import ReadAdmission

    def hook(kind: OperationType):
        extension = ReadAdmission(1)
        extension.execution_context = SimpleNamespace(operation_type=kind)
        return extension.on_execute()

    first = hook(OperationType.QUERY)
    await first.__anext__()  # the one query allowed in
    waiting = hook(OperationType.QUERY)
    second = asyncio.ensure_future(waiting.__anext__())
    await asyncio.sleep(0.05)
    assert not second.done()  # a second query waits
    mutation = hook(OperationType.MUTATION)
    await asyncio.wait_for(mutation.__anext__(), 1)  # a mutation does not
    with pytest.raises(StopAsyncIteration):
        await first.__anext__()  # the first query ends...
    await asyncio.wait_for(second, 1)  # ...and lets the second in
    await waiting.aclose()
    await mutation.aclose()
