"""End to end: the real server in a subprocess, driven over HTTP with the ``gql`` client as an outside user would.

A module-scoped fixture, run once per database backend (SQLite, then PostgreSQL):

* writes a throwaway task plugin (``tests/e2e_plugin/e2e_spans``, task ``e2e-spans``) into a temporary folder with an
  ``e2e_spans-0.1.dist-info`` beside it, so that the server discovers it through entry points without pip;
* runs ``dynaforge db upgrade``, starts ``dynaforge serve`` on a free port, waits for ``/healthz``, and adds a few
  sentiment contexts through ``addContexts`` as an admin created with the CLI;
* stops the server (and drops the PostgreSQL database) afterwards.

PostgreSQL is expected at postgresql://postgres@127.0.0.1:5432 (trust auth; ``DYNAFORGE_TEST_POSTGRES`` overrides it).
When it is unreachable the PostgreSQL half is skipped, except with ``CI=true``, where it fails.
"""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from gql.client import AsyncClientSession
from support import (
    ERROR_FIELDS,
    REGISTER,
    Server,
    cli,
    create_operator,
    database,
    e2e_environment,
    register,
    run,
    serve,
    session,
    write_e2e_plugin,
)

from dynaforge.api.errors import field_path

pytestmark = pytest.mark.e2e

# Sentiment prompts of our own; the operator adds them before the server starts.
SENTIMENT_PROMPTS = [
    {"prompt": "Describe the first warm afternoon after a long winter."},
    {"prompt": "Tell a colleague about the parcel that finally arrived."},
]

# Written for these tests (and checked against the shipped model): clearly positive and clearly negative.
POSITIVE = "What a wonderful, delightful afternoon; I loved every single minute of it and felt truly happy."
NEGATIVE = "This was a horrible, miserable experience and I hated every awful minute of it."

PASSAGE = "Lighthouses guided fishing boats along the rocky northern coast for two hundred years."
QUESTION = "What guided the fishing boats along the coast?"

ADD_CONTEXTS = """
mutation($input: AddContextsInput!) {
  addContexts(input: $input) { __typename ... on ContextsAdded { ids } ... on Error { message } }
}"""


