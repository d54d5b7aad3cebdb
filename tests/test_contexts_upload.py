"""Context files (JSONL and CSV) through the service, a real multipart HTTP request and the CLI; and the strategies
that choose the next context (least used, uniform, least fooled, validation failed), with the tag filter."""

from __future__ import annotations

import asyncio
import io
import json
from collections import Counter

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import delete, select, update
from support import GraphQLClient, gid, register_user
from toy_plugin import ToyPlugin, ToyTask

from dynaforge import ChoiceField, ModelSpec, NumberField, Role, Task, TextField, hookimpl
from dynaforge.api.node import parse_id
from dynaforge.app import create_app
from dynaforge.cli import main as cli
from dynaforge.db.engine import Database
from dynaforge.db.migrate import upgrade
from dynaforge.db.models import Context, Example, ExampleStatus, TaskRow
from dynaforge.errors import Forbidden, InvalidInput, NotAuthenticated, NotFound
from dynaforge.inference.client import LocalInferenceClient
from dynaforge.plugins import Plugins
from dynaforge.services import auth as auth_service
from dynaforge.services import contexts as contexts
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform

SYSTEM = Actor.system()


class ReadingTask(Task):
    """A task with a required text context field and an optional numeric one (CSV cells become numbers)."""

    code = "reading"
    name = "Reading"
    labels = ("yes", "no")
    fields = (
        TextField(name="passage", role=Role.CONTEXT, min_length=5, max_length=120),
        NumberField(name="level", role=Role.CONTEXT, required=False, integer=True, minimum=1, maximum=5),
        TextField(name="question", role=Role.INPUT, max_length=200),
        ChoiceField(name="answer", role=Role.TARGET),
    )
    default_target_models = (ModelSpec("keyword", "python", {"callable": "toy_plugin:keyword_model"}),)


class FreeWritingTask(Task):
    """A task without context fields: examples are written from scratch."""

    code = "freewrite"
    name = "Free writing"
    labels = ("good", "bad")
    fields = (TextField(name="text", role=Role.INPUT, max_length=100), ChoiceField(name="label", role=Role.TARGET))
    default_target_models = (ModelSpec("keyword", "python", {"callable": "toy_plugin:keyword_model"}),)


class UploadTestPlugin:
    __name__ = "upload_test_plugin"

    @hookimpl
    def register_tasks(self, register):
        register(ReadingTask())
        register(FreeWritingTask())


@pytest.fixture
async def p(db, settings):
    """A platform with the toy task (three demo contexts), the reading task and the free-writing task."""
    plugins = Plugins(allowlist=set(), extra=[ToyPlugin(), UploadTestPlugin()])
    platform = Platform.create(
        settings, db=db, plugins=plugins, inference=LocalInferenceClient(plugins.registry.backends, timeout_s=1.0)
    )
    await task_service.sync_registered_tasks(platform)
    await contexts.add_contexts(platform, SYSTEM, "toy", list(ToyTask.demo_contexts))
    try:
        yield platform
    finally:
        await platform.inference.close()


