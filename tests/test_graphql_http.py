"""GraphQL over HTTP: the answer's media type follows ``Accept``; under ``application/graphql-response+json`` a request
that never executed is a 400 without ``data``; graphql-http's audit suite passes against the app served over HTTP."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from support import IN_CI, serve_in_loop

from dynaforge.api.media import GRAPHQL_RESPONSE_JSON, JSON, is_request_error, response_media_type
from dynaforge.app import create_app

AUDIT = Path(__file__).parent / "http_audit"
BY_CODE = "query($c: String!) { task(code: $c) { code } }"
NEW = f"{GRAPHQL_RESPONSE_JSON}; charset=utf-8"


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, JSON),
        ("", JSON),
        ("*/*", JSON),
        ("application/json", JSON),
        (GRAPHQL_RESPONSE_JSON, GRAPHQL_RESPONSE_JSON),
        (f"{GRAPHQL_RESPONSE_JSON}, application/json", GRAPHQL_RESPONSE_JSON),
        (f"application/json, {GRAPHQL_RESPONSE_JSON}", GRAPHQL_RESPONSE_JSON),  # equal weight: the newer type
        (f"{GRAPHQL_RESPONSE_JSON};q=0.9, application/json", JSON),
        (f"application/json;q=0.5, {GRAPHQL_RESPONSE_JSON};charset=utf-8", GRAPHQL_RESPONSE_JSON),
        (f"{GRAPHQL_RESPONSE_JSON};q=0", JSON),
        (f"{GRAPHQL_RESPONSE_JSON};q=nonsense", JSON),
        ("Application/GraphQL-Response+JSON", GRAPHQL_RESPONSE_JSON),
    ],
)
def test_the_media_type_follows_accept(accept, expected):
    assert response_media_type(accept) == expected


async def post(client, body: dict, accept: str | None):
    headers = {"accept": accept} if accept else {}
    response = await client.post("/graphql", json=body, headers=headers)
    return response.status_code, response.headers["content-type"], response.json()


@pytest.mark.parametrize(
    ("body", "what"),
    [
        ({"query": "{ tasks { code "}, "Syntax Error"),
        ({"query": "{ noSuchField }"}, "noSuchField"),
        ({"query": "query($c: String!) { task(code: $c) { code } }", "variables": {"c": 7}}, "$c"),
        (
            {"query": "query($c: String!) { task(code: $c) { code } }", "variables": {"c": "nul \u0000 in"}},
            "Invalid input",
        ),
    ],
    ids=["parse", "validation", "variable coercion", "input hygiene"],
)
async def test_a_request_error_is_400_without_data_when_the_client_accepts_it(client, body, what):
    status, content_type, answer = await post(client, body, GRAPHQL_RESPONSE_JSON)
    assert (status, content_type) == (400, NEW)
    assert "data" not in answer
    assert what in answer["errors"][0]["message"]
    # The legacy media type keeps answering 200 with the same errors, for clients written against plain JSON.
    status, content_type, legacy = await post(client, body, "application/json")
    assert (status, content_type) == (200, JSON)
    assert legacy["errors"] == answer["errors"]


async def test_an_executed_request_is_200_under_either_media_type(client):
    for accept, media in ((GRAPHQL_RESPONSE_JSON, NEW), (None, JSON)):
        status, content_type, answer = await post(client, {"query": "{ tasks { code } }"}, accept)
        assert (status, content_type) == (200, media)
        assert [t["code"] for t in answer["data"]["tasks"]] == ["toy"]


def test_only_results_without_data_and_without_field_errors_are_request_errors():
    class Error:
        def __init__(self, path):
            self.path = path

    class Result:
        def __init__(self, data, errors):
            self.data, self.errors = data, errors

    assert is_request_error(Result(None, [Error(None)]))
    assert not is_request_error(Result(None, [Error(["createExample"])]))  # executed: a non-null root field failed
    assert not is_request_error(Result({"tasks": []}, [Error(None)]))
    assert not is_request_error(Result(None, None))


async def test_the_graphql_http_audit_suite_passes(platform):
    """graphql-http's audits (the GraphQL-over-HTTP specification's MUSTs and SHOULDs) against the app served by
    uvicorn on a loopback port: every audit ok, none warns."""
    node = shutil.which("node")
    if node is None or not (AUDIT / "node_modules" / "graphql-http").is_dir():
        message = "Node.js and `npm ci` in tests/http_audit (make setup runs it) are needed for the audit suite"
        if IN_CI:
            pytest.fail(message + " — CI requires it")
        pytest.skip(message)
    app = create_app(platform=platform, sync_tasks=False)
    async with serve_in_loop(app) as base_url:
        process = await asyncio.create_subprocess_exec(
            node,
            str(AUDIT / "audit.mjs"),
            base_url + "/graphql",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, err.decode()
    audits = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert len(audits) >= 60, audits
    assert [a for a in audits if a["status"] != "ok"] == []
