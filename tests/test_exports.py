"""Export of collected data (JSON Lines, Hugging Face folders) through the service, HTTP and the CLI, each on SQLite
and on PostgreSQL."""

from __future__ import annotations

import asyncio
import io
import json
import re
import secrets
import tempfile
import tracemalloc
import uuid
import zipfile
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from sqlalchemy import insert, select, update
from support import asyncpg_url, gid, make_settings, make_user, pg_execute
from toy_plugin import ToyPlugin, ToyTask

from dynaforge import cli
from dynaforge.api import export_http
from dynaforge.api.node import decode_global_id
from dynaforge.db.engine import Database
from dynaforge.db.migrate import upgrade
from dynaforge.db.models import Example, ExampleStatus, Round, TaskRow, Validation
from dynaforge.errors import Forbidden, InvalidInput, NotAuthenticated, NotFound
from dynaforge.inference.client import LocalInferenceClient
from dynaforge.plugins import Plugins
from dynaforge.services import auth, contexts, datasets, examples, exports, tasks
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform


def _pk(value: str) -> int:
    """The row id inside an exported example's id, which is the API's global id of an Example."""
    decoded = decode_global_id(value)
    assert decoded is not None and decoded[0] == "Example", value
    return int(decoded[1])


RECORD_KEYS = {
    "format",
    "id",
    "task",
    "round",
    "status",
    "fields",
    "tag",
    "context_id",
    "fooled",
    "prediction",
    "model_predictions",
    "author",
    "time_taken_ms",
    "source",
    "adversary",
    "created_at",
    "votes",
    "flag_reason",
    "validations",
}
VALIDATION_KEYS = {"validator", "label", "corrected_target", "reason", "by_owner", "created_at"}
HEX16 = re.compile(r"^[0-9a-f]{16}$")


# --------------------------------------------------------------------------- helpers


async def _task_id(p) -> int:
    return (await tasks.get_task(p, Actor.system(), "toy")).row.id


async def _submit(p, actor, text: str, label: str, *, context: bool = True, **kw) -> Example:
    if context:
        ctx = await contexts.next_context(p, actor, "toy")
        outcome = await examples.submit(
            p, actor, task_code="toy", context_id=ctx.id, fields={"text": text, "label": label}, **kw
        )
    else:
        fields = {"topic": "kettles", "text": text, "label": label}
        outcome = await examples.submit(p, actor, task_code="toy", fields=fields, **kw)
    return outcome.example


async def _decide(p, example_id: int, status: str, votes=(0, 0, 0), flag_reason: str | None = None) -> None:
    """What the validation service will do; written directly, since these tests are about the export."""
    correct, incorrect, flagged = votes
    async with p.db.write() as s:
        await s.execute(
            update(Example)
            .where(Example.id == example_id)
            .values(
                status=status,
                validations_correct=correct,
                validations_incorrect=incorrect,
                validations_flagged=flagged,
                validations_total=correct + incorrect + flagged,
                flag_reason=flag_reason,
            )
        )


async def _validate(p, example_id: int, user_id: int, label: str, **kw) -> None:
    async with p.db.write() as s:
        s.add(Validation(example_id=example_id, user_id=user_id, label=label, **kw))


async def _open_round(p, number: int) -> Round:
    task_id = await _task_id(p)
    async with p.db.write() as s:
        round_ = Round(
            task_id=task_id,
            number=number,
            secret=secrets.token_hex(32),
            target_models=[m.as_dict() for m in ToyTask.default_target_models],
        )
        s.add(round_)
    p.caches.rounds.pop(task_id)
    await contexts.add_contexts(p, Actor.system(), "toy", [{"topic": "clouds"}, {"topic": "ferries"}])
    return round_


async def _publish(p, number: int) -> None:
    """The round's accepted examples split into one published (STANDARD) set: what non-owners may export."""
    await datasets.build_from_round(p, Actor.system(), "toy", number, splits=(("train", 1.0, "STANDARD"),))