@pytest.fixture
async def http(p):
    app = create_app(platform=p, sync_tasks=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        yield client


async def stored(p: Platform, code: str) -> list[Context]:
    async with p.db.session() as s:
        task_id = await s.scalar(select(TaskRow.id).where(TaskRow.code == code))
        return list(await s.scalars(select(Context).where(Context.task_id == task_id).order_by(Context.id)))


async def upload(p: Platform, content: str | bytes, filename="contexts.jsonl", actor=SYSTEM, task="reading", **kw):
    data = content.encode() if isinstance(content, str) else content
    return await contexts.upload_contexts(p, actor, task, io.BytesIO(data), filename=filename, **kw)


def jsonl(*rows) -> str:
    return "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows)


# --------------------------------------------------------------------------- the service


async def test_jsonl_upload_adds_rows_in_order_with_tags(p):
    content = jsonl(
        {"passage": "The ferry leaves at dawn.", "level": 2},
        "",  # blank lines are skipped
        {"passage": "Owls nest in the old mill.", "tag": "birds"},
        {"passage": "A lantern hangs by the gate.", "tag": None},
    )
    added = await upload(p, content, tag="batch-1")
    assert added.task_code == "reading" and added.round_number == 1 and len(added.ids) == 3
    rows = await stored(p, "reading")
    assert [r.id for r in rows] == added.ids
    assert [r.fields for r in rows] == [
        {"passage": "The ferry leaves at dawn.", "level": 2},
        {"passage": "Owls nest in the old mill."},
        {"passage": "A lantern hangs by the gate."},
    ]
    assert [r.tag for r in rows] == ["batch-1", "birds", "batch-1"]  # a row's own tag wins over the upload's
    assert all(r.round_id == rows[0].round_id and r.total_used == 0 for r in rows)


async def test_csv_upload_with_bom_quotes_and_numbers(p):
    content = (
        "\ufeffpassage,level,tag\r\n"
        '"Snow fell, softly, on the quay.",3,winter\r\n'
        '"A kettle sang in the\nback room.",,\r\n'
        "\r\n"
        "Bees circled the clover.,1,\r\n"
    )
    added = await upload(p, content, filename="passages.CSV", tag="csv-batch")
    rows = await stored(p, "reading")
    assert [r.id for r in rows] == added.ids
    assert [(r.fields, r.tag) for r in rows] == [
        ({"passage": "Snow fell, softly, on the quay.", "level": 3}, "winter"),
        ({"passage": "A kettle sang in the\nback room."}, "csv-batch"),
        ({"passage": "Bees circled the clover.", "level": 1}, "csv-batch"),
    ]


async def test_every_bad_line_is_reported_by_number_and_nothing_is_written(p):
    content = jsonl(
        {"passage": "A fine first passage."},
        {"passage": "tiny"},  # line 2: too short
        "{not json",  # line 3
        {"passage": "Good again here.", "colour": "red"},  # line 4: unknown key
        "[1, 2]",  # line 5: not an object
        {"level": 2},  # line 6: passage missing
        {"passage": "Fine passage text.", "level": 9, "tag": 7},  # line 7: level too high, tag not text
    )
    with pytest.raises(InvalidInput) as caught:
        await upload(p, content)
    found = [(e.field, e.rule) for e in caught.value.field_errors]
    assert found == [
        ("line 2.passage", "min_length"),
        ("line 3", "json"),
        ("line 4.colour", "unknown_field"),
        ("line 5", "type"),
        ("line 6.passage", "required"),
        ("line 7.tag", "type"),
        ("line 7.level", "maximum"),
    ]
    assert "expected level, passage, and optionally tag" in caught.value.field_errors[2].message
    assert caught.value.message.startswith("Nothing was added:") and "7 problems" in caught.value.message
    assert await stored(p, "reading") == []


async def test_csv_row_errors_name_the_line_a_record_starts_on(p):
    content = 'passage,level\n"A quoted\npassage over lines.",2\ntiny,1\nA fine one here.,two\nToo,many,cells\n'
    with pytest.raises(InvalidInput) as caught:
        await upload(p, content, filename="rows.csv")
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [
        ("line 4.passage", "min_length"),
        ("line 5.level", "type"),
        ("line 6", "columns"),
    ]
    assert await stored(p, "reading") == []


async def test_csv_header_with_unknown_columns_names_the_expected_ones(p):
    with pytest.raises(InvalidInput) as caught:
        await upload(p, "\npassage,question,passage\nA long enough passage.,Why?,x\n", filename="bad.csv")
    errors = {(e.field, e.rule): e.message for e in caught.value.field_errors}  # the header is the first row not blank
    assert set(errors) == {("line 2.question", "unknown_column"), ("line 2.passage", "duplicate")}
    assert (
        "expected columns: passage (required), level (optional), tag (optional)"
        in errors[("line 2.question", "unknown_column")]
    )
    assert await stored(p, "reading") == []


async def test_invalid_utf8_is_reported_by_line(p):
    content = b"passage\nA clean passage.\nCaf\xe9 by the river.\n"
    with pytest.raises(InvalidInput) as caught:
        await upload(p, content, filename="latin1.csv")
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("line 3", "encoding")]


