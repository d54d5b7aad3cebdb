"""The after-commit announcer (services/announce.py) and the event hooks it calls: ``example_validated``,
``round_changed`` and ``evaluation_finished`` (once per finished evaluation, in the process that recorded it).
On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os

import pytest
from sqlalchemy import select
from support import make_user, toy_process_env

from dynaforge import hookimpl, hookspecs
from dynaforge.db.models import DatasetAccess, WebhookDelivery
from dynaforge.db.models import Evaluation as EvaluationRow
from dynaforge.db.models import EvaluationStatus as E
from dynaforge.jobs import run_in_child
from dynaforge.services import announce, datasets, examples, submissions, tasks, validation, webhooks
from dynaforge.services.actor import Actor
from dynaforge.services.evaluation_runner import Runner

KEYWORD = {"callable": "toy_plugin:keyword_model"}
ONE_SET = (("test", 1.0, DatasetAccess.SCORING),)


class Recorder:
    """Records every event hook it implements, as (hook, kwargs)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def of(self, hook: str) -> list[dict]:
        return [kwargs for name, kwargs in self.calls if name == hook]

    @hookimpl
    def example_validated(self, example, validation):
        self.calls.append(("example_validated", {"example": example, "validation": validation}))

    @hookimpl
    async def round_changed(self, round, change):
        await asyncio.sleep(0)
        self.calls.append(("round_changed", {"round": round, "change": change}))

    @hookimpl
    def evaluation_finished(self, evaluation):
        self.calls.append(("evaluation_finished", {"evaluation": evaluation}))


@pytest.fixture
def recorder(platform):
    recorder = Recorder()
    platform.plugins.register(recorder, "recorder")
    try:
        yield recorder
    finally:
        platform.plugins.unregister("recorder")


def test_every_event_hook_has_a_route():
    """The announcer is the one place that maps events: every event hook of hookspecs.py is routed there."""
    specs = {n for n, f in vars(hookspecs).items() if inspect.isfunction(f) and hasattr(f, "dynaforge_spec")}
    event_hooks = {n for n in specs if not n.startswith("register_")}
    assert {r.hook for r in announce.ROUTES.values()} == event_hooks
    assert webhooks.EVENTS == (
        "modelFooled",
        "exampleCreated",
        "examplePredicted",
        "verdictDecided",
        "exampleValidated",
        "roundChanged",
    )


# --------------------------------------------------------------------------- example_validated


async def test_example_validated_gets_the_example_after_the_vote_and_the_vote(platform, recorder):
    platform.settings.examples_per_minute = 1000
    author, owner = await make_user(platform, "author1"), await make_user(platform, "owner1")
    voter = await make_user(platform, "voter1")
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner.user_id)
    fooling = {"text": "good", "label": "bad"}
    first = (await examples.submit(platform, author, task_code="toy", fields=fooling)).example
    second = (await examples.submit(platform, author, task_code="toy", fields=fooling)).example
    bus = platform.events.subscribe("exampleValidated:toy")
    listening = asyncio.ensure_future(bus.__anext__())
    await asyncio.sleep(0)

    await validation.validate(platform, voter, first.id, "INCORRECT", reason="the label is right")
    [call] = recorder.of("example_validated")
    assert call["example"]["id"] == first.id and call["example"]["status"] == "CREATED"
    assert call["example"]["votes"] == {"correct": 0, "incorrect": 1, "flagged": 0}
    vote = call["validation"]
    assert {k: vote[k] for k in ("example_id", "label", "user_id", "by_owner", "reason", "corrected_target")} == {
        "example_id": first.id,
        "label": "INCORRECT",
        "user_id": voter.user_id,
        "by_owner": False,
        "reason": "the label is right",
        "corrected_target": None,
    }
    json.dumps(call)  # plain JSON values only
    published = await asyncio.wait_for(listening, 5)
    assert published == {**call["example"], "label": "INCORRECT"}  # what subscribers and webhooks always got

    await validation.validate(platform, owner, first.id, "CORRECT")  # an owner's vote decides
    decided = recorder.of("example_validated")[-1]
    assert decided["example"]["status"] == "ACCEPTED" and decided["validation"]["by_owner"] is True

    await validation.flag(platform, author, second.id, "I typed the wrong label")  # the author's flag: no vote
    flagged = recorder.of("example_validated")[-1]
    assert flagged["example"]["status"] == "FLAGGED" and flagged["validation"]["label"] == "FLAGGED"
    assert flagged["validation"]["user_id"] == flagged["example"]["user_id"] == author.user_id
    assert flagged["validation"]["by_owner"] is False
    assert len(recorder.of("example_validated")) == 3


