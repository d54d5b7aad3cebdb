"""Evaluation jobs: the runner (metrics, chunks, resumption, robustness), a child process killed mid-job, and the
dramatiq actor on the StubBroker and on a real Redis broker. On SQLite and PostgreSQL.

The data set: twelve accepted examples of the toy task, all in one scoring set, plus its ``uppercase`` copy. The
model says 'good' exactly when the text has the lower-case word 'good' (``eval_models.keyword_toy``), so:
item i has 'good' when i is even; its gold label is good when i % 4 is 0 or 1. Right on i % 4 in {0, 3}: accuracy
6/12. On the upper-cased copy it always says 'bad', so the six items it called good change: consistency 6/12.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import func, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from support import REDIS_URL, make_user, runner_pids, serve_in_thread, service_missing, toy_process_env

from dynaforge.api.types.results import hardware_of
from dynaforge.db.models import (
    DatasetAccess,
    DatasetItem,
    Evaluation,
    EvaluationChunk,
    Example,
    ModelRow,
    TrainingJob,
)
from dynaforge.db.models import EvaluationStatus as E
from dynaforge.errors import AlreadyExists, Forbidden, InvalidInput, NotFound
from dynaforge.jobs import TIMED_OUT, run_in_child
from dynaforge.services import datasets, examples, submissions, validation
from dynaforge.services.actor import Actor
from dynaforge.services.evaluation_runner import Runner

MODEL = {"callable": "eval_models:keyword_toy"}
SLOW = {"callable": "eval_models:slow_toy"}
ONE_SET = (("test", 1.0, DatasetAccess.SCORING),)


@pytest.fixture
async def scoring(live_platform, monkeypatch):
    p = live_platform
    p.settings.examples_per_minute = 1000
    p.settings.eval_chunk_size = 5
    p.settings.eval_bootstrap_resamples = 200
    monkeypatch.setattr(p.plugins.registry.tasks["toy"], "perturbations", ("uppercase",))
    admin, author = await make_user(p, "admin1", admin=True), await make_user(p, "author1")
    for i in range(12):
        text = f"{'good' if i % 2 == 0 else 'fine'} item {i}"
        outcome = await examples.submit(
            p, author, task_code="toy", fields={"text": text, "label": "good" if i % 4 in (0, 1) else "bad"}
        )
        await validation.validate(p, admin, outcome.example.id, "CORRECT")
    made = await datasets.build_from_round(p, admin, "toy", 1, splits=ONE_SET)
    assert [d.name for d in made] == ["r1-test", "r1-test~uppercase"]
    return {"p": p, "builder": await make_user(p, "builder1"), "datasets": made}


async def _submit(p, builder, name: str, config=MODEL, backend="python") -> tuple[ModelRow, dict[str, int]]:
    model, queued = await submissions.submit_model(
        p, builder, task_code="toy", name=name, backend=backend, config=config, published=True
    )
    names = {e.dataset_id: e.id for e in queued}
    async with p.db.session() as s:
        from dynaforge.db.models import Dataset

        rows = {d.id: d.name for d in await s.scalars(select(Dataset))}
    return model, {rows[d]: e for d, e in names.items()}


async def _rows(p, evaluation_id: int) -> tuple[Evaluation, list[list]]:
    async with p.db.session() as s:
        evaluation = await s.get(Evaluation, evaluation_id)
        chunks = list(
            await s.scalars(
                select(EvaluationChunk)
                .where(EvaluationChunk.evaluation_id == evaluation_id)
                .order_by(EvaluationChunk.chunk)
            )
        )
    return evaluation, [c.outputs for c in chunks]


async def test_runner_scores_chunks_and_robustness(scoring):
    p = scoring["p"]
    model, evaluations = await _submit(p, scoring["builder"], "keywords")
    runner = Runner(p.settings, p.plugins)
    try:
        assert await runner.run(evaluations["r1-test"]) == E.DONE
        assert await runner.run(evaluations["r1-test~uppercase"]) == E.DONE
    finally:
        await runner.close()
    evaluation, chunks = await _rows(p, evaluations["r1-test"])
    assert [len(c) for c in chunks] == [5, 5, 2]  # 12 items in chunks of 5
    assert evaluation.status == E.DONE and evaluation.progress == 1.0 and evaluation.attempts == 1
    # a scoring set: its public part's figures shown, the private part's held; together, the whole set's
    assert (evaluation.details["n"], evaluation.details["held"]["details"]["n"]) == (6, 6)
    assert _whole(evaluation, "accuracy") == pytest.approx(0.5)
    assert evaluation.metrics["robustness"] == pytest.approx(0.5) and "fairness" not in evaluation.metrics
    low, high = evaluation.details["intervals"]["accuracy"]
    assert 0.0 <= low <= evaluation.metrics["accuracy"] <= high <= 1.0
    # Every task metric has its interval around its value, not the principal one alone.
    task_metrics = set(evaluation.metrics) - {"robustness", "fairness"}
    assert len(task_metrics) > 1 and set(evaluation.details["intervals"]) == task_metrics
    for name in task_metrics:
        low, high = evaluation.details["intervals"][name]
        assert low <= evaluation.metrics[name] <= high, name
    assert evaluation.throughput > 0 and evaluation.memory_mb is not None and evaluation.memory_mb >= 0
    # What it ran on, beside the figures measured there (no host name: nothing that locates the machine).
    machine = hardware_of(evaluation)
    assert machine is not None and machine.cores == os.cpu_count() and machine.cpu and machine.accelerator is None
    assert set(evaluation.details["hardware"]) == {"cpu", "cores", "memory_gb", "machine", "accelerator"}
    assert evaluation.details["perturbations"]["uppercase"]["consistency"] == pytest.approx(0.5)
    # "still fooled": the fooling rate on the items whose example fooled round 1's target when it was written, a
    # recount from the examples themselves, in each part
    async with p.db.session() as s:
        fooled_ids = set(await s.scalars(select(Example.id).where(Example.fooled.is_(True))))
        items = list(
            await s.scalars(
                select(DatasetItem)
                .where(DatasetItem.dataset_id == evaluation.dataset_id)
                .order_by(DatasetItem.position)
            )
        )
    written = [i for i in items if i.example_id in fooled_ids]
    assert 0 < len(written) < len(items)  # some of the round's examples fooled the target, some did not
    still, held_still = evaluation.details["still_fooled"], evaluation.details["held"]["details"]["still_fooled"]
    assert still["n"] + held_still["n"] == len(written)
    assert still["interval"][0] <= still["rate"] <= still["interval"][1]
    copy, _ = await _rows(p, evaluations["r1-test~uppercase"])
    # upper-cased, the model says bad everywhere: right on the six 'bad' items
    assert _whole(copy, "accuracy") == pytest.approx(0.5)
    async with p.db.session() as s:
        assert (await s.get(ModelRow, model.id)).status == "DONE"


def _whole(evaluation, metric: str) -> float:
    """A count-based metric on the whole set, from the public part's figures and the private part's held ones."""
    held = evaluation.details["held"]
    public_n, held_n = evaluation.details["n"], held["details"]["n"]
    return (evaluation.metrics[metric] * public_n + held["metrics"][metric] * held_n) / (public_n + held_n)


SECRET = "SECRET-7f3a internal admin console"


def _internal_service(hits: list[str], status: int = 200) -> Starlette:
    """A service on loopback that trusts its callers: it answers every request with a secret."""

    async def answer(request: Request) -> PlainTextResponse:
        hits.append(request.url.path)
        return PlainTextResponse(SECRET, status_code=status)

    return Starlette(routes=[Route("/{path:path}", answer, methods=["GET", "POST"])])


async def _evaluate(p, evaluation_id: int, tmp: Path, monkeypatch) -> Evaluation:
    """The evaluation run as the job runs it: in a child process with the server's settings."""
    for key, value in _child_env(p, tmp).items():
        monkeypatch.setenv(key, value)
    p.settings.load_plugins = "toy"
    await asyncio.to_thread(run_in_child, p.settings, evaluation_id)
    evaluation, _ = await _rows(p, evaluation_id)
    return evaluation