async def test_error_list_is_capped_and_counts_the_rest(p):
    content = jsonl(*[{"passage": "no"} for _ in range(contexts.MAX_REPORTED_ERRORS + 12)])
    with pytest.raises(InvalidInput) as caught:
        await upload(p, content)
    errors = caught.value.field_errors
    assert len(errors) == contexts.MAX_REPORTED_ERRORS + 1
    assert errors[0].field == "line 1.passage" and errors[-2].field == f"line {contexts.MAX_REPORTED_ERRORS}.passage"
    assert errors[-1].field == "file" and errors[-1].rule == "more_errors" and "12 more" in errors[-1].message


@pytest.mark.parametrize(
    "content, filename, rule",
    [
        ("", "empty.jsonl", "empty"),
        ("\n   \n", "blank.jsonl", "empty"),
        ("passage,level\n", "header-only.csv", "empty"),
        ("", "empty.csv", "empty"),
    ],
)
async def test_empty_files_are_refused(p, content, filename, rule):
    with pytest.raises(InvalidInput) as caught:
        await upload(p, content, filename=filename)
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("file", rule)]


async def test_size_and_row_limits(p, monkeypatch):
    rows = jsonl(*[{"passage": f"Passage number {i} here."} for i in range(4)])
    monkeypatch.setattr(p.settings, "context_upload_max_rows", 3)
    with pytest.raises(InvalidInput) as caught:
        await upload(p, rows)
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("file", "max_rows")]
    assert "more than 3 contexts" in caught.value.field_errors[0].message

    monkeypatch.setattr(p.settings, "context_upload_max_rows", 10)
    monkeypatch.setattr(p.settings, "context_upload_max_bytes", len(rows.encode()) - 1)
    with pytest.raises(InvalidInput) as caught:
        await upload(p, rows)
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("file", "max_bytes")]
    # One long line without a newline is refused as soon as the limit is passed, not read whole.
    with pytest.raises(InvalidInput):
        await upload(p, "x" * (len(rows) + 10))
    assert await stored(p, "reading") == []

    monkeypatch.setattr(p.settings, "context_upload_max_bytes", len(rows.encode()))
    assert len((await upload(p, rows)).ids) == 4


async def test_large_upload_is_inserted_in_batches(p):
    count = contexts.INSERT_BATCH * 2 + 7
    added = await upload(p, jsonl(*[{"passage": f"Generated passage {i}."} for i in range(count)]))
    rows = await stored(p, "reading")
    assert len(added.ids) == len(rows) == count
    assert [r.fields["passage"] for r in rows[:2]] == ["Generated passage 0.", "Generated passage 1."]


async def test_format_is_given_or_told_by_the_file_name(p):
    csv_content = "passage\nA passage without a suffix.\n"
    added = await upload(p, csv_content, filename="download", file_format="csv")
    assert len(added.ids) == 1
    with pytest.raises(InvalidInput) as caught:
        await upload(p, csv_content, filename="download")
    assert caught.value.field_errors[0].field == "format" and ".jsonl or .csv" in caught.value.field_errors[0].message
    with pytest.raises(InvalidInput) as caught:
        await upload(p, csv_content, filename="a.csv", file_format="xml")
    assert caught.value.field_errors[0].rule == "choice"


