"""Queued evaluations that no process sent (a data set imported with the CLI while a server runs) are found and run
by the server, each sent once: in-process with the job system on a StubBroker, and end to end with a real
``dynaforge serve`` and ``dynaforge datasets import`` (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from dramatiq.brokers.stub import StubBroker
from sqlalchemy import update
from sqlmodel import col
from support import Server, cli, create_operator, database, make_user, run, serve, session, toy_process_env

from dynaforge.db.models import Evaluation, EvaluationStatus
from dynaforge.jobs import QUEUE, Jobs
from dynaforge.services import datasets, submissions
from dynaforge.services.evaluation_jobs import enqueue, send_unsent

KEYWORD = {"callable": "toy_plugin:keyword_model"}


def _records(n: int) -> list[tuple[str, dict[str, str]]]:
    return [(f"line {i}", {"text": f"{'good' if i % 2 else 'dull'} thing {i}", "label": "good"}) for i in range(n)]


async def test_the_sweep_sends_each_unsent_evaluation_once(platform):
    owner, builder = await make_user(platform, "owner", admin=True), await make_user(platform, "builder")
    await datasets.create_dataset(platform, owner, "toy", "held-out", _records(3))
    _, queued = await submissions.submit_model(
        platform, builder, task_code="toy", name="kw", backend="python", config=KEYWORD
    )
    assert len(queued) == 1 and platform.jobs is None  # queued where no job system runs: nobody sent it

    broker = StubBroker()
    platform.jobs = Jobs(platform.settings, broker=broker)  # a server's job system, its worker not started
    try:
        assert await send_unsent(platform) == 1
        assert broker.queues[QUEUE].qsize() == 1
        assert await send_unsent(platform) == 0  # sent once: this process remembers
        enqueue(platform, [queued[0].id])  # a service sending it again sends nothing either
        assert broker.queues[QUEUE].qsize() == 1

        # what a server process queues itself is sent at once, and the sweep leaves it alone
        _, more = await submissions.submit_model(
            platform, builder, task_code="toy", name="kw2", backend="python", config=KEYWORD
        )
        assert broker.queues[QUEUE].qsize() == 2 and await send_unsent(platform) == 0
        assert set(platform.jobs.sent) == {queued[0].id, more[0].id}

        # once started, an evaluation is forgotten (it never returns to QUEUED)
        async with platform.db.write() as s:
            await s.execute(
                update(Evaluation).where(col(Evaluation.id) == queued[0].id).values(status=EvaluationStatus.RUNNING)
            )
        assert await send_unsent(platform) == 0 and set(platform.jobs.sent) == {more[0].id}
    finally:
        platform.jobs.stop()
        platform.jobs = None


MODEL = """query($id: ID!) { model(id: $id) { status evaluations { nodes { dataset { name } status error } } } }"""
SUBMIT = """mutation($input: SubmitModelInput!) { submitModel(input: $input) {
  __typename ... on ModelSubmitted { model { id } } ... on Error { message } } }"""


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
async def test_a_data_set_imported_while_the_server_runs_is_evaluated(kind, tmp_path):
    with database(kind, tmp_path) as database_url:
        env = toy_process_env(
            tmp_path, database_url, data_dir=str(tmp_path / "data"), environment="test", queued_sweep_s="0.5",
            eval_bootstrap_resamples="20",
        )  # fmt: skip
        cli(env, tmp_path, "db", "upgrade")
        token = create_operator(env, tmp_path, database_url)
        with serve(env, tmp_path) as base_url:
            server = Server(kind, base_url, database_url, env, tmp_path)
            async with session(server, token) as s:
                submitted = await run(
                    s, SUBMIT, input={"taskCode": "toy", "name": "kw", "backend": "python", "config": KEYWORD}
                )
                assert submitted["submitModel"]["__typename"] == "ModelSubmitted", submitted
                model_id = submitted["submitModel"]["model"]["id"]
                assert (await run(s, MODEL, id=model_id))["model"]["evaluations"]["nodes"] == []  # no scoring set yet

                # the CLI adds a scoring set in a process of its own, while the server runs
                lines = [{"format": "dynaforge.example/1", "fields": f, "status": "ACCEPTED"} for _, f in _records(12)]
                path = tmp_path / "held-out.jsonl"
                path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
                imported = cli(
                    env, tmp_path, "datasets", "import", "--task", "toy", "--format", "jsonl", "--name", "held-out",
                    str(path),
                )  # fmt: skip
                assert "data set held-out: 12 examples (scoring)" in imported.stdout
                assert "1 evaluations queued: a running server with the in-process worker runs them" in imported.stdout

                # the server finds the queued evaluation and runs it, without a restart; the model's status follows
                # once the evaluation's figures are folded in (a write of its own, just after the evaluation's)
                deadline = time.monotonic() + 120
                while True:
                    model = (await run(s, MODEL, id=model_id))["model"]
                    nodes = model["evaluations"]["nodes"]
                    ended = nodes and nodes[0]["status"] in ("DONE", "FAILED") and model["status"] != "EVALUATING"
                    if ended or time.monotonic() > deadline:
                        break
                    await asyncio.sleep(0.5)
                assert nodes == [{"dataset": {"name": "held-out"}, "status": "DONE", "error": None}], nodes
                assert model["status"] == "DONE"