async def test_an_http_model_on_an_internal_address_is_never_called(scoring, tmp_path, monkeypatch):
    """The SSRF a model builder could make: a model "server" that is a loopback service. Without an operator's
    allowlist the evaluation fails before any request, and its error names neither the address nor an answer."""
    p, hits = scoring["p"], []
    with serve_in_thread(_internal_service(hits)) as url:
        allowed, p.settings.outbound_allow = p.settings.outbound_allow, ""  # what a server has unless allowlisted
        with pytest.raises(InvalidInput) as refused:  # refused when submitted, before anything is queued
            await _submit(p, scoring["builder"], "probe", {"url": url}, backend="http")
        assert refused.value.field_errors[0].field == "config.url" and refused.value.field_errors[0].rule == "internal"
        # Submitted while allowed, run after the operator closed the network: refused again when it loads.
        p.settings.outbound_allow = allowed
        _, evaluations = await _submit(p, scoring["builder"], "probe", {"url": url}, backend="http")
        p.settings.outbound_allow = ""
        evaluation = await _evaluate(p, evaluations["r1-test"], tmp_path, monkeypatch)
    assert evaluation.status == E.FAILED and hits == []
    assert "outbound policy refuses the model server's url" in evaluation.error
    assert "internal address" in evaluation.error and "DYNAFORGE_OUTBOUND_ALLOW" in evaluation.error
    for shown in (evaluation.error, evaluation.log_tail or ""):
        assert "127.0.0.1" not in shown and SECRET not in shown