async def test_only_owners_and_admins_upload(p):
    user = await auth_service.create_user(
        p, Actor.anonymous(), username="olga", email="olga@example.org", password="a long passphrase"
    )
    olga = Actor(user_id=user.id, username="olga")
    content = jsonl({"passage": "Owned by nobody yet."})
    with pytest.raises(Forbidden):
        await upload(p, content, actor=olga)
    with pytest.raises(NotAuthenticated):
        await upload(p, content, actor=Actor.anonymous())
    assert await stored(p, "reading") == []
    await task_service.grant_ownership(p, SYSTEM, "reading", user.id)
    assert len((await upload(p, content, actor=olga)).ids) == 1


async def test_tasks_without_context_fields_take_no_contexts(p):
    with pytest.raises(InvalidInput) as caught:
        await upload(p, jsonl({"text": "anything"}), task="freewrite")
    assert caught.value.field_errors[0].rule == "no_context_fields"
    assert "takes no contexts" in caught.value.field_errors[0].message
    with pytest.raises(InvalidInput) as caught:
        await contexts.add_contexts(p, SYSTEM, "freewrite", [{}])
    assert caught.value.field_errors[0].rule == "no_context_fields"
    assert await stored(p, "freewrite") == []


async def test_rows_without_any_context_field_are_refused(p):
    with pytest.raises(InvalidInput) as caught:
        await contexts.add_contexts(p, SYSTEM, "toy", [{"topic": "kites"}, {}])
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("contexts[1]", "empty")]
    with pytest.raises(InvalidInput) as caught:
        await upload(p, jsonl({"topic": "kites"}, {"tag": "only-a-tag"}), task="toy")
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("line 2", "empty")]


# --------------------------------------------------------------------------- a multipart request to /graphql

UPLOAD = """
mutation($input: UploadContextsInput!) {
  uploadContexts(input: $input) {
    __typename
    ... on ContextsAdded { ids }
    ... on Error { message }
    ... on InvalidInput { fieldErrors { field rule message } }
  }
}"""


async def post_file(http, content: bytes, filename: str, *, token=None, headers=None, **input_fields):
    """A GraphQL multipart request (operations, map, then the file), as apollo-upload-client sends it."""
    variables = {"input": {"taskCode": "reading", "file": None, **input_fields}}
    sent = {"Apollo-Require-Preflight": "true"} if headers is None else dict(headers)
    if token:
        sent["Authorization"] = f"Bearer {token}"
    return await http.post(
        "/graphql",
        data={
            "operations": json.dumps({"query": UPLOAD, "variables": variables}),
            "map": json.dumps({"0": ["variables.input.file"]}),
        },
        files={"0": (filename, content, "application/octet-stream")},
        headers=sent,
    )


async def owner_token(http, p) -> str:
    token, user_id = await register_user(GraphQLClient(http), "uploader")
    await task_service.grant_ownership(p, SYSTEM, "reading", parse_id(user_id, "id", "User"))
    return token


async def test_upload_through_a_multipart_request(http, p):
    token = await owner_token(http, p)
    content = jsonl({"passage": "Rain on the tin roof."}, {"passage": "Gulls over the harbour.", "tag": "sea"})
    response = await post_file(http, content.encode(), "passages.jsonl", token=token, tag="http")
    assert response.status_code == 200, response.text
    payload = response.json()["data"]["uploadContexts"]
    assert payload["__typename"] == "ContextsAdded" and len(payload["ids"]) == 2
    rows = await stored(p, "reading")
    assert [gid("Context", r.id) for r in rows] == payload["ids"]
    assert [r.tag for r in rows] == ["http", "sea"]

    csv_content = b"passage,level\nLanterns along the canal.,4\n"
    payload = (await post_file(http, csv_content, "more.csv", token=token)).json()["data"]["uploadContexts"]
    assert payload["__typename"] == "ContextsAdded"
    assert (await stored(p, "reading"))[-1].fields == {"passage": "Lanterns along the canal.", "level": 4}

    forced = await post_file(http, b"passage\nA passage typed as JSONL.\n", "x.csv", token=token, format="JSONL")
    assert forced.json()["data"]["uploadContexts"]["fieldErrors"][0]["rule"] == "json"


