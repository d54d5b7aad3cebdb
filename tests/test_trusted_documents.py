"""Trusted documents: operations registered in a manifest, sent by id (documentId, or a persisted-query hash) over
GET and POST, and, with TRUSTED_DOCUMENTS_ONLY, the only operations the server runs, over HTTP and websockets."""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import websockets
from support import make_settings, serve_in_loop
from toy_plugin import ToyPlugin

from dynaforge.api.documents import TrustedDocuments, document_hash, requested_document_id
from dynaforge.app import create_app
from dynaforge.inference.client import LocalInferenceClient
from dynaforge.plugins import Plugins
from dynaforge.services import tasks as task_service
from dynaforge.services.platform import Platform

TASKS = "query Tasks { tasks { code } }"
BY_CODE = "query Task($code: String!) { task(code: $code) { code name } }"
ROUNDS = 'subscription Rounds { roundChanged(taskCode: "toy") { change } }'
UPLOAD = "mutation Upload($input: UploadContextsInput!) { uploadContexts(input: $input) { __typename } }"
MANIFEST = {
    "sha256:" + document_hash(TASKS): TASKS,
    "task-by-code": BY_CODE,
    "rounds": ROUNDS,
    "sha256:" + document_hash(UPLOAD): UPLOAD,
}


def write_manifest(directory: Path, manifest: dict | str = MANIFEST) -> Path:
    path = directory / "persisted-documents.json"
    path.write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    return path


@asynccontextmanager
async def app_with(db, db_url, tmp_path, **overrides):
    settings = make_settings(db_url, trusted_documents=write_manifest(tmp_path), **overrides)
    plugins = Plugins(allowlist=set(), extra=[ToyPlugin()])
    platform = Platform.create(
        settings, db=db, plugins=plugins, inference=LocalInferenceClient(plugins.registry.backends, timeout_s=1.0)
    )
    await task_service.sync_registered_tasks(platform)
    try:
        yield create_app(platform=platform, sync_tasks=False)
    finally:
        await platform.inference.close()


@asynccontextmanager
async def http_client(app):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        yield client


def test_a_manifest_maps_ids_to_documents_and_knows_their_hashes(tmp_path):
    documents = TrustedDocuments.load(write_manifest(tmp_path))
    assert len(documents) == 4
    assert documents.text("task-by-code") == BY_CODE
    assert documents.text("sha256:" + document_hash(TASKS)) == documents.text(document_hash(TASKS)) == TASKS
    assert documents.text(document_hash(BY_CODE)) == BY_CODE  # any registered text is found by its SHA-256
    assert documents.text("nope") is None
    assert documents.trusted(BY_CODE) and not documents.trusted(BY_CODE + " ")


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "is not JSON"),
        ('["query { a }"]', "must be a JSON object mapping"),
        ('{"a": 7}', "must be a JSON object mapping"),
        ('{"a": "  "}', "must be a JSON object mapping"),
    ],
)
def test_a_bad_manifest_says_what_to_fix(tmp_path, content, says):
    with pytest.raises(ValueError, match=says):
        TrustedDocuments.load(write_manifest(tmp_path, content))
    with pytest.raises(ValueError, match="cannot read"):
        TrustedDocuments.load(tmp_path / "missing.json")


def test_only_trusted_documents_needs_a_manifest(db_url):
    with pytest.raises(ValueError, match="TRUSTED_DOCUMENTS_ONLY needs DYNAFORGE_TRUSTED_DOCUMENTS"):
        make_settings(db_url, trusted_documents_only=True)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"query": "{ a }"}, None),
        ({"documentId": " task-by-code "}, "task-by-code"),
        ({"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "ab12"}}}, "ab12"),
    ],
)
def test_the_requested_id(body, expected):
    assert requested_document_id(body) == expected


@pytest.mark.parametrize("body", [{"documentId": ""}, {"documentId": 7}, {"extensions": {"persistedQuery": "ab"}}])
def test_a_malformed_id_is_refused(body):
    with pytest.raises(ValueError):
        requested_document_id(body)