async def _jsonl(p, actor, **kw) -> list[dict]:
    plan = await exports.prepare_export(p, actor, "toy", **kw)
    chunks = [chunk async for chunk in exports.iter_jsonl(p, plan)]
    text = b"".join(chunks).decode()
    assert text == "" or text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


async def _secrets(p) -> dict[int, str]:
    async with p.db.session() as s:
        return {r.number: r.secret for r in await s.scalars(select(Round).where(Round.task_id == await _task_id_in(s)))}


async def _task_id_in(s) -> int:
    return await s.scalar(select(TaskRow.id).where(TaskRow.code == "toy"))


def _load(folder: Path, cache: Path):
    datasets = pytest.importorskip("datasets")
    return datasets.load_dataset(str(folder), cache_dir=str(cache))


@pytest.fixture
def unlimited(platform):
    """These tests submit more examples than one annotator may per minute."""
    platform.settings.examples_per_minute = 0
    return platform


# --------------------------------------------------------------------------- JSON Lines


async def test_jsonl_records_follow_the_format(unlimited):
    p = unlimited
    alice, bob, carol = await make_user(p, "alice"), await make_user(p, "bob"), await make_user(p, "carol")
    accepted = await _submit(p, alice, "not good at all", "bad", tag="negation", time_taken_ms=1500)
    rejected = await _submit(p, alice, "a good idea", "good")
    standalone = await _submit(p, bob, "nothing much", "good", context=False)
    flagged = await _submit(p, bob, "good grief", "bad")
    retracted = await _submit(p, bob, "withdrawn", "bad")
    await examples.retract(p, bob, retracted.id)
    await _decide(p, accepted.id, ExampleStatus.ACCEPTED, votes=(2, 0, 0))
    await _validate(p, accepted.id, bob.user_id, "CORRECT")
    await _validate(p, accepted.id, carol.user_id, "CORRECT", reason="clearly negative")
    await _decide(p, rejected.id, ExampleStatus.REJECTED, votes=(0, 1, 0))
    await _validate(p, rejected.id, carol.user_id, "INCORRECT", corrected_target={"label": "bad"}, by_owner=True)
    await _decide(p, flagged.id, ExampleStatus.FLAGGED, votes=(0, 0, 1), flag_reason="rude wording")

    records = await _jsonl(p, Actor.system())
    by_id = {_pk(r["id"]): r for r in records}
    # Owners (the system actor is an admin) get everything but retracted and pending examples, by id.
    assert [_pk(r["id"]) for r in records] == sorted([accepted.id, rejected.id, standalone.id, flagged.id])
    secret = (await _secrets(p))[1]
    for r in records:
        assert set(r) == RECORD_KEYS
        assert r["format"] == "dynaforge.example/2" and r["task"] == "toy" and r["round"] == 1
        assert HEX16.match(r["author"])
        datetime.fromisoformat(r["created_at"])
        assert r["prediction"]["label"] in ("good", "bad")
        assert r["model_predictions"][0]["model"] == "keyword"

    a = by_id[accepted.id]
    # The context's fields are merged in, so that the line stands alone.
    assert a["fields"]["text"] == "not good at all" and a["fields"]["label"] == "bad"
    assert a["fields"]["topic"] in {c["topic"] for c in ToyTask.demo_contexts}
    assert a["id"] == gid("Example", accepted.id) and a["context_id"] == gid("Context", accepted.context_id)
    assert (a["status"], a["fooled"], a["tag"], a["time_taken_ms"]) == ("ACCEPTED", True, "negation", 1500)
    assert a["prediction"]["label"] == "good"
    assert a["votes"] == {"correct": 2, "incorrect": 0, "flagged": 0}
    assert a["author"] == exports.pseudonym(secret, alice.user_id)
    assert [v["validator"] for v in a["validations"]] == [
        exports.pseudonym(secret, bob.user_id),
        exports.pseudonym(secret, carol.user_id),
    ]
    assert all(set(v) == VALIDATION_KEYS for v in a["validations"])
    assert a["validations"][1]["reason"] == "clearly negative"
    datetime.fromisoformat(a["validations"][0]["created_at"])

    r = by_id[rejected.id]
    assert (r["status"], r["fooled"], r["tag"], r["time_taken_ms"]) == ("REJECTED", False, None, None)
    assert r["votes"] == {"correct": 0, "incorrect": 1, "flagged": 0}
    assert r["validations"] == [
        {
            "validator": exports.pseudonym(secret, carol.user_id),
            "label": "INCORRECT",
            "corrected_target": {"label": "bad"},
            "reason": None,
            "by_owner": True,
            "created_at": r["validations"][0]["created_at"],
        }
    ]
    assert by_id[standalone.id]["fields"] == {"topic": "kettles", "text": "nothing much", "label": "good"}
    assert by_id[standalone.id]["context_id"] is None
    assert by_id[flagged.id]["flag_reason"] == "rude wording"
    assert by_id[flagged.id]["votes"]["flagged"] == 1