async def test_multipart_errors_come_back_typed_and_nothing_is_written(http, p):
    token = await owner_token(http, p)
    content = jsonl({"passage": "A fine passage."}, {"passage": "bad"})
    payload = (await post_file(http, content.encode(), "p.jsonl", token=token)).json()["data"]["uploadContexts"]
    assert payload["__typename"] == "InvalidInput"
    assert [(e["field"], e["rule"]) for e in payload["fieldErrors"]] == [(["line 2", "passage"], "min_length")]
    assert await stored(p, "reading") == []

    payload = (await post_file(http, content.encode(), "p.jsonl")).json()["data"]["uploadContexts"]
    assert payload["__typename"] == "NotAuthenticated"
    stranger, _ = await register_user(GraphQLClient(http), "stranger")
    payload = (await post_file(http, content.encode(), "p.jsonl", token=stranger)).json()["data"]["uploadContexts"]
    assert payload["__typename"] == "Forbidden"
    payload = (await post_file(http, b"{}", "p.jsonl", token=token, taskCode="nope")).json()["data"]["uploadContexts"]
    assert payload["__typename"] == "NotFound"


async def test_multipart_requests_must_force_a_preflight(http, p):
    """CSRF: a cross-site HTML form can post multipart/form-data but cannot add a custom header."""
    token = await owner_token(http, p)
    content = jsonl({"passage": "Forged from another site."}).encode()
    response = await post_file(http, content, "p.jsonl", token=token, headers={})
    assert response.status_code == 400 and "Apollo-Require-Preflight" in response.text
    response = await post_file(http, content, "p.jsonl", token=token, headers={"X-Apollo-Operation-Name": "Upload"})
    assert response.status_code == 200
    assert response.json()["data"]["uploadContexts"]["__typename"] == "ContextsAdded"
    assert len(await stored(p, "reading")) == 1


async def test_oversized_multipart_requests_are_refused_before_reading(http, p, monkeypatch):
    from dynaforge.api.contexts import MULTIPART_OVERHEAD_BYTES

    token = await owner_token(http, p)
    monkeypatch.setattr(p.settings, "context_upload_max_bytes", 100)
    monkeypatch.setattr(p.settings, "model_upload_max_mb", 0)  # signed in, a model archive could be larger
    content = b"x" * (100 + MULTIPART_OVERHEAD_BYTES + 1)
    response = await post_file(http, content, "big.jsonl", token=token)
    assert response.status_code == 413
    # Within the request limit but over the file limit: the service refuses it.
    response = await post_file(
        http, jsonl(*[{"passage": "A passage of some length."}] * 8).encode(), "p.jsonl", token=token
    )
    assert response.json()["data"]["uploadContexts"]["fieldErrors"][0]["rule"] == "max_bytes"
    assert await stored(p, "reading") == []


async def test_a_json_request_cannot_carry_a_file(http, p):
    token = await owner_token(http, p)
    body = {"query": UPLOAD, "variables": {"input": {"taskCode": "reading", "file": "passage\nNot a file.\n"}}}
    response = await http.post("/graphql", json=body, headers={"Authorization": f"Bearer {token}"})
    payload = response.json()["data"]["uploadContexts"]
    assert payload["__typename"] == "InvalidInput" and payload["fieldErrors"][0]["rule"] == "upload"


# --------------------------------------------------------------------------- strategies


