"""The update subscriptions (evaluationUpdated, trainingJobUpdated, adversaryRunUpdated) over a real uvicorn server
on loopback, on SQLite and PostgreSQL: the object in each payload, the current state on subscribing, resuming with
a cursor, and who may follow what. The web app's evaluation, training and generation screens are built on them.
"""

from __future__ import annotations

import asyncio

import pytest
import test_subscriptions
from gql import gql
from gql.graphql_request import GraphQLRequest
from gql.transport.exceptions import TransportQueryError
from sqlalchemy import select
from support import gid
from test_subscriptions import _started

from dynaforge.db.models import AdversaryRun, DatasetAccess, Example, Round, TaskRow, TrainingJob, utcnow
from dynaforge.jobs import publisher
from dynaforge.services import datasets, submissions, validation
from dynaforge.services import subscriptions as subscription_service
from dynaforge.services.actor import Actor
from dynaforge.services.evaluation_runner import Runner

served = test_subscriptions.served  # the same server fixture: a live platform behind uvicorn on loopback

EVALUATIONS = """subscription($t: String!, $a: String) { evaluationUpdated(taskCode: $t, after: $a) {
  cursor evaluation { id status progress model { id name } dataset { name } } } }"""
JOBS = """subscription($t: String!, $a: String) { trainingJobUpdated(taskCode: $t, after: $a) {
  cursor job { id status stage } } }"""
RUNS = """subscription($t: String!, $a: String) { adversaryRunUpdated(taskCode: $t, after: $a) {
  cursor run { id status error } } }"""
CURSOR = 'query { task(code: "toy") { updatesCursor } }'
CANCEL_JOB = "mutation($id: ID!) { cancelTraining(input: {id: $id}) { __typename } }"
CANCEL_RUN = "mutation($id: ID!) { cancelGeneration(input: {id: $id}) { __typename } }"


def _req(document: str, variables: dict) -> GraphQLRequest:
    return GraphQLRequest(gql(document).document, variable_values=variables)


async def _read(session, document: str, variables: dict, count: int, within: float = 10.0) -> list[dict]:
    got: list[dict] = []

    async def read():
        async for result in session.subscribe(_req(document, variables)):
            got.append(result)
            if len(got) == count:
                return

    await asyncio.wait_for(read(), within)
    return got


async def _task_id(p) -> int:
    async with p.db.session() as s:
        return int(await s.scalar(select(TaskRow.id).where(TaskRow.code == "toy")))


async def _scoring_set(served) -> Actor:
    """Six validated examples of the toy task made into a scoring set, by an admin (returned)."""
    p = served.p
    _, admin_id = await served.user("admin9", admin=True)
    admin = Actor(admin_id, "admin9", True)
    author, _ = await served.user("author9")
    for i in range(6):
        await served.gql(
            """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename } }""",
            {"input": {"taskCode": "toy", "fields": {"text": f"good {i}", "label": "good"}}},
            author,
        )
    async with p.db.session() as s:
        ids = list(await s.scalars(select(Example.id)))
    for example_id in ids:
        await validation.validate(p, admin, example_id, "CORRECT")
    await datasets.build_from_round(p, admin, "toy", 1, splits=(("test", 1.0, DatasetAccess.SCORING),))
    return admin


async def test_evaluations_come_as_objects_from_queued_to_done_for_those_who_see_the_model(served):
    p = served.p
    await _scoring_set(served)
    builder, builder_id = await served.user("builder9")
    stranger, _ = await served.user("stranger9")
    cursor = (await served.gql(CURSOR))["task"]["updatesCursor"]
    topic = f"evaluationUpdated:#{await _task_id(p)}"
    async with served.subscriber(builder) as mine, served.subscriber(stranger) as theirs:
        reading = asyncio.create_task(_read(mine, EVALUATIONS, {"t": "toy", "a": cursor}, 5))
        withheld = asyncio.create_task(_read(theirs, EVALUATIONS, {"t": "toy"}, 1, within=30))
        await _started(reading, p.events, topic)
        await _started(withheld, p.events, topic)
        model, queued = await submissions.submit_model(
            p,
            Actor(builder_id, "builder9", False),
            task_code="toy",
            name="private",
            backend="python",
            config={"callable": "toy_plugin:keyword_model"},
        )
        p.settings.eval_chunk_size = 4
        runner = Runner(p.settings, p.plugins, db=p.db)
        runner.progress = publisher(p.events)
        assert await runner.run(queued[0].id) == "DONE"
        got = [r["evaluationUpdated"] for r in await reading]
        assert not withheld.done()  # a stranger never hears of an unpublished model's evaluations
        withheld.cancel()
    evaluation = gid("Evaluation", queued[0].id)
    assert {g["evaluation"]["id"] for g in got} == {evaluation}
    # One update per change (queued, started, 2 chunks of 4 of 6 items, done), each read as it is when it is sent:
    # a fast evaluation may be further along than the change that announced it, never behind.
    order = {"QUEUED": 0, "RUNNING": 1, "DONE": 2}
    states = [(order[g["evaluation"]["status"]], g["evaluation"]["progress"]) for g in got]
    assert states == sorted(states) and states[-1] == (2, 1.0)
    assert got[-1]["evaluation"]["model"]["id"] == gid("Model", model.id)
    assert got[0]["evaluation"]["dataset"]["name"] == "r1-test"

    # Subscribing later sends the state now first; resuming from the first cursor sends what changed since.
    async with served.subscriber(builder) as session:
        resumed = await _read(session, EVALUATIONS, {"t": "toy", "a": got[0]["cursor"]}, 1)
    assert resumed[0]["evaluationUpdated"]["evaluation"] == got[-1]["evaluation"]