async def test_documents_are_sent_by_id_over_post_and_get(db, db_url, tmp_path):
    async with app_with(db, db_url, tmp_path) as app, http_client(app) as client:
        by_id = await client.post("/graphql", json={"documentId": "task-by-code", "variables": {"code": "toy"}})
        assert by_id.status_code == 200 and by_id.json()["data"]["task"]["code"] == "toy"
        apollo = {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": document_hash(TASKS)}}}
        assert (await client.post("/graphql", json=apollo)).json()["data"]["tasks"] == [{"code": "toy"}]
        prefixed = await client.get("/graphql", params={"documentId": "sha256:" + document_hash(TASKS)})
        assert prefixed.json()["data"]["tasks"] == [{"code": "toy"}]
        got = await client.get(
            "/graphql", params={"documentId": "task-by-code", "variables": json.dumps({"code": "toy"})}
        )
        assert got.json()["data"]["task"]["code"] == "toy"
        # Without the only-trusted setting, any text still runs.
        assert (await client.post("/graphql", json={"query": "{ tasks { name } }"})).json()["data"]["tasks"]


async def test_a_multipart_upload_names_its_document_by_hash(db, db_url, tmp_path):
    """A file upload from a client that sends ids (the web app's uploadModel) names the document in its operations
    part as urql's persisted-query hash, and runs under TRUSTED_DOCUMENTS_ONLY."""
    async with app_with(db, db_url, tmp_path, trusted_documents_only=True) as app, http_client(app) as client:
        operations = {
            "variables": {"input": {"taskCode": "toy", "file": None}},
            "extensions": {"persistedQuery": {"version": 1, "sha256Hash": document_hash(UPLOAD)}},
        }
        response = await client.post(
            "/graphql",
            data={"operations": json.dumps(operations), "map": json.dumps({"0": ["variables.input.file"]})},
            files={"0": ("contexts.jsonl", b'{"text": "a"}\n', "application/octet-stream")},
            headers={"Apollo-Require-Preflight": "true"},
        )
        assert response.status_code == 200, response.text
        assert response.json()["data"]["uploadContexts"]["__typename"] == "NotAuthenticated"


async def test_an_unknown_or_malformed_id_is_a_400_that_says_why(db, db_url, tmp_path):
    async with app_with(db, db_url, tmp_path) as app, http_client(app) as client:
        unknown = await client.post("/graphql", json={"documentId": "sha256:" + "0" * 64})
        assert unknown.status_code == 400
        assert "PERSISTED_QUERY_NOT_FOUND" in unknown.text and "the 4 it registered" in unknown.text
        malformed = await client.post("/graphql", json={"documentId": 12})
        assert malformed.status_code == 400 and "documentId must be a non-empty string" in malformed.text


async def test_only_trusted_documents_run_when_the_setting_says_so(db, db_url, tmp_path):
    async with app_with(db, db_url, tmp_path, trusted_documents_only=True) as app, http_client(app) as client:
        registered = await client.post("/graphql", json={"query": TASKS})  # registered text: runs
        assert registered.json()["data"]["tasks"] == [{"code": "toy"}]
        by_id = await client.post("/graphql", json={"documentId": "task-by-code", "variables": {"code": "toy"}})
        assert by_id.json()["data"]["task"]["code"] == "toy"
        refused = await client.post(
            "/graphql",
            json={"query": "{ tasks { code name } }"},
            headers={"accept": "application/graphql-response+json"},
        )
        assert refused.status_code == 400 and "data" not in refused.json()
        [error] = refused.json()["errors"]
        assert error["extensions"]["code"] == "DOCUMENT_NOT_TRUSTED" and "registered" in error["message"]
        mutation = await client.post(
            "/graphql", json={"query": 'mutation { login(input: {username: "a", password: "b"}) { __typename } }'}
        )
        assert mutation.json()["errors"][0]["extensions"]["code"] == "DOCUMENT_NOT_TRUSTED"
        # Clients name their operation: the refused text's name must not turn the refusal into "Unknown operation".
        named = await client.post(
            "/graphql", json={"query": "query Other { tasks { name } }", "operationName": "Other"}
        )
        assert named.status_code == 200, named.text
        assert named.json()["errors"][0]["extensions"]["code"] == "DOCUMENT_NOT_TRUSTED"


async def test_only_trusted_documents_holds_for_subscriptions(db, db_url, tmp_path):
    """Over graphql-transport-ws, a subscription whose text is not registered is refused; a registered one runs."""
    async with app_with(db, db_url, tmp_path, trusted_documents_only=True) as app, serve_in_loop(app) as base:
        url = base.replace("http", "ws") + "/graphql"
        async with websockets.connect(url, subprotocols=["graphql-transport-ws"]) as ws:
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] == "connection_ack"
            other = 'subscription { roundChanged(taskCode: "toy") { change round { number } } }'
            await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": other}}))
            refused = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert refused["type"] == "error" and refused["id"] == "1"
            assert refused["payload"][0]["extensions"]["code"] == "DOCUMENT_NOT_TRUSTED"
            named = {"query": "subscription Other" + other.removeprefix("subscription"), "operationName": "Other"}
            await ws.send(json.dumps({"id": "3", "type": "subscribe", "payload": named}))
            refused = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert refused["type"] == "error" and refused["id"] == "3"
            assert refused["payload"][0]["extensions"]["code"] == "DOCUMENT_NOT_TRUSTED"  # not "Unexpected error"
            await ws.send(json.dumps({"id": "2", "type": "subscribe", "payload": {"query": ROUNDS}}))
            await ws.send(json.dumps({"id": "2", "type": "complete"}))
            await ws.send(json.dumps({"type": "ping"}))
            answers = [json.loads(await asyncio.wait_for(ws.recv(), 5)) for _ in range(1)]
            assert answers[-1]["type"] == "pong"  # the registered subscription was accepted without an error