async def make_contexts(p: Platform, specs: dict[str, dict]) -> dict[str, int]:
    """Toy contexts with known counters; the fixture's demo contexts are pushed out of every strategy's way.

    Each spec may give ``used``, ``fooled``, ``tag`` and ``statuses`` (the statuses of examples written on it).
    """
    user = await auth_service.create_user(
        p, Actor.anonymous(), username="writer", email="writer@example.org", password="long enough pw"
    )
    ids = {}
    async with p.db.write() as s:
        task = await s.scalar(select(TaskRow).where(TaskRow.code == "toy"))
        round_ = await task_service.current_round(s, task.id)
        await s.execute(update(Context).where(Context.round_id == round_.id).values(total_used=1000, total_fooled=1000))
        for name, spec in specs.items():
            row = Context(
                task_id=task.id,
                round_id=round_.id,
                fields={"topic": name},
                tag=spec.get("tag"),
                total_used=spec.get("used", 0),
                total_fooled=spec.get("fooled", 0),
            )
            s.add(row)
            await s.flush()
            ids[name] = row.id
            for status in spec.get("statuses", ()):
                s.add(
                    Example(
                        task_id=task.id,
                        round_id=round_.id,
                        context_id=row.id,
                        user_id=user.id,
                        fields={"text": "x", "label": "good"},
                        status=status,
                        fooled=True,
                    )
                )
    return ids


async def picks(p: Platform, times: int = 30, **kw) -> Counter:
    chosen = Counter()
    for _ in range(times):
        chosen[(await contexts.next_context(p, Actor.anonymous(), "toy", **kw)).fields["topic"]] += 1
    return chosen


async def test_least_used_picks_the_fewest_uses_and_spreads_ties(p):
    await make_contexts(p, {"a": {"used": 5}, "b": {"used": 1}, "c": {"used": 1}, "d": {"used": 3}})
    assert set(await picks(p, strategy="least_used")) == {"b", "c"}
    assert set(await picks(p)) == {"b", "c"}  # the default


async def test_uniform_reaches_every_context(p):
    await make_contexts(p, {"a": {"used": 50}, "b": {"used": 0}})
    async with p.db.write() as s:  # leave only a and b in the round (make_contexts set the others to 1000 uses)
        await s.execute(delete(Context).where(Context.total_used == 1000))
    chosen = await picks(p, times=80, strategy="uniform")
    assert set(chosen) == {"a", "b"} and min(chosen.values()) >= 15  # P(fail) ~ 1e-8


async def test_least_fooled_then_least_used(p):
    await make_contexts(
        p,
        {
            "fooled-often": {"fooled": 4, "used": 0},
            "never-fooled-busy": {"fooled": 0, "used": 9},
            "never-fooled-quiet": {"fooled": 0, "used": 2},
        },
    )
    assert set(await picks(p, strategy="least_fooled")) == {"never-fooled-quiet"}


async def test_validation_failed_prefers_the_most_rejected_then_least_used(p):
    rejected, accepted = ExampleStatus.REJECTED, ExampleStatus.ACCEPTED
    await make_contexts(
        p,
        {
            "twice-rejected-busy": {"used": 7, "statuses": [rejected, rejected]},
            "twice-rejected-quiet": {"used": 2, "statuses": [rejected, rejected, accepted]},
            "once-rejected": {"used": 0, "statuses": [rejected, accepted]},
            "much-accepted": {"used": 0, "statuses": [accepted] * 4 + [ExampleStatus.FLAGGED]},
        },
    )
    assert set(await picks(p, strategy="validation_failed")) == {"twice-rejected-quiet"}


async def test_validation_failed_without_rejections_falls_back_to_least_used(p):
    await make_contexts(p, {"a": {"used": 4, "statuses": [ExampleStatus.ACCEPTED]}, "b": {"used": 1}})
    assert set(await picks(p, strategy="validation_failed", times=10)) == {"b"}


@pytest.mark.parametrize("strategy", [s.value for s in contexts.ContextStrategy])
async def test_every_strategy_keeps_to_the_tag(p, strategy):
    await make_contexts(
        p,
        {
            "tagged-busy": {"tag": "coast", "used": 9, "fooled": 5},
            "tagged-quiet": {"tag": "coast", "used": 3, "fooled": 2},
            "untagged": {"used": 0, "statuses": [ExampleStatus.REJECTED] * 3},
        },
    )
    assert set(await picks(p, strategy=strategy, tag="coast")) <= {"tagged-busy", "tagged-quiet"}
    with pytest.raises(NotFound, match="no contexts tagged inland"):
        await contexts.next_context(p, Actor.anonymous(), "toy", strategy=strategy, tag="inland")


