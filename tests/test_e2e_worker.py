"""End to end: the model worker is killed during a burst of createExample calls, and no example is lost.

The real server runs as a subprocess with its model worker (``DYNAFORGE_INFERENCE=worker``, the default of
``serve``), on SQLite and on PostgreSQL. An operator puts a deliberately slow model in the loop of the ``e2e-spans``
task with ``setTargetModels``; several annotators then submit examples at once over HTTP, and the test kills the
worker (its pid comes from ``/healthz``) in the middle. Every call must be acknowledged, as a created example or as
one pending a prediction; the server must restart the worker, predict the pending examples, and end with every
acknowledged example stored, predicted and counted exactly once.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support import (
    Server,
    e2e_environment,
    eventually,
    operator_server,
    register,
    run,
    session,
    write_e2e_plugin,
)

pytestmark = pytest.mark.e2e

ANNOTATORS = 6
EACH = 8
PASSAGE = "Orchards line the valley road, and every autumn the village presses apples into cider."
SLOW_MODEL = {
    "name": "slow-first-word",
    "backend": "python",
    "config": {"callable": "e2e_spans:answer_first_word_slowly"},
}

SET_TARGETS = """mutation($input: SetTargetModelsInput!) {
  setTargetModels(input: $input) { __typename ... on Error { message } } }"""
ADD_CONTEXTS = """mutation($input: AddContextsInput!) {
  addContexts(input: $input) { __typename ... on ContextsAdded { ids } ... on Error { message } } }"""
CREATE = """mutation($input: CreateExampleInput!) {
  createExample(input: $input) {
    __typename
    ... on ExampleCreated { example { id status } }
    ... on PredictionPending { example { id status } message }
    ... on Error { message }
  } }"""
ROUND = 'query { task(code: "e2e-spans") { currentRound { collected fooled pending } } }'
MINE = """query($after: String) { examples(taskCode: "e2e-spans", first: 100, after: $after) {
  edges { node { id status fooled prediction { fields span { text start } } } }
  pageInfo { hasNextPage endCursor } } }"""


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ],
)
def server(request, tmp_path_factory) -> Iterator[tuple[Server, str]]:
    workdir = tmp_path_factory.mktemp(f"e2e-worker-{request.param}")
    write_e2e_plugin(workdir)
    env = e2e_environment(workdir)
    env.update(
        DYNAFORGE_LOAD_PLUGINS="e2e_spans",
        DYNAFORGE_INFERENCE="worker",
        DYNAFORGE_INFERENCE_TIMEOUT_S="5",
        DYNAFORGE_PENDING_RETRY_S="0.5",
        DYNAFORGE_EXAMPLES_PER_MINUTE="1000",
    )
    with operator_server(request.param, workdir, env) as started:
        yield started


def _inference(server: Server) -> dict[str, Any]:
    return httpx.get(server.base_url + "/healthz", timeout=10).json()["inference"]


async def test_killing_the_worker_during_a_burst_loses_no_example(server):
    server, operator = server
    async with session(server, operator) as s:
        result = await run(s, SET_TARGETS, input={"taskCode": "e2e-spans", "models": [SLOW_MODEL]})
        assert result["setTargetModels"]["__typename"] == "TargetModelsSet", result
        added = await run(s, ADD_CONTEXTS, input={"taskCode": "e2e-spans", "contexts": [{"passage": PASSAGE}]})
        context_id = added["addContexts"]["ids"][0]
        warm = await run(
            s,
            CREATE,
            input={
                "taskCode": "e2e-spans",
                "contextId": context_id,
                "fields": {"question": "What lines the road?", "answer": {"text": "Orchards", "start": 0}},
            },
        )
        assert warm["createExample"]["__typename"] == "ExampleCreated", warm  # the slow model is loaded

    before = _inference(server)
    assert before["ready"] and before["pid"]
    tokens = [(await register(server, f"burst{i}"))[0] for i in range(ANNOTATORS)]

    async def annotate(token: str, index: int) -> list[dict[str, Any]]:
        answers = []
        async with session(server, token) as s:
            for j in range(EACH):
                fields = {
                    "question": f"Question {index}-{j} about the valley?",
                    "answer": {"text": "cider", "start": PASSAGE.index("cider")},
                }
                answers.append(
                    (await run(s, CREATE, input={"taskCode": "e2e-spans", "contextId": context_id, "fields": fields}))[
                        "createExample"
                    ]
                )
        return answers

    async def kill_soon():
        await asyncio.sleep(0.6)
        os.kill(before["pid"], signal.SIGKILL)

    results = await asyncio.gather(*(annotate(t, i) for i, t in enumerate(tokens)), kill_soon())
    answers = [a for per_user in results[:-1] for a in per_user]
    kinds = {a["__typename"] for a in answers}
    assert kinds <= {"ExampleCreated", "PredictionPending"}, [a for a in answers if a["__typename"] not in kinds]
    assert len(answers) == ANNOTATORS * EACH
    pending = [a for a in answers if a["__typename"] == "PredictionPending"]
    assert pending, "the kill did not hit any request in flight; the test proved nothing"
    assert all(a["example"]["status"] == "PENDING_PREDICTION" for a in pending)

    # The worker comes back, the retry predicts every pending example, and the counters end exact.
    after = await eventually(
        lambda: asyncio.to_thread(
            lambda: (lambda i: i if i["ready"] and i["pid"] != before["pid"] else None)(_inference(server))
        ),
        within=60,
        every=0.2,
        what="the model worker to restart",
    )
    assert after["starts"] == 2
    async with session(server, operator) as s:
        counts = await eventually(
            lambda: _round_when_settled(s), within=90, every=0.2, what="the pending examples to be predicted"
        )
    assert counts["collected"] == ANNOTATORS * EACH + 1  # the burst plus the warm-up example
    assert counts["fooled"] == ANNOTATORS * EACH  # the model answers "Orchards", never "cider"
    acknowledged = {a["example"]["id"] for a in answers}
    stored = {}
    for token in tokens:
        async with session(server, token) as s:
            for edge in (await run(s, MINE))["examples"]["edges"]:
                stored[edge["node"]["id"]] = edge["node"]
    assert set(stored) == acknowledged
    assert {n["status"] for n in stored.values()} == {"CREATED"}
    predictions = [n["prediction"] for n in stored.values()]
    assert all(n["fooled"] is True for n in stored.values())
    assert all(p["fields"]["answer"]["text"] == p["span"]["text"] == "Orchards" for p in predictions)


async def _round_when_settled(s) -> dict[str, int] | None:
    counts = (await run(s, ROUND))["task"]["currentRound"]
    return counts if counts["pending"] == 0 else None