async def test_pseudonyms_are_stable_within_a_round_and_unlinkable_across_rounds(unlimited):
    p = unlimited
    alice, bob = await make_user(p, "alice"), await make_user(p, "bob")
    first = [await _submit(p, alice, f"good take {i}", "good", context=False) for i in range(2)]
    by_bob = await _submit(p, bob, "a bad one", "bad", context=False)
    await _validate(p, by_bob.id, alice.user_id, "CORRECT")
    await _open_round(p, 2)
    later = await _submit(p, alice, "good again", "good", context=False)

    records = {_pk(r["id"]): r for r in await _jsonl(p, Actor.system())}
    one, two = records[first[0].id]["author"], records[first[1].id]["author"]
    assert one == two  # stable within a round
    assert records[by_bob.id]["author"] != one  # distinct people, distinct pseudonyms
    assert records[by_bob.id]["validations"][0]["validator"] == one  # one person, one pseudonym in the round
    assert records[later.id]["round"] == 2 and records[later.id]["author"] != one  # each round has its own secret
    for r in records.values():
        assert r["author"] not in (str(alice.user_id), str(bob.user_id))
        line = json.dumps(r)
        assert "user_id" not in line and "alice" not in line and "bob" not in line

    round_two = await _jsonl(p, Actor.system(), round_number=2)
    assert [_pk(r["id"]) for r in round_two] == [later.id]
    assert round_two[0]["author"] == records[later.id]["author"]


async def test_non_owners_export_accepted_examples_only(unlimited):
    p = unlimited
    alice, bob = await make_user(p, "alice"), await make_user(p, "bob")
    kept = await _submit(p, alice, "good stuff", "good")
    await _submit(p, alice, "still open", "good")
    await _decide(p, kept.id, ExampleStatus.ACCEPTED)

    # Not split yet: its test set may be drawn from what is accepted now, so non-owners export nothing of it.
    assert await _jsonl(p, bob) == []
    await _publish(p, 1)
    assert [_pk(r["id"]) for r in await _jsonl(p, bob)] == [kept.id]
    assert [_pk(r["id"]) for r in await _jsonl(p, bob, statuses=["accepted"])] == [kept.id]
    with pytest.raises(Forbidden, match="ACCEPTED"):
        await exports.prepare_export(p, bob, "toy", statuses=["ACCEPTED", "CREATED"])
    with pytest.raises(NotAuthenticated):
        await exports.prepare_export(p, Actor.anonymous(), "toy")

    await tasks.grant_ownership(p, Actor.system(), "toy", alice.user_id)
    assert len(await _jsonl(p, alice)) == 2
    assert [r["status"] for r in await _jsonl(p, alice, statuses=["CREATED"])] == ["CREATED"]