# --------------------------------------------------------------------------- round_changed


async def test_round_changed_on_open_close_and_update(platform, recorder):
    owner = await make_user(platform, "owner2")
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner.user_id)
    new, previous = await tasks.open_next_round(platform, owner, "toy", description="round two")
    await tasks.update_round(platform, owner, "toy", new.number, description="round two, edited")
    await tasks.close_round(platform, owner, "toy")
    await tasks.close_round(platform, owner, "toy")  # already closed: nothing changed, nothing announced
    calls = recorder.of("round_changed")
    assert [(c["change"], c["round"]["number"]) for c in calls] == [("OPENED", 2), ("UPDATED", 2), ("CLOSED", 2)]
    opened = calls[0]["round"]
    assert opened["id"] == new.id and opened["task_code"] == "toy" and opened["description"] == "round two"
    assert opened["ended_at"] is None and calls[2]["round"]["ended_at"] is not None
    assert opened["target_models"] == [{"name": "keyword", "backend": "python", "config": KEYWORD}]
    assert "secret" not in opened and previous.secret not in json.dumps(calls)
    assert calls[1]["round"]["description"] == "round two, edited"


# --------------------------------------------------------------------------- the announcer never raises


async def test_round_changed_and_the_other_destinations_survive_a_broken_bus_and_webhook_store(
    platform, recorder, monkeypatch, caplog
):
    owner = await make_user(platform, "owner3")
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner.user_id)

    async def bus_down(topic, payload):
        raise ConnectionError("the bus is down")

    async def store_down(p, event, task_id, payload):
        raise RuntimeError("the database is read-only")

    monkeypatch.setattr(platform.events, "publish", bus_down)
    monkeypatch.setattr(announce, "queue_webhooks", store_down)
    with caplog.at_level(logging.ERROR, logger="dynaforge.services.announce"):
        new, _ = await tasks.open_next_round(platform, owner, "toy")  # the write stands; no error reaches the caller
    assert [c["change"] for c in recorder.of("round_changed")] == ["OPENED"]
    messages = [r.getMessage() for r in caplog.records]
    assert "roundChanged on toy was not published" in messages
    assert "webhook deliveries for roundChanged on toy could not be stored" in messages
    assert (await tasks.get_round(platform, new.task_id)).id == new.id


async def test_example_created_announces_to_hooks_bus_and_webhooks_in_one_place(platform):
    platform.settings.examples_per_minute = 1000
    author = await make_user(platform, "author4")
    await webhooks.create(platform, author, "toy", "http://127.0.0.1:9/hook", ["modelFooled"])
    seen = []

    class Listener:
        @hookimpl
        def example_created(self, example):
            seen.append(("example_created", example["id"]))

        @hookimpl
        def model_fooled(self, example):
            seen.append(("model_fooled", example["id"]))

    platform.plugins.register(Listener(), "listener")
    try:
        bus = platform.events.subscribe("modelFooled:toy")
        listening = asyncio.ensure_future(bus.__anext__())
        await asyncio.sleep(0)
        fooling = {"text": "good", "label": "bad"}
        made = (await examples.submit(platform, author, task_code="toy", fields=fooling)).example
    finally:
        platform.plugins.unregister("listener")
    assert seen == [("example_created", made.id), ("model_fooled", made.id)]
    assert (await asyncio.wait_for(listening, 5))["id"] == made.id
    async with platform.db.session() as s:
        [delivery] = list(await s.scalars(select(WebhookDelivery)))
    body = json.loads(delivery.body)
    assert delivery.event == "modelFooled" and body["type"] == "modelFooled" and body["data"]["id"] == made.id
    assert "user_id" not in body["data"]  # the registrant does not own the task


# --------------------------------------------------------------------------- evaluation_finished


async def _scoring_set(p) -> None:
    p.settings.examples_per_minute = 1000
    admin, author = await make_user(p, "admin5", admin=True), await make_user(p, "author5")
    for i in range(6):
        text = f"{'good' if i % 2 == 0 else 'fine'} item {i}"
        outcome = await examples.submit(p, author, task_code="toy", fields={"text": text, "label": "good"})
        await validation.validate(p, admin, outcome.example.id, "CORRECT")
    await datasets.build_from_round(p, admin, "toy", 1, splits=ONE_SET)


