"""Examples a round's target cannot answer usably: bounded retries, the reason kept, owners told, and a start-up
probe that names a task whose target answers none of its sample examples.

The toy task's ``picky_model`` answers a text with the word "weird" with a label outside the task's set (a
deterministic, unreadable output); ``broken_model`` answers every text so.
"""

from __future__ import annotations

import logging

from support import current_round, make_user

from dynaforge.api.node import global_id
from dynaforge.db.models import Example, ExampleStatus
from dynaforge.inference.backends import InferenceError
from dynaforge.services import auth, examples, tasks

PICKY = {"name": "picky", "backend": "python", "config": {"callable": "toy_plugin:picky_model"}}
BROKEN = {"name": "broken", "backend": "python", "config": {"callable": "toy_plugin:broken_model"}}
KEYWORD = {"name": "keyword", "backend": "python", "config": {"callable": "toy_plugin:keyword_model"}}

EXAMPLE = """query($id: ID!) { node(id: $id) { ... on Example { status pendingReason } } }"""
STUCK = """{ task(code: "toy") { currentRound { stuckExamples { exampleId reason attempts } } } }"""
PROBLEMS = """{ task(code: "toy") { problems } }"""


async def _reason(platform, actor, example_id: int) -> str | None:
    """What ``actor`` reads of why the example still waits, from the stored row (as every process reads it)."""
    async with platform.db.session() as s:
        example = await s.get(Example, example_id)
    return examples.pending_reason(platform, actor, example, await current_round(platform))


async def _people(platform):
    admin = await make_user(platform, "admin", admin=True)
    alice, bob = await make_user(platform, "alice"), await make_user(platform, "bob")
    await tasks.set_target_models(platform, admin, "toy", [PICKY])
    platform.settings.pending_retry_s = 1e-9  # retries of an example are spaced by it: none in the test
    platform.settings.unusable_output_attempts = 3
    return admin, alice, bob


async def test_an_unusable_output_is_retried_a_bounded_number_of_times_and_blocks_no_one(platform, monkeypatch):
    admin, alice, _ = await _people(platform)
    weird = await examples.submit(platform, alice, task_code="toy", fields={"text": "a weird day", "label": "bad"})
    assert weird.example.status == ExampleStatus.PENDING_PREDICTION and "unusable output" in weird.pending_reason

    # the next example finds the target down (not its fault, nor the example's): it waits behind the weird one
    real_predict = examples.predict

    async def down(*args, **kwargs):
        raise InferenceError("model 'picky' failed: ConnectionError: the model server is down")

    monkeypatch.setattr(examples, "predict", down)
    later = await examples.submit(platform, alice, task_code="toy", fields={"text": "a good day", "label": "good"})
    assert later.example.status == ExampleStatus.PENDING_PREDICTION
    asked: list[str] = []

    async def counting(p, task, round_, model_input):
        asked.append(model_input["text"])
        return await real_predict(p, task, round_, model_input)

    monkeypatch.setattr(examples, "predict", counting)

    # the weird example's unusable output no longer stops the queue: the later one is predicted
    assert await examples.predict_pending(platform) == 1
    assert asked == ["a weird day", "a good day"]
    assert (await current_round(platform)).pending == 1
    assert (await _reason(platform, alice, weird.example.id)).endswith("2 time(s) so far)")

    assert await examples.predict_pending(platform) == 0  # its third unusable output in a row: no more retries
    stuck = await _reason(platform, alice, weird.example.id)
    assert "model predicted 'not-a-label' for label" in stuck and "3 times in a row; not asked again" in stuck
    asked.clear()
    for _ in range(3):
        assert await examples.predict_pending(platform) == 0
    assert asked == []  # bounded: the same model would answer the same way

    # its owners see it in the round, until the round's targets change; then it is asked again and predicted
    round_ = await current_round(platform)
    [entry] = await examples.stuck_examples(platform, admin, round_)
    assert entry.example_id == weird.example.id and entry.attempts == 3
    assert await examples.stuck_examples(platform, alice, round_) is None  # not an owner
    await tasks.set_target_models(platform, admin, "toy", [KEYWORD])
    assert await examples.predict_pending(platform) == 1 and asked == ["a weird day"]
    assert await examples.stuck_examples(platform, admin, await current_round(platform)) == []
    async with platform.db.session() as s:  # predicted: the failures are forgotten with it
        predicted = await s.get(Example, weird.example.id)
    assert (predicted.status, predicted.pending_reason, predicted.prediction_attempts) == ("CREATED", None, 0)