async def test_the_task_setting_chooses_the_strategy_unless_asked_otherwise(p):
    await make_contexts(p, {"fooled-never": {"fooled": 0, "used": 8}, "used-never": {"fooled": 3, "used": 0}})

    async def set_setting(value):
        async with p.db.write() as s:
            task = await s.scalar(select(TaskRow).where(TaskRow.code == "toy"))
            task.settings = {**task.settings, "context_strategy": value}
        p.caches.tasks.pop("toy")

    await set_setting("least_fooled")
    assert set(await picks(p, times=5)) == {"fooled-never"}
    assert set(await picks(p, times=5, strategy="least_used")) == {"used-never"}
    await set_setting("no-such-strategy")  # a stale or hand-edited value is ignored
    assert set(await picks(p, times=5)) == {"used-never"}
    with pytest.raises(InvalidInput) as caught:
        await contexts.next_context(p, Actor.anonymous(), "toy", strategy="busiest")
    assert caught.value.field_errors[0].field == "strategy"


NEXT = 'query($s: ContextStrategy, $t: String) { nextContext(taskCode: "toy", strategy: $s, tag: $t) { fields tag } }'


async def test_next_context_query_takes_a_strategy(http, p):
    await make_contexts(p, {"calm": {"fooled": 0, "used": 6, "tag": "t"}, "busy": {"fooled": 2, "used": 0, "tag": "t"}})
    gql = GraphQLClient(http)
    calm = {"fields": {"topic": "calm"}, "tag": "t"}
    assert (await gql(NEXT, {"s": "LEAST_FOOLED", "t": "t"}))["nextContext"] == calm
    assert (await gql(NEXT, {"s": "LEAST_USED", "t": "t"}))["nextContext"]["fields"] == {"topic": "busy"}
    assert (await gql(NEXT, {"s": None, "t": "t"}))["nextContext"]["fields"] == {"topic": "busy"}
    body = await gql(NEXT, {"s": "BUSIEST"}, expect_errors=True)
    assert "errors" in body


# --------------------------------------------------------------------------- the CLI


def test_cli_uploads_a_file_as_the_operator(tmp_path, monkeypatch):
    url = f"sqlite+aiosqlite:///{tmp_path}/cli.db"

    async def migrate():
        database = Database(url)
        try:
            await upgrade(database)
        finally:
            await database.dispose()

    asyncio.run(migrate())
    env = {"DYNAFORGE_LOAD_PLUGINS": "nli", "DYNAFORGE_INFERENCE": "inline", "DYNAFORGE_ENVIRONMENT": "test"}
    good = tmp_path / "premises.csv"
    good.write_text("premise,tag\nThe orchard was planted before the war.,history\nA tram stops at every corner.,\n")
    bad = tmp_path / "premises.txt"
    bad.write_text(jsonl({"premise": "Too short"}, {"premise": "The lighthouse keeper retired last spring."}))
    runner = CliRunner()

    result = runner.invoke(
        cli, ["contexts", "upload", "--task", "nli", str(bad), "--format", "jsonl", "--database-url", url], env=env
    )
    assert result.exit_code == 1, result.output
    assert "line 1.premise: must have at least 10 characters" in result.output

    result = runner.invoke(
        cli, ["contexts", "upload", "--task", "nli", str(good), "--tag", "cli", "--database-url", url], env=env
    )
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith("added 2 contexts to round 1 of nli")

    async def read():
        database = Database(url)
        try:
            async with database.session() as s:
                return [(c.fields, c.tag) for c in await s.scalars(select(Context).order_by(Context.id))]
        finally:
            await database.dispose()

    assert asyncio.run(read()) == [
        ({"premise": "The orchard was planted before the war."}, "history"),
        ({"premise": "A tram stops at every corner."}, "cli"),
    ]