async def test_export_rejects_unknown_statuses_rounds_and_hidden_tasks(unlimited):
    p = unlimited
    bob = await make_user(p, "bob")
    with pytest.raises(InvalidInput) as bad:
        await exports.prepare_export(p, Actor.system(), "toy", statuses=["DONE"])
    assert bad.value.field_errors[0].field == "status"
    with pytest.raises(NotFound, match="rounds are 1"):
        await exports.prepare_export(p, Actor.system(), "toy", round_number=7)
    with pytest.raises(NotFound):
        await exports.prepare_export(p, bob, "nope")

    async with p.db.write() as s:
        await s.execute(update(TaskRow).where(TaskRow.code == "toy").values(hidden=True))
    p.caches.tasks.pop("toy")
    with pytest.raises(NotFound):
        await exports.prepare_export(p, bob, "toy")
    assert (await exports.prepare_export(p, Actor.system(), "toy")).total == 0


async def test_jsonl_file_pages_and_progress(unlimited, tmp_path):
    p = unlimited
    alice = await make_user(p, "alice")
    made = [await _submit(p, alice, f"good line {i}", "good") for i in range(5)]
    plan = await exports.prepare_export(p, Actor.system(), "toy")
    assert plan.total == 5 and plan.basename == "dynaforge-toy-all-rounds"
    seen: list[int] = []
    result = await exports.write_jsonl(p, plan, tmp_path / "out.jsonl", page_size=2, progress=seen.append)
    assert seen == [2, 2, 1]  # one call per page
    assert (result.total, result.counts) == (5, {"round1": 5})
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert [_pk(json.loads(line)["id"]) for line in lines] == [e.id for e in made]
    assert not list(tmp_path.glob("*.partial"))

    # An example created after the plan was made is not written, so the count stays true.
    await _submit(p, alice, "good latecomer", "good")
    again = await exports.write_jsonl(p, plan, tmp_path / "again.jsonl", page_size=2)
    assert again.total == 5


# --------------------------------------------------------------------------- Hugging Face folder


async def test_hf_folder_loads_with_datasets(unlimited, tmp_path):
    p = unlimited
    alice, bob = await make_user(p, "alice"), await make_user(p, "bob")
    r1 = [await _submit(p, alice, f"good one {i}", "good") for i in range(3)]
    r1.append(await _submit(p, bob, "bad one", "bad", context=False, tag="short"))
    await _decide(p, r1[0].id, ExampleStatus.ACCEPTED, votes=(3, 0, 0))
    await _validate(p, r1[0].id, bob.user_id, "CORRECT", reason="fine")
    await _decide(p, r1[1].id, ExampleStatus.REJECTED, votes=(0, 2, 0))
    await _open_round(p, 2)
    r2 = [await _submit(p, bob, "not good", "bad"), await _submit(p, alice, "good", "good")]

    plan = await exports.prepare_export(p, Actor.system(), "toy")
    folder = tmp_path / "toy"
    result = await exports.write_hf(p, plan, folder, page_size=2)
    assert result.counts == {"round1": 4, "round2": 2}
    assert pq.ParquetFile(folder / "data" / "round1.parquet").num_row_groups == 2  # one row group per page

    card = (folder / "README.md").read_text()
    assert card.startswith("---\n") and "data/round2.parquet" in card and "class_label" in card
    assert "pseudonym" in card.lower() and "load_dataset" in card

    ds = _load(folder, tmp_path / "cache")
    assert set(ds) == {"round1", "round2"}
    assert (ds["round1"].num_rows, ds["round2"].num_rows) == (4, 2)
    features = ds["round1"].features
    assert features["label"].names == ["good", "bad"]
    rows = {_pk(row["id"]): row for row in ds["round1"]}
    first = rows[r1[0].id]
    assert features["label"].int2str(first["label"]) == "good"
    assert first["text"] == "good one 0" and first["round"] == 1 and first["status"] == "ACCEPTED"
    assert first["fooled"] is False
    # the prediction is a struct: the target typed as its column (a class label), the model's extras beside it
    assert features["prediction"]["label"].names == ["good", "bad"]
    assert first["prediction"] == {"label": 0, "probabilities": [], "confidence": None, "other": None}
    assert first["votes"] == {"correct": 3, "incorrect": 0, "flagged": 0}
    assert first["author"] == exports.pseudonym((await _secrets(p))[1], alice.user_id)
    assert [v["validator"] for v in first["validations"]] == [exports.pseudonym((await _secrets(p))[1], bob.user_id)]
    assert first["validations"][0]["reason"] == "fine"
    assert rows[r1[3].id]["topic"] == "kettles" and rows[r1[3].id]["tag"] == "short"
    assert features["label"].int2str(rows[r1[3].id]["label"]) == "bad"
    assert sorted(_pk(i) for i in ds["round2"]["id"]) == sorted(e.id for e in r2)

    # One round, public statuses, into its own folder; a non-empty folder is refused.
    await _decide(p, r2[0].id, ExampleStatus.ACCEPTED)
    await _publish(p, 2)
    only = await exports.prepare_export(p, alice, "toy", round_number=2)
    await exports.write_hf(p, only, tmp_path / "r2")
    ds2 = _load(tmp_path / "r2", tmp_path / "cache2")
    assert list(ds2) == ["round2"] and ds2["round2"]["id"] == [gid("Example", r2[0].id)]
    with pytest.raises(InvalidInput, match="not an empty folder"):
        await exports.write_hf(p, only, tmp_path / "r2")