def _seed_contexts(env: dict[str, str], workdir: Path, database_url: str, base_url: str) -> None:
    """As a real operator would: an admin made with the CLI adds the sentiment prompts through addContexts."""
    token = create_operator(env, workdir, database_url)
    response = httpx.post(
        f"{base_url}/graphql",
        json={"query": ADD_CONTEXTS, "variables": {"input": {"taskCode": "sentiment", "contexts": SENTIMENT_PROMPTS}}},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    payload = response.json()["data"]["addContexts"]
    assert payload["__typename"] == "ContextsAdded", payload


# --------------------------------------------------------------------------- the server


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ],
)
def server(request, tmp_path_factory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp(f"e2e-{request.param}")
    write_e2e_plugin(workdir)
    env = e2e_environment(workdir)
    with database(request.param, workdir) as database_url:
        cli(env, workdir, "db", "upgrade", "--database-url", database_url)
        with serve(env, workdir, "server", "--database-url", database_url) as base_url:
            _seed_contexts(env, workdir, database_url, base_url)
            yield Server(request.param, base_url, database_url, env, workdir)


# --------------------------------------------------------------------------- the client


LOGIN = """mutation Login($input: LoginInput!) {
  login(input: $input) { __typename ... on AuthPayload { token user { username } } ... on Error { message } } }"""

CREATE_TOKEN = (
    """mutation CreateToken($input: CreateApiTokenInput!) {
  createApiToken(input: $input) { __typename ... on ApiTokenCreated { token apiToken { id name prefix revoked } } """
    + ERROR_FIELDS
    + "} }"
)

REVOKE_TOKEN = (
    """mutation RevokeToken($input: RevokeApiTokenInput!) {
  revokeApiToken(input: $input) { __typename ... on ApiTokenRevoked { apiToken { id revoked } } """
    + ERROR_FIELDS
    + "} }"
)

CREATE_EXAMPLE = (
    """mutation CreateExample($input: CreateExampleInput!) {
  createExample(input: $input) {
    __typename
    ... on ExampleCreated {
      fooled prediction { fields label span { text start } probabilities { label probability } }
      example { id fields fooled status task { code } round { number } context { id } }
    }
    ... on PredictionPending { example { id } }
"""
    + ERROR_FIELDS
    + "} }"
)

ME = "query Me { me { username } }"

TASKS = "query Tasks { tasks { code name labels fieldsJsonSchema currentRound { number } } }"

ROUND = "query Round($code: String!) { task(code: $code) { currentRound { number collected fooled pending } } }"

NEXT_CONTEXT = "query Next($code: String!) { nextContext(taskCode: $code) { id fields } }"

EXAMPLES = """query Examples($code: String!, $first: Int, $after: String) {
  examples(taskCode: $code, first: $first, after: $after) {
    edges { cursor node { id fields fooled status context { id }
      prediction { fields label span { text start } probabilities { label probability } } } }
    pageInfo { hasNextPage endCursor }
  }
}"""

PLUGINS = "query Plugins { plugins { name version hooks isDefault error } }"


async def create_example(s: AsyncClientSession, task_code: str, fields: Any, context_id: str | None = None) -> dict:
    payload: dict[str, Any] = {"taskCode": task_code, "fields": fields}
    if context_id is not None:
        payload["contextId"] = context_id
    return (await run(s, CREATE_EXAMPLE, input=payload))["createExample"]


async def all_examples(s: AsyncClientSession, task_code: str, page_size: int = 2) -> tuple[list[dict], int]:
    """Every example the signed-in user can see, following endCursor; returns (nodes, number of pages)."""
    nodes: list[dict] = []
    after, pages = None, 0
    while True:
        page = (await run(s, EXAMPLES, code=task_code, first=page_size, after=after))["examples"]
        pages += 1
        assert len(page["edges"]) <= page_size
        nodes.extend(edge["node"] for edge in page["edges"])
        if not page["pageInfo"]["hasNextPage"]:
            return nodes, pages
        after = page["pageInfo"]["endCursor"]
        assert after, page
        assert pages < 50, "paging does not end"


async def round_counters(s: AsyncClientSession, task_code: str) -> dict[str, int]:
    return (await run(s, ROUND, code=task_code))["task"]["currentRound"]


async def snapshot(s: AsyncClientSession) -> dict[str, Any]:
    """What a write would change: the user's examples and each task's round counters."""
    state: dict[str, Any] = {}
    for code in ("sentiment", "e2e-spans"):
        nodes, _ = await all_examples(s, code, page_size=100)
        state[code] = {"examples": len(nodes), "round": await round_counters(s, code)}
    return state


def assert_invalid(result: dict, field: str, rule: str) -> dict:
    assert result["__typename"] == "InvalidInput", result
    matching = [e for e in result["fieldErrors"] if e["field"] == field_path(field) and e["rule"] == rule]
    assert matching, result
    assert result["message"].strip(), result
    assert matching[0]["message"].strip(), result
    return matching[0]


# --------------------------------------------------------------------------- tests


async def test_health_plugins_and_tasks(server: Server):
    with urllib.request.urlopen(server.base_url + "/healthz", timeout=5) as response:
        health = json.load(response)
    assert health["status"] == "ok"
    assert health["tasks"] >= 2  # a count: task codes are for the tasks query, which hides hidden ones

    async with session(server) as s:
        plugins = {p["name"]: p for p in (await run(s, PLUGINS))["plugins"]}
        assert "e2e_spans" in plugins, plugins
        assert plugins["e2e_spans"]["error"] is None
        assert plugins["e2e_spans"]["version"] == "0.1"
        assert "register_tasks" in plugins["e2e_spans"]["hooks"]
        assert plugins["e2e_spans"]["isDefault"] is False
        assert plugins["sentiment"]["error"] is None
        assert not [p for p in plugins.values() if p["error"]], plugins

        tasks = {t["code"]: t for t in (await run(s, TASKS))["tasks"]}
    assert {"sentiment", "e2e-spans"} <= set(tasks)

    sentiment = tasks["sentiment"]
    assert sentiment["name"] == "Sentiment"
    assert sentiment["labels"] == ["positive", "negative", "neutral"]
    assert sentiment["currentRound"] == {"number": 1}
    schema = sentiment["fieldsJsonSchema"]
    assert schema["properties"]["label"]["enum"] == ["positive", "negative", "neutral"]
    assert schema["properties"]["statement"]["maxLength"] == 500
    assert "statement" in schema["required"] and "label" in schema["required"]

    spans = tasks["e2e-spans"]
    assert spans["name"] == "E2E spans"
    assert spans["labels"] == []
    assert spans["currentRound"] == {"number": 1}
    props = spans["fieldsJsonSchema"]["properties"]
    assert set(props) == {"passage", "question", "answer"}
    assert props["answer"]["x-span-of"] == "passage"
    assert props["question"]["maxLength"] == 200
    assert props["passage"]["x-role"] == "context"


async def test_register_login_and_api_tokens(server: Server):
    token, user = await register(server)
    async with session(server, token) as s:
        assert (await run(s, ME))["me"] == {"username": user["username"]}
        created = (await run(s, CREATE_TOKEN, input={"name": "e2e second token"}))["createApiToken"]
    assert created["__typename"] == "ApiTokenCreated", created
    assert created["apiToken"]["name"] == "e2e second token"
    assert created["apiToken"]["revoked"] is False
    assert created["token"].startswith(created["apiToken"]["prefix"])
    assert created["token"] != token

    async with session(server, created["token"]) as s:
        assert (await run(s, ME))["me"] == {"username": user["username"]}

    async with session(server) as s:
        # anonymous: no user, and a token cannot be created
        assert (await run(s, ME))["me"] is None
        denied = (await run(s, CREATE_TOKEN, input={"name": "nope"}))["createApiToken"]
        assert denied["__typename"] == "NotAuthenticated", denied
        assert "Authorization" in denied["message"]
        # the same username again
        taken = {"username": user["username"], "email": "someone-else@example.org", "password": "another-password"}
        again = (await run(s, REGISTER, input=taken))["register"]
        assert again["__typename"] == "AlreadyExists", again
        assert "already registered" in again["message"]
        # login issues yet another working token
        login = (await run(s, LOGIN, input={"username": user["username"], "password": "correct-horse-e2e"}))["login"]
        assert login["__typename"] == "AuthPayload", login
        wrong = (await run(s, LOGIN, input={"username": user["username"], "password": "wrong-password"}))["login"]
        assert wrong["__typename"] == "InvalidCredentials", wrong

    async with session(server, login["token"]) as s:
        assert (await run(s, ME))["me"] == {"username": user["username"]}


async def test_sentiment_examples_fooled_and_paging(server: Server):
    token, _ = await register(server)
    async with session(server, token) as s:
        before = await round_counters(s, "sentiment")
        context = (await run(s, NEXT_CONTEXT, code="sentiment"))["nextContext"]
        assert context["id"]
        assert context["fields"]["prompt"] in {c["prompt"] for c in SENTIMENT_PROMPTS}

        created_ids = []

        right = await create_example(s, "sentiment", {"statement": POSITIVE, "label": "positive"}, context["id"])
        assert right["__typename"] == "ExampleCreated", right
        assert right["fooled"] is False
        assert right["prediction"]["label"] == "positive"
        probabilities = right["prediction"]["probabilities"]
        assert {p["label"] for p in probabilities} == {"positive", "negative", "neutral"}
        chances = [p["probability"] for p in probabilities]
        assert chances == sorted(chances, reverse=True)  # most likely first
        assert right["example"]["fields"] == {"statement": POSITIVE, "label": "positive"}
        assert right["example"]["context"] == {"id": context["id"]}
        assert right["example"]["status"] == "CREATED"
        assert right["example"]["task"]["code"] == "sentiment"
        assert right["example"]["round"]["number"] == 1
        created_ids.append(right["example"]["id"])

        wrong = await create_example(
            s,
            "sentiment",
            {"statement": POSITIVE, "label": "negative", "explanation": "testing the fooled flag"},
            context["id"],
        )
        assert wrong["__typename"] == "ExampleCreated", wrong
        assert wrong["fooled"] is True
        assert wrong["prediction"]["label"] == "positive"
        assert wrong["example"]["fields"]["explanation"] == "testing the fooled flag"
        created_ids.append(wrong["example"]["id"])

        negative = await create_example(s, "sentiment", {"statement": NEGATIVE, "label": "negative"}, context["id"])
        assert negative["__typename"] == "ExampleCreated", negative
        assert negative["fooled"] is False
        assert negative["prediction"]["label"] == "negative"
        created_ids.append(negative["example"]["id"])

        nodes, pages = await all_examples(s, "sentiment", page_size=2)
        assert pages == 2
        assert [n["id"] for n in nodes] == created_ids[::-1]  # newest first, nobody else's
        assert [n["fooled"] for n in nodes] == [False, True, False]
        assert [n["fields"]["label"] for n in nodes] == ["negative", "negative", "positive"]
        assert all(n["status"] == "CREATED" and n["prediction"] for n in nodes)

        after = await round_counters(s, "sentiment")
    assert after["collected"] == before["collected"] + 3  # the tests of a module run one after another
    assert after["fooled"] == before["fooled"] + 1
    assert after["pending"] == before["pending"]


async def test_span_task_examples(server: Server):
    token, _ = await register(server)
    async with session(server, token) as s:
        before = await snapshot(s)

        first_word = PASSAGE.split()[0]
        good = await create_example(
            s, "e2e-spans", {"passage": PASSAGE, "question": QUESTION, "answer": {"text": first_word, "start": 0}}
        )
        assert good["__typename"] == "ExampleCreated", good
        assert good["prediction"]["fields"]["answer"] == {"text": first_word, "start": 0}
        assert good["prediction"]["span"] == {"text": first_word, "start": 0}
        assert good["fooled"] is False  # the annotator selected what the model answers
        assert good["example"]["context"] is None
        assert good["example"]["fields"]["passage"] == PASSAGE  # context fields are stored on the example

        start = PASSAGE.index("fishing boats")
        fooling = await create_example(
            s,
            "e2e-spans",
            {
                "passage": PASSAGE,
                "question": "What did the lighthouses guide?",
                "answer": {"text": "fishing boats", "start": start},
            },
        )
        assert fooling["__typename"] == "ExampleCreated", fooling
        assert fooling["prediction"]["fields"]["answer"]["text"] == first_word
        assert fooling["fooled"] is True  # a different span text

        after = await snapshot(s)
        nodes, _ = await all_examples(s, "e2e-spans")
    assert after["e2e-spans"]["examples"] == before["e2e-spans"]["examples"] + 2
    assert after["e2e-spans"]["round"]["collected"] == before["e2e-spans"]["round"]["collected"] + 2
    assert after["e2e-spans"]["round"]["fooled"] == before["e2e-spans"]["round"]["fooled"] + 1
    assert after["sentiment"] == before["sentiment"]
    assert [n["fields"]["answer"]["text"] for n in nodes] == ["fishing boats", first_word]


async def test_bad_input_is_typed_and_stores_nothing(server: Server):
    token, _ = await register(server)
    async with session(server, token) as s:
        created = (await run(s, CREATE_TOKEN, input={"name": "to be revoked"}))["createApiToken"]
        assert created["__typename"] == "ApiTokenCreated", created
        context_id = (await run(s, NEXT_CONTEXT, code="sentiment"))["nextContext"]["id"]
        start = await snapshot(s)

        async def unchanged(case: str) -> None:
            assert await snapshot(s) == start, f"{case} wrote something"

        # unknown task
        result = await create_example(s, "no-such-task", {"statement": POSITIVE, "label": "positive"})
        assert result["__typename"] == "NotFound", result
        assert "no-such-task" in result["message"] and "sentiment" in result["message"], result  # names known tasks
        await unchanged("unknown task")

        # a label outside the task's set
        result = await create_example(s, "sentiment", {"statement": POSITIVE, "label": "ecstatic"}, context_id)
        error = assert_invalid(result, "label", "choice")
        assert "positive" in error["message"] and "ecstatic" in error["message"]
        await unchanged("bad label")

        # a statement over 500 characters
        long_statement = "The soup was warm and the bread was fresh. " * 14
        assert len(long_statement.strip()) > 500
        result = await create_example(s, "sentiment", {"statement": long_statement, "label": "positive"}, context_id)
        error = assert_invalid(result, "statement", "max_length")
        assert "500" in error["message"]
        await unchanged("statement too long")

        # a field the task does not have
        result = await create_example(
            s, "sentiment", {"statement": POSITIVE, "label": "positive", "mood": "sunny"}, context_id
        )
        error = assert_invalid(result, "mood", "unknown_field")
        assert "sentiment" in error["message"]
        await unchanged("unknown field")

        # a span that is not in its context
        result = await create_example(
            s, "e2e-spans", {"passage": PASSAGE, "question": QUESTION, "answer": {"text": "Windmills", "start": 0}}
        )
        error = assert_invalid(result, "answer", "span_in_context")
        assert "passage" in error["message"]
        # the right text at the wrong offset is not in context either
        result = await create_example(
            s, "e2e-spans", {"passage": PASSAGE, "question": QUESTION, "answer": {"text": "coast", "start": 3}}
        )
        assert_invalid(result, "answer", "span_in_context")
        await unchanged("span not in context")

        # a question over the task's 200 characters
        result = await create_example(
            s,
            "e2e-spans",
            {"passage": PASSAGE, "question": "Why? " * 50, "answer": {"text": PASSAGE.split()[0], "start": 0}},
        )
        assert_invalid(result, "question", "max_length")
        await unchanged("question too long")

        # revoke the second token with the first
        revoked = (await run(s, REVOKE_TOKEN, input={"id": created["apiToken"]["id"]}))["revokeApiToken"]
        assert revoked["__typename"] == "ApiTokenRevoked", revoked
        assert revoked["apiToken"] == {"id": created["apiToken"]["id"], "revoked": True}

        # no token at all
        async with session(server) as anonymous:
            result = await create_example(
                anonymous, "sentiment", {"statement": POSITIVE, "label": "positive"}, context_id
            )
        assert result["__typename"] == "NotAuthenticated", result
        assert "Authorization: Bearer" in result["message"], result
        await unchanged("missing token")

        # the revoked token
        async with session(server, created["token"]) as revoked_session:
            result = await create_example(
                revoked_session, "sentiment", {"statement": POSITIVE, "label": "positive"}, context_id
            )
            assert (await run(revoked_session, ME))["me"] is None
        assert result["__typename"] == "NotAuthenticated", result
        assert "revoked" in result["message"].lower(), result
        await unchanged("revoked token")

        # a token that never existed
        async with session(server, "dfk_" + "x" * 43) as bogus:
            result = await create_example(bogus, "sentiment", {"statement": POSITIVE, "label": "positive"}, context_id)
        assert result["__typename"] == "NotAuthenticated", result
        assert "not valid" in result["message"], result
        await unchanged("invalid token")

        # the first token still works
        assert (await run(s, ME))["me"] is not None


async def test_cli_users_and_tokens(server: Server):
    username = f"cli_{uuid.uuid4().hex[:10]}"
    password = "cli-password-e2e"
    created = cli(
        server.env,
        server.workdir,
        "users",
        "create",
        "--username",
        username,
        "--email",
        f"{username}@example.org",
        "--password",
        password,
        "--database-url",
        server.database_url,
    )
    assert f"created user {username}" in created.stdout
    issued = cli(
        server.env, server.workdir, "tokens", "create", "--username", username, "--database-url", server.database_url
    )
    token = issued.stdout.strip().splitlines()[-1].strip()
    assert token.startswith("dfk_"), issued.stdout

    async with session(server, token) as s:
        assert (await run(s, ME))["me"] == {"username": username}
    async with session(server) as s:
        login = (await run(s, LOGIN, input={"username": username, "password": password}))["login"]
    assert login["__typename"] == "AuthPayload", login
    assert login["user"]["username"] == username