async def test_a_subscriber_gets_the_queued_and_running_ones_first(served):
    p = served.p
    await _scoring_set(served)
    _, builder_id = await served.user("builder8")
    model, queued = await submissions.submit_model(
        p,
        Actor(builder_id, "builder8", False),
        task_code="toy",
        name="public",
        backend="python",
        config={"callable": "toy_plugin:keyword_model"},
        published=True,
    )
    async with served.subscriber() as anonymous:  # published: anyone who can see the task
        got = await _read(anonymous, EVALUATIONS, {"t": "toy"}, 1)
    assert got[0]["evaluationUpdated"]["evaluation"]["id"] == gid("Evaluation", queued[0].id)
    assert got[0]["evaluationUpdated"]["evaluation"]["status"] == "QUEUED"


async def test_training_jobs_and_runs_are_for_owners_with_state_then_changes(served):
    p = served.p
    owner, owner_id = await served.user("owner7", admin=True)
    someone, _ = await served.user("someone7")
    task_id = await _task_id(p)
    async with p.db.write() as s:
        job = TrainingJob(task_id=task_id, user_id=owner_id, recipe="words", hyperparameters={}, seed=1, dataset_ids=[])
        s.add(job)
        round_id = await s.scalar(select(Round.id).where(Round.task_id == task_id).order_by(Round.number.desc()))
        run = AdversaryRun(task_id=task_id, round_id=round_id, adversary="toy-synonyms", budget=3)
        s.add(run)
        await s.flush()
        job_id, run_id = job.id, run.id

    for document in (JOBS, RUNS):
        async with served.subscriber(someone) as session:
            with pytest.raises(TransportQueryError, match="Only owners of toy and admins"):
                await _read(session, document, {"t": "toy"}, 1, within=5)
        async with served.subscriber() as session:
            with pytest.raises(TransportQueryError, match="Sign in"):
                await _read(session, document, {"t": "toy"}, 1, within=5)

    async with served.subscriber(owner) as session:
        jobs = asyncio.create_task(_read(session, JOBS, {"t": "toy"}, 2))
        runs = asyncio.create_task(_read(session, RUNS, {"t": "toy"}, 2))
        await _started(jobs, p.events, f"trainingJobUpdated:#{task_id}")
        await _started(runs, p.events, f"adversaryRunUpdated:#{task_id}")
        await served.gql(CANCEL_JOB, {"id": gid("TrainingJob", job_id)}, owner)
        await served.gql(CANCEL_RUN, {"id": gid("AdversaryRun", run_id)}, owner)
        got_jobs = [r["trainingJobUpdated"]["job"] for r in await jobs]
        got_runs = [r["adversaryRunUpdated"]["run"] for r in await runs]
    assert [(j["id"], j["status"]) for j in got_jobs] == [
        (gid("TrainingJob", job_id), "QUEUED"),
        (gid("TrainingJob", job_id), "CANCELLED"),
    ]
    assert [(r["id"], r["status"]) for r in got_runs] == [
        (gid("AdversaryRun", run_id), "QUEUED"),
        (gid("AdversaryRun", run_id), "CANCELLED"),
    ]


async def test_a_bad_cursor_is_refused_with_what_to_do(served):
    async with served.subscriber() as session:
        with pytest.raises(TransportQueryError, match="not an update cursor"):
            await _read(session, EVALUATIONS, {"t": "toy", "a": "bm9wZQ=="}, 1, within=5)
    now = utcnow()
    assert subscription_service.read_update_cursor(subscription_service.update_cursor(now)) == now