def test_an_hf_prediction_keeps_its_types_and_the_rest_as_json():
    from dynaforge.defaults.exports import _layout

    column = _layout(ToyTask()).prediction
    stored = {"label": "bad", "probabilities": {"good": 0.4, "bad": 0.6}, "confidence": 0.6, "generation": {"ms": 3}}
    assert column.value(stored) == {
        "label": 1,
        "probabilities": [{"label": "good", "probability": 0.4}, {"label": "bad", "probability": 0.6}],
        "confidence": 0.6,
        "other": '{"generation": {"ms": 3}}',
    }
    listed = column.value({"label": "gone", "probabilities": [{"label": "good", "probability": 1}]})
    assert listed == {"label": -1, "probabilities": [{"label": "good", "probability": 1.0}], "confidence": None,
                      "other": None}  # fmt: skip
    assert column.value(None) is None


async def test_hf_export_skips_empty_rounds_and_refuses_an_empty_dataset(unlimited, tmp_path):
    p = unlimited
    alice = await make_user(p, "alice")
    await _open_round(p, 2)
    await _submit(p, alice, "good", "good")
    plan = await exports.prepare_export(p, Actor.system(), "toy")
    result = await exports.write_hf(p, plan, tmp_path / "out")
    assert result.counts == {"round2": 1}
    assert list(_load(tmp_path / "out", tmp_path / "cache")) == ["round2"]
    nothing = await exports.prepare_export(p, Actor.system(), "toy", round_number=1)
    with pytest.raises(NotFound, match="no examples"):
        await exports.write_hf(p, nothing, tmp_path / "empty")


# --------------------------------------------------------------------------- memory