async def test_the_reason_is_read_over_graphql_by_the_author_and_owners(gql, platform):
    admin, alice, bob = await _people(platform)
    weird = await examples.submit(platform, alice, task_code="toy", fields={"text": "weird", "label": "bad"})
    for _ in range(2):
        await examples.predict_pending(platform)
    tokens = {}
    for actor in (admin, alice, bob):
        _, tokens[actor.username] = await auth.create_token(platform, actor, name="t")
    node = {"id": global_id("Example", weird.example.id)}
    mine = (await gql(EXAMPLE, node, token=tokens["alice"]))["node"]
    assert mine["status"] == "PENDING_PREDICTION" and "3 times in a row; not asked again" in mine["pendingReason"]
    assert "not-a-label" in mine["pendingReason"]
    theirs = (await gql(EXAMPLE, node, token=tokens["bob"]))["node"]
    assert theirs is None or theirs["pendingReason"] is None  # someone else's example tells them nothing
    [entry] = (await gql(STUCK, token=tokens["admin"]))["task"]["currentRound"]["stuckExamples"]
    assert entry["exampleId"] == node["id"] and entry["attempts"] == 3 and "not-a-label" in entry["reason"]
    assert (await gql(STUCK, token=tokens["alice"]))["task"]["currentRound"]["stuckExamples"] is None
    # an example waiting for a target that is down says so (it was never answered unreadably)
    async with platform.db.write() as s:
        (await s.get(Example, weird.example.id)).prediction_attempts = 0
    assert (
        "did not answer (it was down or too slow)"
        in (await gql(EXAMPLE, node, token=tokens["alice"]))["node"]["pendingReason"]
    )


async def test_a_target_that_cannot_answer_is_named_at_start_up(gql, platform, monkeypatch, caplog):
    from dynaforge.app import _warm

    admin, alice, _ = await _people(platform)
    await tasks.set_target_models(platform, admin, "toy", [BROKEN])
    task = platform.plugins.registry.tasks["toy"]
    monkeypatch.setattr(
        task, "sample_examples", ({"text": "good food", "label": "good"}, {"text": "x", "label": "bad"})
    )
    with caplog.at_level(logging.ERROR, logger="dynaforge.services.examples"):
        await _warm(platform)  # what the server runs in the background at start-up
    assert any(
        r.levelno == logging.ERROR and "task toy: round 1's target model(s) answered none of its 2 sample examples"
        in r.getMessage() and "not-a-label" in r.getMessage() for r in caplog.records
    )  # fmt: skip
    _, admin_token = await auth.create_token(platform, admin, name="t")
    _, alice_token = await auth.create_token(platform, alice, name="t")
    [problem] = (await gql(PROBLEMS, token=admin_token))["task"]["problems"]
    assert "answered none of its 2 sample examples usably" in problem and "setTargetModels" in problem
    assert (await gql(PROBLEMS, token=alice_token))["task"]["problems"] == []  # owners and admins only

    # a problem clears once the target answers an example (the owners set a working one)
    await tasks.set_target_models(platform, admin, "toy", [KEYWORD])
    assert (await gql(PROBLEMS, token=admin_token))["task"]["problems"] == [problem]
    await examples.submit(platform, alice, task_code="toy", fields={"text": "good stuff", "label": "good"})
    assert (await gql(PROBLEMS, token=admin_token))["task"]["problems"] == []
    # a target that answers one sample usably can answer; a task without samples is not asked
    await tasks.set_target_models(platform, admin, "toy", [PICKY])
    monkeypatch.setattr(task, "sample_examples", ({"text": "weird", "label": "bad"}, {"text": "good", "label": "good"}))
    assert await examples.probe_targets(platform) == {}
    await tasks.set_target_models(platform, admin, "toy", [BROKEN])
    monkeypatch.setattr(task, "sample_examples", ())
    assert await examples.probe_targets(platform) == {}
