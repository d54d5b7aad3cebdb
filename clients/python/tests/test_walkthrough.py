"""docs/client.md's walk-throughs, run as written against a real server (SQLite and PostgreSQL).

A block fenced as ```` ```python walkthrough=NAME ```` belongs to the walk-through NAME; a walk-through's blocks run in
the order of the doc, in one namespace, as a notebook would run them, with DYNAFORGE_URL, DYNAFORGE_TOKEN (a user
registered for the test) and MODEL_FOLDER set, in a folder of their own. A block that raises fails the test with
a traceback that points into docs/client.md; then a few of the walk-through's results are checked.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dynaforge_client import Client

DOC = Path(__file__).resolve().parents[3] / "docs" / "client.md"
WALKTHROUGHS = ("researcher", "model-builder")
FENCE = re.compile(r"^```python(?P<info>[^\n]*)\n(?P<code>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
TAG = re.compile(r"\bwalkthrough=(?P<name>[\w-]+)")
GRANT_OWNERSHIP = """mutation Grant($input: GrantTaskOwnershipInput!) {
  grantTaskOwnership(input: $input) { __typename ... on Error { message } }
}"""


@dataclass(frozen=True)
class Block:
    walkthrough: str | None  # None: an illustration, not executed
    line: int  # of the block's first line of code in the doc
    code: str


def blocks(text: str) -> list[Block]:
    """Every ```python block of the doc, in order."""
    found = []
    for match in FENCE.finditer(text):
        tag = TAG.search(match["info"])
        line = text.count("\n", 0, match.start("code")) + 1
        found.append(Block(tag["name"] if tag else None, line, match["code"]))
    return found


def walkthrough(name: str) -> list[Block]:
    return [b for b in blocks(DOC.read_text()) if b.walkthrough == name]


def run_walkthrough(name: str) -> dict[str, Any]:
    """Execute the walk-through's blocks in one namespace; returns the namespace. Clients it left open are closed."""
    namespace: dict[str, Any] = {"__name__": f"walkthrough_{name.replace('-', '_')}"}
    try:
        for block in walkthrough(name):
            # padded so that tracebacks name the doc's own line numbers
            code = compile("\n" * (block.line - 1) + block.code, str(DOC), "exec")
            try:
                exec(code, namespace)
            except Exception as exc:
                if hasattr(exc, "add_note"):
                    exc.add_note(f"in the {name} walk-through's block at docs/client.md:{block.line}")
                raise
    finally:
        for value in namespace.values():
            if isinstance(value, Client):
                value.close()
    return namespace


def register(server, username: str) -> str:
    """A new user's API token."""
    with Client(server.url) as client:
        client.register(username, f"{username}@example.org", f"{username} password 123")
        return str(client.token)


def grant_ownership(server, task: str, username: str) -> None:
    """An admin makes ``username`` an owner of ``task`` (an operation the surface leaves to ``execute``)."""
    with Client(server.url, server.token) as admin:
        data = admin.execute(GRANT_OWNERSHIP, {"input": {"taskCode": task, "username": username}})
    assert data["grantTaskOwnership"]["__typename"] == "TaskOwnershipChanged", data


@pytest.fixture
def walkthrough_env(server, monkeypatch, tmp_path):
    """The environment the doc's blocks read; they run in a folder of their own (they write files there)."""
    monkeypatch.setenv("DYNAFORGE_URL", server.url)
    monkeypatch.setenv("MODEL_FOLDER", str(server.model_folder))
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def test_the_doc_has_both_walkthroughs():
    """Renaming a tag must not silently leave a walk-through with nothing to run."""
    found = blocks(DOC.read_text())
    names = {b.walkthrough for b in found if b.walkthrough is not None}
    assert names == set(WALKTHROUGHS), f"walk-throughs in {DOC.name}: {sorted(names)}"
    for name in WALKTHROUGHS:
        assert len(walkthrough(name)) >= 5, f"the {name} walk-through has {len(walkthrough(name))} blocks"
    for block in found:  # the blocks that are not executed must be Python still
        ast.parse(block.code, filename=f"{DOC.name}:{block.line}")
    researcher = "".join(b.code for b in walkthrough("researcher"))
    assert "model_fooled(" in researcher and "after=" in researcher and ".gaps" in researcher
    assert 'os.environ["DYNAFORGE_TOKEN"]' in researcher
    builder = "".join(b.code for b in walkthrough("model-builder"))
    assert 'os.environ.get("MODEL_FOLDER"' in builder and "submit_model(" in builder


def test_researcher_walkthrough(server, unique, walkthrough_env):
    username = f"rita{unique}"
    walkthrough_env.setenv("DYNAFORGE_TOKEN", register(server, username))
    grant_ownership(server, "sentiment", username)  # the researcher runs the task: owners export every example
    colleague = Client(server.url, register(server, f"carl{unique}"))  # someone else's example for the queue
    with colleague:
        colleague.create_example(
            "sentiment",
            {"statement": "The kitchen was out of everything, but the waiter made us laugh all evening.",
             "label": "positive"},
        )  # fmt: skip

    ns = run_walkthrough("researcher")

    assert ns["fooling"].fooled is True and ns["fooling"].prediction.label == "positive"
    assert ns["not_fooling"].fooled is False and ns["not_fooling"].prediction.label == "positive"
    assert ns["assisted"].source.value == "ASSISTED" and ns["assisted"].adversary == "sentiment-templates"
    assert ns["to_check"].id != ns["fooling"].id and ns["to_check"].author.username != username
    assert ns["validated"].votes.correct >= 1 and ns["validated"].status.value == "ACCEPTED"  # an owner decides

    live, caught_up, stream = ns["live_example"], ns["caught_up"], ns["stream"]
    assert live.fooled is True and live.fields["statement"] == ns["SARCASM"]
    assert caught_up.fields["statement"] == ns["MISSED"] and caught_up.id != live.id
    assert stream.gaps == [] and stream.last_id == caught_up.id
    assert Path("last-fooled.txt").read_text() == caught_up.id

    dataset = ns["dataset"]
    assert type(dataset).__name__ == "Dataset" and dataset.num_rows >= 4
    statements = set(dataset["statement"])  # the hf export's schema: a column per field, the label a ClassLabel
    assert {ns["fooling"].fields["statement"], ns["SARCASM"], ns["MISSED"]} <= statements
    assert dataset.features["label"].names == ["positive", "negative", "neutral"]
    assert ns["fooled"].num_rows >= 3


def test_model_builder_walkthrough(server, unique, walkthrough_env):
    walkthrough_env.setenv("DYNAFORGE_TOKEN", register(server, f"mona{unique}"))

    ns = run_walkthrough("model-builder")

    results = ns["results"]
    assert results.done and not results.failed, [e.error for e in results.evaluations]
    accuracy = results.metrics()["client-test"]["accuracy"]
    assert 0.0 <= accuracy <= 1.0
    frame = ns["frame"]
    assert ((frame["dataset"] == "client-test") & (frame["metric"] == "accuracy")).any()

    mine = [r for r in ns["board"].records() if r["model_id"] == ns["model"].id]
    assert mine and mine[0]["rank"] is not None and mine[0]["accuracy"] == pytest.approx(accuracy)

    assert ns["scoring"].name == "client-test" and len(ns["items"]) == 12
    baseline = ns["baseline_results"].metrics()["client-test"]
    assert 0.0 <= baseline["accuracy"] <= 1.0