async def _bulk_examples(p, count: int, user_id: int) -> None:
    """Many examples at once (written directly: the model in the loop is not what this measures)."""
    task_id = await _task_id(p)
    async with p.db.session() as s:
        round_id = await s.scalar(select(Round.id).where(Round.task_id == task_id, Round.number == 1))
    rows = [
        {
            "task_id": task_id,
            "round_id": round_id,
            "user_id": user_id,
            "status": ExampleStatus.ACCEPTED,
            "fields": {"topic": "lamps", "text": f"a fairly ordinary sentence number {i}", "label": "good"},
            "prediction": {"label": "bad", "probabilities": {"good": 0.4, "bad": 0.6}},
            "model_predictions": [{"model": "keyword", "prediction": {"label": "bad"}, "latency_ms": 1.5}],
            "fooled": True,
            "validations_correct": 1,
            "validations_total": 1,
        }
        for i in range(count)
    ]
    async with p.db.write() as s:
        await s.execute(insert(Example), rows)
        ids = list(
            await s.scalars(
                select(Example.id).where(Example.task_id == task_id).order_by(Example.id.desc()).limit(count)
            )
        )
        await s.execute(insert(Validation), [{"example_id": i, "user_id": user_id, "label": "CORRECT"} for i in ids])


async def _peak(coro_factory) -> int:
    tracemalloc.start()
    try:
        await coro_factory()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def test_export_memory_stays_flat_in_the_number_of_examples(platform, tmp_path):
    p = platform
    alice = await make_user(p, "alice")
    n, page = 120, 40
    await _bulk_examples(p, n, alice.user_id)

    async def run(tag: str):
        plan = await exports.prepare_export(p, Actor.system(), "toy")
        await exports.write_jsonl(p, plan, tmp_path / f"{tag}.jsonl", page_size=page)
        await exports.write_hf(p, plan, tmp_path / f"{tag}-hf", page_size=page)
        return plan.total

    await run("warm-up")  # first-use imports and caches are not what this measures
    small = await _peak(lambda: run("small"))
    await _bulk_examples(p, 9 * n, alice.user_id)
    large = await _peak(lambda: run("large"))
    assert (await exports.prepare_export(p, Actor.system(), "toy")).total == 10 * n
    with open(tmp_path / "large.jsonl", "rb") as lines:
        assert sum(1 for _ in lines) == 10 * n
    assert pq.ParquetFile(tmp_path / "large-hf" / "data" / "round1.parquet").metadata.num_rows == 10 * n
    # Ten times the examples, about the same peak: memory follows the page, not the export.
    assert large < 1.5 * small, (small, large)


# --------------------------------------------------------------------------- HTTP


async def _token(p, name: str, *, owner: bool = False) -> str:
    user, token = await auth.register(p, username=name, email=f"{name}@example.org", password="long enough pw")
    if owner:
        await tasks.grant_ownership(p, Actor.system(), "toy", user.id)
    return token