async def test_an_http_models_error_never_shows_what_the_server_answered(scoring, tmp_path, monkeypatch):
    """An allowlisted server that fails: the evaluation's error says the status and the size, never the body."""
    p, hits = scoring["p"], []
    with serve_in_thread(_internal_service(hits, status=500)) as url:
        _, evaluations = await _submit(p, scoring["builder"], "failing", {"url": url}, backend="http")
        evaluation = await _evaluate(p, evaluations["r1-test"], tmp_path, monkeypatch)
    assert evaluation.status == E.FAILED and hits == ["/health"]
    assert f"GET /health answered 500 with a {len(SECRET)}-byte body" in evaluation.error
    assert url not in evaluation.error  # the log tail may name it: only those who may see the config see the log
    for shown in (evaluation.error, evaluation.log_tail or ""):
        assert SECRET not in shown


async def test_a_resumed_run_leaves_the_rows_of_a_clean_run(scoring):
    p, builder = scoring["p"], scoring["builder"]
    _, clean = await _submit(p, builder, "clean")
    _, resumed = await _submit(p, builder, "resumed")
    runner = Runner(p.settings, p.plugins)
    try:
        await runner.run(clean["r1-test"])
        assert await runner.run(resumed["r1-test"], stop_after_chunks=1) == E.RUNNING  # "killed" after one chunk
        partial, partial_chunks = await _rows(p, resumed["r1-test"])
        assert (
            partial.status == E.RUNNING
            and len(partial_chunks) == 1
            and partial.progress == pytest.approx(1 / 3, abs=1e-3)
        )
        assert await runner.run(resumed["r1-test"]) == E.DONE
        assert await runner.run(resumed["r1-test"]) == E.DONE  # a message delivered twice changes nothing
    finally:
        await runner.close()
    a, a_chunks = await _rows(p, clean["r1-test"])
    b, b_chunks = await _rows(p, resumed["r1-test"])
    assert a_chunks == b_chunks and a.metrics == b.metrics and a.details == b.details
    assert b.attempts == 2  # the repeated delivery found it done and did not start again


async def test_a_model_that_cannot_load_fails_with_its_error_and_log(scoring, tmp_path, monkeypatch):
    p = scoring["p"]
    _, evaluations = await _submit(p, scoring["builder"], "broken", {"callable": "eval_models:no_such_model"})
    for key, value in _child_env(p, tmp_path).items():
        monkeypatch.setenv(key, value)
    p.settings.load_plugins = "toy"
    events: list[dict] = []
    status = await asyncio.to_thread(run_in_child, p.settings, evaluations["r1-test"], on_progress=events.append)
    assert status == 1
    evaluation, _ = await _rows(p, evaluations["r1-test"])
    assert evaluation.status == E.FAILED and "no_such_model" in evaluation.error
    assert [(e["status"], e["progress"]) for e in events] == [(E.RUNNING, 0.0), (E.FAILED, 0.0)]
    assert "no_such_model" in events[-1]["error"]
    assert "evaluation" in evaluation.log_tail and "Traceback" in evaluation.log_tail


def _child_env(p, tmp: Path) -> dict[str, str]:
    """The toy plugin as an installed entry point, for processes the test starts."""
    return toy_process_env(
        tmp,
        p.settings.database_url,
        eval_chunk_size=str(p.settings.eval_chunk_size),
        eval_bootstrap_resamples=str(p.settings.eval_bootstrap_resamples),
    )


async def _child(p, evaluation_id: int) -> int:
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"dynaforge-toy-{uuid.uuid4().hex[:8]}"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "dynaforge.services.evaluation_runner",
        str(evaluation_id),
        env=_child_env(p, tmp),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return await asyncio.wait_for(process.wait(), timeout=120)