async def test_evaluation_finished_once_per_finished_evaluation(platform, recorder):
    await _scoring_set(platform)
    builder = await make_user(platform, "builder5")
    model, [queued] = await submissions.submit_model(
        platform, builder, task_code="toy", name="keywords", backend="python", config=KEYWORD
    )
    runner = Runner(platform.settings, platform.plugins, db=platform.db)
    assert await runner.run(queued.id, stop_after_chunks=0) == E.RUNNING
    assert recorder.of("evaluation_finished") == []  # stopped before the end: not finished
    assert await runner.run(queued.id) == E.DONE
    assert await runner.run(queued.id) == E.DONE  # a message delivered twice finds it done
    [call] = recorder.of("evaluation_finished")
    evaluation = call["evaluation"]
    assert {k: evaluation[k] for k in ("id", "task_code", "model_id", "dataset_id", "dataset_name", "status")} == {
        "id": queued.id,
        "task_code": "toy",
        "model_id": model.id,
        "dataset_id": queued.dataset_id,
        "dataset_name": "r1-test",
        "status": "DONE",
    }
    async with platform.db.session() as s:
        stored = await s.get(EvaluationRow, queued.id)
    # the figures shown: a scoring set's public part (the private part's are held in the row's details)
    assert evaluation["metrics"] == stored.metrics and stored.details["part"] == "public"
    assert 0.0 <= evaluation["metrics"]["accuracy"] <= 1.0 and evaluation["error"] is None
    assert evaluation["throughput"] > 0 and evaluation["finished_at"] and evaluation["attempts"] == 2
    json.dumps(evaluation)


async def test_evaluation_finished_when_failed_once_even_if_recorded_twice(platform, recorder):
    await _scoring_set(platform)
    builder = await make_user(platform, "builder6")
    _, [queued] = await submissions.submit_model(
        platform, builder, task_code="toy", name="broken", backend="python", config={"callable": "toy_plugin:nothing"}
    )
    runner = Runner(platform.settings, platform.plugins, db=platform.db)
    with pytest.raises(Exception, match="nothing"):
        await runner.run(queued.id)
    await runner.fail(queued.id, "ImportError: no toy_plugin:nothing", "the log")
    await runner.fail(queued.id, "ImportError: no toy_plugin:nothing, again", "the log")  # a second report
    [call] = recorder.of("evaluation_finished")
    assert call["evaluation"]["status"] == "FAILED" and call["evaluation"]["metrics"] == {}
    assert call["evaluation"]["error"] == "ImportError: no toy_plugin:nothing"
    [(evaluation, _)] = await submissions.evaluations_of(platform, call["evaluation"]["model_id"])
    assert evaluation.error.endswith("again")  # a failed one still gets the newer error, as before


async def test_evaluation_finished_for_uploaded_predictions(platform, recorder):
    await _scoring_set(platform)
    builder = await make_user(platform, "builder7")
    _, evaluation = await submissions.submit_predictions(
        platform, builder, task_code="toy", name="uploaded", dataset_name="r1-test", predictions=[{"label": "good"}] * 6
    )
    [call] = recorder.of("evaluation_finished")
    assert call["evaluation"]["id"] == evaluation.id and call["evaluation"]["status"] == "DONE"
    assert call["evaluation"]["metrics"]["accuracy"] == 1.0 and call["evaluation"]["throughput"] is None


RECORDER_PLUGIN = """
import json, os
from dynaforge import hookimpl

@hookimpl
def evaluation_finished(evaluation):
    with open(os.environ["FINISHED_RECORD"], "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"pid": os.getpid(), **evaluation}) + "\\n")
"""


async def test_evaluation_finished_runs_in_the_evaluation_child_process(live_platform, tmp_path, monkeypatch):
    """The job's child process loads the server's plugins (an entry point here) and calls the hook once."""
    p = live_platform
    await _scoring_set(p)
    builder = await make_user(p, "builder8")
    _, [queued] = await submissions.submit_model(
        p, builder, task_code="toy", name="keywords", backend="python", config=KEYWORD
    )
    env = toy_process_env(tmp_path, p.settings.database_url)
    (tmp_path / "finish_recorder.py").write_text(RECORDER_PLUGIN, encoding="utf-8")
    dist = tmp_path / "finish_recorder-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: finish_recorder\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[dynaforge]\nrecorder = finish_recorder\n", encoding="utf-8")
    record = tmp_path / "finished.jsonl"
    for key, value in {**env, "FINISHED_RECORD": str(record)}.items():
        monkeypatch.setenv(key, value)
    p.settings.load_plugins = "toy,recorder"
    assert await asyncio.to_thread(run_in_child, p.settings, queued.id) == 0
    assert await asyncio.to_thread(run_in_child, p.settings, queued.id) == 0  # delivered twice: done already
    lines = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 1
    assert lines[0]["id"] == queued.id and lines[0]["status"] == "DONE" and lines[0]["task_code"] == "toy"
    assert lines[0]["pid"] != os.getpid()