async def test_http_export_jsonl_and_hf(unlimited, client, tmp_path, monkeypatch):
    p = unlimited
    alice = await make_user(p, "alice")
    made = [await _submit(p, alice, f"good {i}", "good") for i in range(3)]
    await _decide(p, made[0].id, ExampleStatus.ACCEPTED)
    owner, other = await _token(p, "olga", owner=True), await _token(p, "pete")

    response = await client.get(
        "/export/toy", params={"round": 1, "format": "jsonl"}, headers={"Authorization": f"Bearer {owner}"}
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    assert 'filename="dynaforge-toy-round1.jsonl"' in response.headers["content-disposition"]
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert [_pk(r["id"]) for r in lines] == [e.id for e in made]
    assert all(set(r) == RECORD_KEYS for r in lines)

    public = await client.get("/export/toy", headers={"Authorization": f"Bearer {other}"})
    assert public.text == ""  # the round is not split yet, and the export says so
    note = public.headers["x-dynaforge-export-note"]
    assert "published" in note and "createRoundDatasets" in note and public.headers["x-dynaforge-examples"] == "0"
    await _publish(p, 1)
    public = await client.get("/export/toy", headers={"Authorization": f"Bearer {other}"})
    assert [_pk(json.loads(line)["id"]) for line in public.text.splitlines()] == [made[0].id]
    assert "x-dynaforge-export-note" not in public.headers
    rejected = await client.get(
        "/export/toy", params={"status": "REJECTED"}, headers={"Authorization": f"Bearer {owner}"}
    )
    assert rejected.headers["x-dynaforge-export-note"] == "Task toy has no examples with status REJECTED in any round"

    made_dirs: list[str] = []
    real_mkdtemp = tempfile.mkdtemp

    def recording_mkdtemp(*args, **kw):
        made_dirs.append(real_mkdtemp(*args, **kw))
        return made_dirs[-1]

    monkeypatch.setattr(export_http.tempfile, "mkdtemp", recording_mkdtemp)
    response = await client.get(
        "/export/toy",
        params={"format": "hf", "status": "ACCEPTED,CREATED"},
        headers={"Authorization": f"Bearer {owner}"},
    )
    assert response.status_code == 200 and response.headers["content-type"] == "application/zip"
    assert 'filename="dynaforge-toy-all-rounds.zip"' in response.headers["content-disposition"]
    with zipfile.ZipFile(io.BytesIO(response.content)) as z:
        names = set(z.namelist())
        assert names == {"dynaforge-toy-all-rounds/README.md", "dynaforge-toy-all-rounds/data/round1.parquet"}
        z.extractall(tmp_path)
    ds = _load(tmp_path / "dynaforge-toy-all-rounds", tmp_path / "cache")
    assert ds["round1"].num_rows == 3
    assert made_dirs and not any(Path(d).exists() for d in made_dirs)  # the temporary folder is gone


async def test_http_export_errors_are_json(unlimited, client):
    p = unlimited
    other = await _token(p, "pete")

    async def get(path, token=None, **params):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = await client.get(path, params=params, headers=headers)
        return response.status_code, response.json()["error"]

    status, error = await get("/export/toy")
    assert status == 401 and error["code"] == "NOT_AUTHENTICATED" and "Bearer" in error["message"]
    status, error = await get("/export/toy", token="dfk_not-a-token")
    assert status == 401 and "not valid" in error["message"]
    status, error = await get("/export/toy", token=other, status="CREATED")
    assert status == 403 and error["code"] == "FORBIDDEN"
    status, error = await get("/export/nope", token=other)
    assert status == 404 and error["code"] == "NOT_FOUND"
    status, error = await get("/export/toy", token=other, round=9)
    assert status == 404
    status, error = await get("/export/toy", token=other, format="xml", round="first")
    assert status == 400 and error["code"] == "INVALID_INPUT"
    assert "format" in error["message"] and "round" in error["message"]
    status, error = await get("/export/toy", token=other, format="hf")  # nothing published yet: it says so
    assert status == 404 and "is yours to export" in error["message"] and "no dataset to write" in error["message"]


# --------------------------------------------------------------------------- CLI


@pytest.fixture
def fresh_url(db_url, tmp_path):
    """A committed database of its own (the CLI opens its own connections, outside the test's transaction)."""
    if db_url.startswith("sqlite"):
        yield f"sqlite+aiosqlite:///{tmp_path}/cli.db"
        return
    name = f"dynaforge_export_{uuid.uuid4().hex[:8]}"
    asyncio.run(pg_execute(f'CREATE DATABASE "{name}"'))
    try:
        yield asyncpg_url(name)
    finally:
        asyncio.run(pg_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _toy_platform(database_url: str | None) -> Platform:
    plugins = Plugins(allowlist=set(), extra=[ToyPlugin()])
    return Platform.create(
        make_settings(database_url),
        plugins=plugins,
        inference=LocalInferenceClient(plugins.registry.backends, timeout_s=5.0),
    )


async def _seed(url: str) -> list[int]:
    database = Database(url)
    try:
        await upgrade(database)
    finally:
        await database.dispose()
    p = _toy_platform(url)
    try:
        await tasks.sync_registered_tasks(p)
        await contexts.add_contexts(p, Actor.system(), "toy", list(ToyTask.demo_contexts))
        alice = await make_user(p, "alice")
        made = [
            await _submit(p, alice, text, label) for text, label in [("good", "good"), ("meh", "good"), ("no", "bad")]
        ]
        await _decide(p, made[1].id, ExampleStatus.ACCEPTED)
        return [e.id for e in made]
    finally:
        await p.close()


def test_cli_export(fresh_url, tmp_path, monkeypatch):
    ids = asyncio.run(_seed(fresh_url))
    monkeypatch.setattr(cli, "_platform", _toy_platform)
    runner = CliRunner()

    out = tmp_path / "toy.jsonl"
    result = runner.invoke(
        cli.main, ["export", "--task", "toy", "--format", "jsonl", "--out", str(out), "--database-url", fresh_url]
    )
    assert result.exit_code == 0, result.output
    assert f"wrote 3 examples of toy (round1: 3) to {out}" in result.output
    assert [_pk(json.loads(line)["id"]) for line in out.read_text().splitlines()] == ids

    folder = tmp_path / "hf"
    result = runner.invoke(
        cli.main,
        [
            "export",
            "--task",
            "toy",
            "--round",
            "1",
            "--format",
            "hf",
            "--out",
            str(folder),
            "--status",
            "ACCEPTED",
            "--database-url",
            fresh_url,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "wrote 1 example of toy (round1: 1)" in result.output and "round1.parquet" in result.output
    ds = _load(folder, tmp_path / "cache")
    assert ds["round1"]["id"] == [gid("Example", ids[1])]

    result = runner.invoke(
        cli.main,
        [
            "export",
            "--task",
            "toy",
            "--format",
            "jsonl",
            "--out",
            str(out),
            "--status",
            "DONE",
            "--database-url",
            fresh_url,
        ],
    )
    assert result.exit_code == 1 and "status" in result.output
    result = runner.invoke(
        cli.main,
        [
            "export",
            "--task",
            "toy",
            "--round",
            "4",
            "--format",
            "jsonl",
            "--out",
            str(out),
            "--database-url",
            fresh_url,
        ],
    )
    assert result.exit_code == 1 and "no round 4" in result.output


# --------------------------------------------------------------------------- round trip through the jsonl importer


async def test_export_then_import_keeps_each_example(unlimited, tmp_path):
    imports = pytest.importorskip("dynaforge.services.imports")
    p = unlimited
    alice, bob = await make_user(p, "alice"), await make_user(p, "bob")
    made = [
        await _submit(p, alice, "not good", "bad", tag="negation", time_taken_ms=900),
        await _submit(p, alice, "good news", "good"),
        await _submit(p, bob, "plain", "good", context=False),
        await _submit(p, bob, "good heavens", "bad"),
    ]
    await _decide(p, made[0].id, ExampleStatus.ACCEPTED, votes=(2, 1, 0))
    await _validate(p, made[0].id, bob.user_id, "CORRECT")
    await _decide(p, made[1].id, ExampleStatus.REJECTED, votes=(0, 3, 0))
    await _decide(p, made[3].id, ExampleStatus.FLAGGED, votes=(1, 0, 2), flag_reason="off topic")
    plan = await exports.prepare_export(p, Actor.system(), "toy", round_number=1)
    await exports.write_jsonl(p, plan, tmp_path / "round1.jsonl")

    await _open_round(p, 2)
    report = await imports.import_examples(
        p, Actor.system(), task_code="toy", format="jsonl", path=tmp_path / "round1.jsonl", round_number=2
    )
    assert (report.count, report.round_number) == (4, 2)

    kept = (
        "fields",
        "status",
        "fooled",
        "prediction",
        "model_predictions",
        "tag",
        "votes",
        "flag_reason",
        "time_taken_ms",
    )
    before = await _jsonl(p, Actor.system(), round_number=1)
    after = await _jsonl(p, Actor.system(), round_number=2)
    assert [{k: r[k] for k in kept} for r in after] == [{k: r[k] for k in kept} for r in before]
    assert all(r["format"] == "dynaforge.example/2" and r["round"] == 2 for r in after)