async def test_a_worker_killed_mid_job_resumes_without_duplicates(scoring, tmp_path):
    p, builder = scoring["p"], scoring["builder"]
    _, clean = await _submit(p, builder, "clean", MODEL)
    _, killed = await _submit(p, builder, "killed", SLOW)
    runner = Runner(p.settings, p.plugins)
    try:
        await runner.run(clean["r1-test"])
    finally:
        await runner.close()
    process = subprocess.Popen(
        [sys.executable, "-m", "dynaforge.services.evaluation_runner", str(killed["r1-test"])],
        env=_child_env(p, tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):  # until the first chunk is stored, then kill -9 before the last
            async with p.db.session() as s:
                stored = await s.scalar(
                    select(func.count())
                    .select_from(EvaluationChunk)
                    .where(EvaluationChunk.evaluation_id == killed["r1-test"])
                )
            if stored >= 1:
                break
            await asyncio.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    partial, partial_chunks = await _rows(p, killed["r1-test"])
    assert partial.status == E.RUNNING and 1 <= len(partial_chunks) < 3
    process = subprocess.run(
        [sys.executable, "-m", "dynaforge.services.evaluation_runner", str(killed["r1-test"])],
        env=_child_env(p, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == 0, process.stderr[-2000:]
    a, a_chunks = await _rows(p, clean["r1-test"])
    b, b_chunks = await _rows(p, killed["r1-test"])
    assert a_chunks == b_chunks and a.metrics == b.metrics and a.details["intervals"] == b.details["intervals"]
    assert b.status == E.DONE and b.attempts == 2


async def _wait_done(p, evaluation_ids, timeout_s: float = 90.0) -> None:
    for _ in range(int(timeout_s / 0.1)):
        async with p.db.session() as s:
            statuses = list(await s.scalars(select(Evaluation.status).where(Evaluation.id.in_(evaluation_ids))))
        if all(st in (E.DONE, E.FAILED) for st in statuses):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"evaluations still {statuses}")


@pytest.fixture(params=["stub", "redis"])
def broker_url(request):
    if request.param == "stub":
        return None
    url = REDIS_URL
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except Exception as exc:  # noqa: BLE001 - any failure means no usable server
        service_missing("Redis", f"{type(exc).__name__}: {exc}")
    return url


async def test_the_evaluate_actor_runs_queued_evaluations(scoring, broker_url, tmp_path, monkeypatch):
    """Submitting enqueues one message per evaluation; a worker (in-process on the StubBroker, a separate consumer
    on Redis) runs each in a child process, and its progress reaches a subscriber of the event bus (in memory, or
    through Redis pub/sub from the consumer's bus to another bus object)."""
    from dynaforge.events import InMemoryEventBus, RedisEventBus
    from dynaforge.jobs import Jobs

    p = scoring["p"]
    for key, value in _child_env(p, tmp_path).items():
        monkeypatch.setenv(key, value)
    p.settings.broker_url = broker_url
    # Queues of this test's own: another test's worker on the same Redis must not take its messages (nor its
    # flush_all empty theirs).
    p.settings.broker_namespace = f"dynaforge-test-{uuid.uuid4().hex[:8]}"
    p.settings.load_plugins = "toy"
    if broker_url:
        prefix = f"dynaforge-test-{uuid.uuid4().hex[:8]}:"
        worker_bus, listener = RedisEventBus(broker_url, prefix=prefix), RedisEventBus(broker_url, prefix=prefix)
    else:
        worker_bus = listener = InMemoryEventBus()
    await listener.start()
    producer = Jobs(p.settings, events=worker_bus)
    consumer = producer if producer.embedded else Jobs(p.settings, events=worker_bus)
    if broker_url:
        producer.broker.flush_all()
    model, evaluations = await _submit(p, scoring["builder"], "queued")  # no jobs yet: stored, not sent
    events: list[dict] = []

    async def listen():
        async for event in listener.subscribe(f"evaluationProgress:{model.id}"):
            events.append(event)
            if sum(e["status"] == E.DONE for e in events) == len(evaluations):
                return

    listening = asyncio.create_task(listen())
    await asyncio.sleep(0.3)  # the subscription is registered (and, on Redis, the pattern subscribed)
    p.jobs = producer
    try:
        consumer.start_worker()
        assert await submissions.requeue_unfinished(p, running_too=False) == len(evaluations)
        await _wait_done(p, list(evaluations.values()))
        await asyncio.wait_for(listening, timeout=20)
    finally:
        listening.cancel()
        consumer.stop()
        if consumer is not producer:
            producer.stop()
        p.jobs = None
        await listener.close()
        if worker_bus is not listener:
            await worker_bus.close()
    evaluation, _ = await _rows(p, evaluations["r1-test"])
    assert evaluation.status == E.DONE and evaluation.metrics["accuracy"] == pytest.approx(0.5)
    async with p.db.session() as s:
        assert (await s.get(ModelRow, model.id)).status == "DONE"
    for name, evaluation_id in evaluations.items():  # 12 items in chunks of 5: three chunks each
        seen = [(e["status"], e["progress"]) for e in events if e["evaluation_id"] == evaluation_id]
        assert seen == [(E.RUNNING, 0.0), (E.RUNNING, 0.3333), (E.RUNNING, 0.6667), (E.RUNNING, 1.0), (E.DONE, 1.0)]
        assert {e["dataset_name"] for e in events if e["evaluation_id"] == evaluation_id} == {name}


# --------------------------------------------------------------------------- owners' own perturbed copies


def _copy_file(*rows: dict) -> list[tuple[str, dict]]:
    return [(f"line {n}", dict(row)) for n, row in enumerate(rows, 1)]


async def _run_all(p, ids) -> None:
    runner = Runner(p.settings, p.plugins)
    try:
        for evaluation_id in ids:
            assert await runner.run(evaluation_id) == E.DONE
    finally:
        await runner.close()


async def _queued_for(p, model_id: int) -> dict[str, int]:
    from dynaforge.db.models import Dataset

    async with p.db.session() as s:
        rows = (
            await s.execute(
                select(Dataset.name, Evaluation.id, Evaluation.status)
                .join(Evaluation, Evaluation.dataset_id == Dataset.id)
                .where(Evaluation.model_id == model_id)
            )
        ).all()
    return {name: evaluation_id for name, evaluation_id, status in rows if status == E.QUEUED}


async def test_an_owner_copy_is_evaluated_and_counts_to_its_kind(scoring):
    """A fairness copy of the owner's (items equal to their originals: consistency 1) is queued for the model
    already on the board and adds fairness; replacing the platform's uppercase copy by an unchanged one takes the
    stale robustness away until the new copy is scored, then gives 1.0."""
    p, owner = scoring["p"], Actor.system()
    model, evaluations = await _submit(p, scoring["builder"], "keywords")
    await _run_all(p, [evaluations["r1-test"], evaluations["r1-test~uppercase"]])
    parent = scoring["datasets"][0]
    originals = (await datasets.items(p, owner, parent.id, first=100)).items
    same = [{"original_position": i.position, "text": i.fields["text"]} for i in originals]

    copy = await datasets.attach_perturbed_copy(p, owner, parent.id, "names-owner", "fairness", _copy_file(*same))
    assert (copy.name, copy.source, copy.perturbation_kind, copy.size, copy.parent_id) == (
        "r1-test~names-owner",
        "upload",
        "fairness",
        12,
        parent.id,
    )
    stored = (await datasets.items(p, owner, copy.id, first=100)).items
    assert [i.original_position for i in stored] == list(range(12))
    assert [i.fields["label"] for i in stored] == [i.fields["label"] for i in originals]  # targets copied over
    async with p.db.session() as s:
        assert (await s.get(ModelRow, model.id)).status == "EVALUATING"
    queued = await _queued_for(p, model.id)
    assert list(queued) == ["r1-test~names-owner"]
    await _run_all(p, queued.values())
    evaluation, _ = await _rows(p, evaluations["r1-test"])
    assert evaluation.metrics["fairness"] == pytest.approx(1.0)
    assert evaluation.metrics["robustness"] == pytest.approx(0.5)
    assert evaluation.details["perturbations"]["names-owner"]["kind"] == "fairness"

    with pytest.raises(AlreadyExists, match="replace"):
        await datasets.attach_perturbed_copy(p, owner, parent.id, "uppercase", "robustness", _copy_file(*same))
    await datasets.attach_perturbed_copy(
        p, owner, parent.id, "uppercase", "robustness", _copy_file(*same), replace=True
    )
    evaluation, _ = await _rows(p, evaluations["r1-test"])
    assert "robustness" not in evaluation.metrics and evaluation.metrics["fairness"] == pytest.approx(1.0)
    queued = await _queued_for(p, model.id)
    assert list(queued) == ["r1-test~uppercase"] and queued["r1-test~uppercase"] != evaluations["r1-test~uppercase"]
    await _run_all(p, queued.values())
    evaluation, _ = await _rows(p, evaluations["r1-test"])
    assert evaluation.metrics["robustness"] == pytest.approx(1.0)
    async with p.db.session() as s:
        assert (await s.get(ModelRow, model.id)).status == "DONE"
        assert await s.get(Evaluation, evaluations["r1-test~uppercase"]) is None  # went with the replaced copy


async def test_owner_copies_are_checked_all_or_nothing(scoring):
    p, parent = scoring["p"], scoring["datasets"][0]
    owner, stranger = Actor.system(), scoring["builder"]
    good = {"original_position": 0, "text": "GOOD ITEM 0"}
    with pytest.raises(Forbidden):
        await datasets.attach_perturbed_copy(p, stranger, parent.id, "mine", "robustness", _copy_file(good))
    with pytest.raises(InvalidInput) as caught:
        await datasets.attach_perturbed_copy(
            p,
            owner,
            parent.id,
            "mine",
            "robustness",
            _copy_file(
                good,
                {"original_position": 12, "text": "x y z"},
                {"original_position": "0", "text": "a b c"},
                {"original_position": 1, "text": "fine", "label": "maybe"},
                {"text": "no position"},
            ),
        )
    fields = [e.field for e in caught.value.field_errors]
    assert fields == [
        "line 2.original_position",
        "line 3.original_position",
        "line 4.label",
        "line 5.original_position",
    ]
    with pytest.raises(InvalidInput, match="kind"):
        await datasets.attach_perturbed_copy(p, owner, parent.id, "mine", "speed", _copy_file(good))
    with pytest.raises(InvalidInput, match="itself a perturbed copy"):
        await datasets.attach_perturbed_copy(
            p, owner, scoring["datasets"][1].id, "mine", "robustness", _copy_file(good)
        )
    with pytest.raises(InvalidInput, match="perturbation"):
        await datasets.attach_perturbed_copy(p, owner, parent.id, "Not A Name", "robustness", _copy_file(good))
    with pytest.raises(NotFound):
        await datasets.attach_perturbed_copy(p, owner, 10_000, "mine", "robustness", _copy_file(good))
    async with p.db.session() as s:
        from dynaforge.db.models import Dataset

        assert await s.scalar(select(func.count()).select_from(Dataset)) == 2  # nothing was written


def test_copy_files_are_read_line_by_line_with_every_problem_named():
    import io

    content = b'{"original_position": 0, "text": "a"}\n\n[1]\n{broken\n\xff\n'
    with pytest.raises(InvalidInput) as caught:
        datasets.read_jsonl(io.BytesIO(content), 10_000)
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [
        ("line 3", "type"),
        ("line 4", "json"),
        ("line 5", "encoding"),
    ]
    assert datasets.read_jsonl(io.BytesIO(content.split(b"\n\n")[0]), 10_000) == [
        ("line 1", {"original_position": 0, "text": "a"})
    ]
    with pytest.raises(InvalidInput, match="larger than"):
        datasets.read_jsonl(io.BytesIO(content), 20)


async def test_a_new_scoring_set_queues_the_models_already_submitted(scoring):
    """Models are evaluated on every round: a scoring set added later (and its copies) is queued for each model
    with a backend, not for uploaded predictions, and never for a STANDARD set."""
    p, owner = scoring["p"], Actor.system()
    model, _ = await _submit(p, scoring["builder"], "keywords")
    records = [(f"line {i}", {"text": f"good extra {i}", "label": "good"}) for i in range(3)]
    at_submission = set(await _queued_for(p, model.id))
    assert at_submission == {"r1-test", "r1-test~uppercase"}
    await datasets.create_dataset(p, owner, "toy", "extra-standard", records, access=DatasetAccess.STANDARD)
    assert set(await _queued_for(p, model.id)) == at_submission
    made = await datasets.create_dataset(p, owner, "toy", "extra", records)
    assert set(await _queued_for(p, model.id)) == at_submission | {d.name for d in made}
    assert {d.name for d in made} == {"extra", "extra~uppercase"}


async def test_the_actor_retries_a_killed_job_and_fails_one_that_runs_too_long(scoring, tmp_path, monkeypatch):
    """A child killed by a signal recorded nothing: the actor raises so that dramatiq delivers it again, and the
    next delivery resumes to the same result. A child stopped at EVAL_TIMEOUT_S is recorded FAILED, saying why."""
    from dynaforge.jobs import ChildKilled, Jobs

    p = scoring["p"]
    for key, value in _child_env(p, tmp_path).items():
        monkeypatch.setenv(key, value)
    p.settings.load_plugins = "toy"
    jobs = Jobs(p.settings)
    _, killed = await _submit(p, scoring["builder"], "killed", SLOW)
    running = asyncio.create_task(asyncio.to_thread(jobs.evaluate, killed["r1-test"]))
    for _ in range(600):  # until the job has stored a chunk, then kill -9 its process
        async with p.db.session() as s:
            stored = await s.scalar(
                select(func.count())
                .select_from(EvaluationChunk)
                .where(EvaluationChunk.evaluation_id == killed["r1-test"])
            )
        if stored:
            break
        await asyncio.sleep(0.05)
    for pid in runner_pids():
        os.kill(pid, signal.SIGKILL)
    with pytest.raises(ChildKilled, match="killed"):
        await running
    await asyncio.to_thread(jobs.evaluate, killed["r1-test"])  # the redelivery
    evaluation, chunks = await _rows(p, killed["r1-test"])
    assert evaluation.status == E.DONE and len(chunks) == 3 and evaluation.attempts == 2
    assert evaluation.metrics["accuracy"] == pytest.approx(0.5)

    _, slow = await _submit(p, scoring["builder"], "too-slow", SLOW)
    p.settings.eval_timeout_s = 0.3
    await asyncio.to_thread(jobs.evaluate, slow["r1-test"])
    evaluation, _ = await _rows(p, slow["r1-test"])
    assert evaluation.status == E.FAILED and "EVAL_TIMEOUT_S" in evaluation.error
    jobs.stop()


async def test_the_model_runs_in_a_process_without_secrets_or_the_database(scoring, tmp_path, monkeypatch):
    """Through the job: the model's code runs in a process of its own whose environment holds neither the server's
    secrets nor the database URL (the job's runner writes the results), within the configured limits."""
    p = scoring["p"]
    monkeypatch.setenv("DYNAFORGE_SECRET_KEY", "s" * 40)
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token")
    p.settings.eval_memory_limit_mb, p.settings.eval_cpu_limit_s, p.settings.eval_open_files = 6000, 900, 200
    _, evaluations = await _submit(p, scoring["builder"], "probe", {"callable": "eval_models:report_confinement"})
    evaluation = await _evaluate(p, evaluations["r1-test"], tmp_path, monkeypatch)
    assert evaluation.status == E.DONE, evaluation.error
    _, chunks = await _rows(p, evaluations["r1-test"])
    report = chunks[0][0]["report"]
    assert "DYNAFORGE_DATABASE_URL" not in report["environment"] and "DYNAFORGE_SECRET_KEY" not in report["environment"]
    assert "HF_TOKEN" not in report["environment"] and p.settings.database_url not in report["values"]
    assert (report["memory"], report["cpu"], report["open_files"]) == (6000 * 1024**2, 900, 200)
    assert report["pid"] != os.getpid()
    assert evaluation.memory_mb is not None and evaluation.memory_mb >= 0 and evaluation.throughput > 0


async def test_a_model_past_its_memory_limit_fails_with_words_for_the_submitter(scoring, tmp_path, monkeypatch):
    p = scoring["p"]
    p.settings.eval_memory_limit_mb = 1024
    _, evaluations = await _submit(p, scoring["builder"], "hoarder", {"callable": "eval_models:hoard_memory"})
    evaluation = await _evaluate(p, evaluations["r1-test"], tmp_path, monkeypatch)
    assert evaluation.status == E.FAILED
    assert evaluation.error.startswith("MemoryError: the model ran out of memory (EVAL_MEMORY_LIMIT_MB)")


async def test_a_model_past_its_cpu_limit_is_stopped(scoring, tmp_path, monkeypatch):
    p = scoring["p"]
    p.settings.eval_cpu_limit_s = 2
    _, evaluations = await _submit(p, scoring["builder"], "spinner", {"callable": "eval_models:spin"})
    evaluation = await _evaluate(p, evaluations["r1-test"], tmp_path, monkeypatch)
    assert evaluation.status == E.FAILED
    assert evaluation.error == "the model's process was stopped: it used more CPU time than EVAL_CPU_LIMIT_S allows"


async def test_a_job_stopped_at_its_time_limit_takes_its_model_with_it(scoring, tmp_path, monkeypatch):
    """EVAL_TIMEOUT_S is a hard bound: the job's process group goes, the model's process included, and the
    evaluation says why."""
    p = scoring["p"]
    probe = tmp_path / "probe"
    probe.mkdir()
    monkeypatch.setenv("DYNAFORGE_EVAL_PROBE_DIR", str(probe))
    p.settings.eval_timeout_s = 15  # the job starts its model process well within it, even under the suite's load
    _, evaluations = await _submit(p, scoring["builder"], "hanger", {"callable": "eval_models:hang"})
    for key, value in _child_env(p, tmp_path).items():
        monkeypatch.setenv(key, value)
    p.settings.load_plugins = "toy"
    assert await asyncio.to_thread(run_in_child, p.settings, evaluations["r1-test"]) == TIMED_OUT
    pid = int((probe / "pid").read_text())
    for _ in range(100):
        if not _alive(pid):
            break
        await asyncio.sleep(0.05)
    assert not _alive(pid), f"the model's process {pid} outlived its job"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return not any(line.startswith("State:") and "Z" in line for line in fh)
    except FileNotFoundError:
        return False


# --------------------------------------------------------------------------- training beside evaluations

SLEEPY = {"callable": "eval_models:sleepy_toy"}


async def test_a_training_job_starts_while_evaluations_are_queued(scoring, broker_url, tmp_path, monkeypatch):
    """Training jobs have a worker of their own: with more evaluations queued than the worker has threads (three
    slow models, two threads), a training job queued after them runs at once instead of waiting for a free thread,
    on the StubBroker and on Redis."""
    from dynaforge.jobs import Jobs
    from dynaforge.services import training as training_service

    p = scoring["p"]
    env = _child_env(p, tmp_path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    # the job runs on this process's worker thread, which finds the toy task as an installed plugin
    for folder in env["PYTHONPATH"].split(os.pathsep):
        monkeypatch.syspath_prepend(folder)
    p.settings.broker_url = broker_url
    p.settings.broker_namespace = f"dynaforge-test-{uuid.uuid4().hex[:8]}"
    p.settings.load_plugins = "toy"
    p.settings.data_dir = tmp_path / "data"
    producer = Jobs(p.settings)
    consumer = producer if producer.embedded else Jobs(p.settings)
    if broker_url:
        producer.broker.flush_all()
    evaluation_ids: list[int] = []
    for name in ("sleepy-a", "sleepy-b", "sleepy-c"):
        _, queued = await _submit(p, scoring["builder"], name, SLEEPY)
        evaluation_ids += queued.values()
    admin = await make_user(p, "trainer", admin=True)
    rows = [(f"line {i}", {"text": f"{'good' if i % 2 else 'bad'} thing {i}", "label": "good" if i % 2 else "bad"})
            for i in range(12)]  # fmt: skip
    made = await datasets.create_dataset(p, Actor.system(), "toy", "train-words", rows, access=DatasetAccess.STANDARD)
    train_set = made[0]
    p.jobs = producer
    try:
        consumer.start_worker()  # two evaluation threads
        assert await submissions.requeue_unfinished(p, running_too=False) == len(evaluation_ids)
        job = await training_service.train_candidate(p, admin, task_code="toy", dataset_ids=[train_set.id])

        async def job_state() -> tuple[str, int]:
            async with p.db.session() as s:
                row = await s.get(TrainingJob, job.id)
                status = row.status if row.status != "FAILED" else f"FAILED: {row.error}"
                done = await s.scalar(
                    select(func.count())
                    .select_from(Evaluation)
                    .where(Evaluation.id.in_(evaluation_ids), Evaluation.status == E.DONE)
                )
            return status, int(done or 0)

        for _ in range(600):
            status, done = await job_state()
            if status != "QUEUED":
                break
            await asyncio.sleep(0.05)
        # it started while no model's evaluations had finished: both evaluation threads were still busy
        assert status != "QUEUED" and done == 0, (status, done)
        for _ in range(1200):
            status, done = await job_state()
            if (status == "SUCCEEDED" or status.startswith("FAILED")) and done == len(evaluation_ids):
                break
            await asyncio.sleep(0.1)
        assert status == "SUCCEEDED" and done == len(evaluation_ids), (status, done)
    finally:
        consumer.stop()
        if consumer is not producer:
            producer.stop()
        p.jobs = None
