"""The web app's serving (:mod:`dynaforge.webapp`): the built app at /, client routes, hashed assets with long-lived
caching and gzip, the Content-Security-Policy of its pages, GraphiQL from the build, the build's documents
registered as trusted, and the API unchanged beside it; without a build, a page that says how to build it."""

from __future__ import annotations

import gzip
import json
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from support import make_settings
from toy_plugin import ToyPlugin

from dynaforge.api.documents import document_hash
from dynaforge.app import create_app
from dynaforge.inference.client import LocalInferenceClient
from dynaforge.plugins import Plugins
from dynaforge.services import tasks as task_service
from dynaforge.services.platform import Platform

TASKS = "query Tasks { tasks { __typename code } }"
TASKS_ID = "sha256:" + document_hash(TASKS)
SCRIPT = b"console.log('app');" * 50


@pytest.fixture
def db_url(sqlite_url):
    return sqlite_url  # nothing here depends on the database's kind


def fake_build(root: Path) -> Path:
    """What `npm run build` writes, in miniature."""
    (root / "assets").mkdir(parents=True)
    (root / "index.html").write_text('<!doctype html><script type="module" src="/assets/app-abc123.js"></script>')
    (root / "graphiql.html").write_text("<!doctype html><title>Dynaforge GraphiQL</title>")
    (root / "favicon.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    (root / ".vite").mkdir()
    (root / ".vite" / "manifest.json").write_text("{}")
    (root / "assets" / "app-abc123.js").write_bytes(SCRIPT)
    (root / "assets" / "app-abc123.js.gz").write_bytes(gzip.compress(SCRIPT))
    (root / "assets" / "app-abc123.css").write_text("body{}")
    (root / "persisted-documents.json").write_text(json.dumps({TASKS_ID: TASKS}))
    return root


@asynccontextmanager
async def served(db, db_url, web_dir: Path, **overrides):
    settings = make_settings(db_url, web_dir=web_dir, **overrides)
    plugins = Plugins(allowlist=set(), extra=[ToyPlugin()])
    platform = Platform.create(
        settings, db=db, plugins=plugins, inference=LocalInferenceClient(plugins.registry.backends, timeout_s=1.0)
    )
    await task_service.sync_registered_tasks(platform)
    app = create_app(platform=platform, sync_tasks=False)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as http:
            yield http
    finally:
        await platform.inference.close()


def assert_strict_page(response: httpx.Response) -> None:
    policy = response.headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["script-src"] == "'self'"  # no inline script, no other origin
    assert directives["default-src"] == "'self'"
    assert directives["connect-src"] == "'self' ws://testserver"
    assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'"
    assert "http" not in policy.replace("ws://testserver", "")  # no third-party origin
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["cache-control"] == "no-cache"


async def test_the_app_and_its_client_routes_are_served_with_a_strict_policy(db, db_url, tmp_path):
    async with served(db, db_url, fake_build(tmp_path / "dist")) as http:
        for path in ("/", "/tasks/qa", "/validate/nli", "/signin"):
            response = await http.get(path)
            assert response.status_code == 200, path
            assert response.headers["content-type"].startswith("text/html")
            assert "/assets/app-abc123.js" in response.text
            assert_strict_page(response)
            assert "unsafe-inline" not in response.headers["content-security-policy"]
        icon = await http.get("/favicon.svg")
        assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")


async def test_hashed_assets_are_immutable_and_gzipped_for_browsers_that_take_it(db, db_url, tmp_path):
    async with served(db, db_url, fake_build(tmp_path / "dist")) as http:
        plain = await http.get("/assets/app-abc123.js", headers={"accept-encoding": "identity"})
        assert plain.status_code == 200 and plain.content == SCRIPT
        assert plain.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert plain.headers["content-type"].startswith("text/javascript")
        assert plain.headers["x-content-type-options"] == "nosniff"
        zipped = await http.get("/assets/app-abc123.js", headers={"accept-encoding": "gzip, br"})
        assert zipped.headers["content-encoding"] == "gzip" and zipped.content == SCRIPT  # httpx decodes it
        assert int(zipped.headers["content-length"]) < len(SCRIPT)
        css = await http.get("/assets/app-abc123.css")
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")


@pytest.mark.parametrize(
    "path",
    [
        "/assets/missing-abc.js",
        "/assets/../index.html",
        "/assets/%2e%2e/persisted-documents.json",
        "/.vite/manifest.json",
        "/missing.js",
        "/healthz/extra",
        "/export",
        "/graphql/extra",
        "/api/anything",
    ],
)
async def test_api_paths_missing_files_and_hidden_files_are_404_not_the_app(db, db_url, tmp_path, path):
    async with served(db, db_url, fake_build(tmp_path / "dist")) as http:
        response = await http.get(path)
        assert response.status_code == 404, path
        assert "app-abc123" not in response.text


async def test_the_api_is_unchanged_beside_the_app(db, db_url, tmp_path):
    async with served(db, db_url, fake_build(tmp_path / "dist")) as http:
        assert (await http.get("/healthz")).json()["status"] == "ok"
        answer = await http.post("/graphql", json={"query": "{ tasks { code } }"})
        assert answer.json() == {"data": {"tasks": [{"code": "toy"}]}}


async def test_graphiql_comes_from_the_build_under_the_policy(db, db_url, tmp_path):
    async with served(db, db_url, fake_build(tmp_path / "dist")) as http:
        page = await http.get("/graphql", headers={"accept": "text/html"})
        assert page.status_code == 200 and "Dynaforge GraphiQL" in page.text
        assert "cdn" not in page.text.lower() and "unpkg" not in page.text.lower()
        policy = page.headers["content-security-policy"]
        assert "script-src 'self';" in policy  # its editor needs inline styles, never inline scripts
        assert page.headers["x-frame-options"] == "DENY"


async def test_the_builds_documents_are_registered_so_the_app_sends_ids(db, db_url, tmp_path):
    operator = tmp_path / "operator.json"
    operator.write_text(json.dumps({"mine": "query Mine { tasks { name } }"}))
    async with served(db, db_url, fake_build(tmp_path / "dist"), trusted_documents=operator) as http:
        by_id = await http.post("/graphql", json={"documentId": TASKS_ID})
        assert by_id.json() == {"data": {"tasks": [{"__typename": "Task", "code": "toy"}]}}
        persisted = {"persistedQuery": {"version": 1, "sha256Hash": TASKS_ID}}
        by_hash = await http.post("/graphql", json={"extensions": persisted})
        assert by_hash.json()["data"]["tasks"][0]["code"] == "toy"
        assert (await http.post("/graphql", json={"documentId": "mine"})).json()["data"]["tasks"][0]["name"]


async def test_only_trusted_documents_still_runs_the_apps(db, db_url, tmp_path):
    operator = tmp_path / "operator.json"
    operator.write_text("{}")
    async with served(
        db, db_url, fake_build(tmp_path / "dist"), trusted_documents=operator, trusted_documents_only=True
    ) as http:
        assert (await http.post("/graphql", json={"query": TASKS})).json()["data"]["tasks"][0]["code"] == "toy"
        refused = (await http.post("/graphql", json={"query": "{ tasks { name } }"})).json()
        assert refused["errors"][0]["extensions"]["code"] == "DOCUMENT_NOT_TRUSTED"


async def test_without_a_build_the_api_runs_and_the_root_says_how_to_build(db, db_url, tmp_path):
    empty = tmp_path / "no-build"
    empty.mkdir()
    async with served(db, db_url, empty) as http:
        root = await http.get("/")
        assert root.status_code == 200
        assert "npm ci" in root.text and "make setup" in root.text
        assert_strict_page(root)
        assert (await http.get("/tasks/qa")).status_code == 404
        graphiql = await http.get("/graphql", headers={"accept": "text/html"})
        assert graphiql.status_code == 200 and "npm run build" in graphiql.text
        answer = await http.post("/graphql", json={"query": "{ tasks { code } }"})
        assert answer.json() == {"data": {"tasks": [{"code": "toy"}]}}
