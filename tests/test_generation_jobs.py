"""Generation runs as jobs, on SQLite and PostgreSQL with a real Redis broker: a run that the API process accepts is
a ``generate`` message that a worker (its own Platform, as ``dynaforge worker`` has) takes and runs to its end; the
API process runs nothing itself. A message delivered twice runs the run once, a run cancelled while queued is never
run, and a queued run that a stopped process left behind is sent again at the next start (``recover``)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from support import REDIS_URL, make_settings, make_user, service_missing
from test_adversaries_api import AdversarialToy, AdversaryPlugin
from toy_plugin import ToyPlugin

from dynaforge.db.models import AdversaryRun, Example
from dynaforge.inference.client import LocalInferenceClient
from dynaforge.jobs import GenerationHost, Jobs
from dynaforge.plugins import Plugins
from dynaforge.services import adversaries as adversary_service
from dynaforge.services import contexts as context_service
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def redis_url():
    try:
        import redis

        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except Exception as exc:  # noqa: BLE001 - any failure means no usable server
        service_missing("Redis", f"{type(exc).__name__}: {exc}")
    return REDIS_URL


def _platform(url: str, settings) -> Platform:
    plugins = Plugins(allowlist=set(), extra=[ToyPlugin(), AdversaryPlugin()])
    return Platform.create(
        settings, plugins=plugins, inference=LocalInferenceClient(plugins.registry.backends, timeout_s=5.0)
    )


async def _ended(p: Platform, run_id: int, timeout_s: float = 30.0) -> AdversaryRun:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        async with p.db.session() as s:
            run = await s.get(AdversaryRun, run_id)
        if run is not None and run.status not in ("QUEUED", "RUNNING"):
            return run
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"run {run_id} still {run.status if run else 'missing'}")
        await asyncio.sleep(0.1)


async def test_a_worker_takes_generation_runs_from_the_broker(live_platform, redis_url):
    api = live_platform
    settings = make_settings(
        api.settings.database_url, broker_url=redis_url, broker_namespace=f"dynaforge-test-{uuid.uuid4().hex[:8]}"
    )
    api.settings = settings
    api.plugins.register(AdversaryPlugin(), "adversarial_toy")
    await task_service.sync_registered_tasks(api)
    await context_service.add_contexts(api, Actor.system(), "toy-adv", list(AdversarialToy.demo_contexts))
    owner = await make_user(api, "olga", admin=True)

    async def worker_platform() -> Platform:  # what GenerationHost makes in a `dynaforge worker` process
        return _platform(settings.database_url, settings)

    producer = Jobs(settings)
    consumer = Jobs(settings, generation=GenerationHost(settings, make_platform=worker_platform))
    producer.broker.flush_all()
    api.jobs = producer
    try:
        # Cancelled while queued (no worker yet): never run.
        cancelled = await adversary_service.generate(api, owner, task_code="toy-adv", adversary="toy-templates",
                                                     budget=5, seed=1)  # fmt: skip
        await adversary_service.cancel_run(api, owner, cancelled.id)
        run = await adversary_service.generate(
            api, owner, task_code="toy-adv", adversary="toy-templates", budget=10, seed=7
        )
        assert api.adversary_runs == {}  # nothing runs in the API process
        producer.generate(run.id)  # the same message twice: the run is taken once
        consumer.start_worker()
        done = await _ended(api, run.id)
        assert (done.status, done.items_total, done.items_done, done.candidates, done.queries) == ("DONE", 2, 2, 2, 4)
        assert (await _ended(api, cancelled.id)).status == "CANCELLED"

        # A queued run that a stopped API process never sent: the next start sends it.
        view = await task_service.get_task(api, Actor.system(), "toy-adv")
        async with api.db.write() as s:
            left = AdversaryRun(task_id=view.row.id, round_id=done.round_id, adversary="toy-templates", budget=4,
                                seed=3, requested_by=owner.user_id)  # fmt: skip
            s.add(left)
            await s.flush()
            left_id = left.id
        assert await adversary_service.recover(api) == 0
        assert (await _ended(api, left_id)).status == "DONE"
    finally:
        consumer.stop()
        producer.stop()
        api.jobs = None

    async with api.db.session() as s:
        from sqlmodel import select

        machine = list(await s.scalars(select(Example).where(Example.source == "MACHINE")))
    # the first run's two candidates; the recovered run's are copies of them, never stored twice
    assert sorted(e.fields["text"] for e in machine) == ["the food was nice", "the weather was nice"]
    assert all(e.adversary == "toy-templates" and e.fooled for e in machine)
