"""Background jobs on dramatiq: one ``evaluate`` message per group of evaluations (a model on data sets: the sets
queued together, one model loaded once for all of them), one ``train`` message per training job, one
``deliver_webhook`` message per webhook delivery (retried with exponential backoff; see services/webhooks.py), one
``generate`` message per machine adversary's generation run where a broker carries them (the run then survives the
API process that accepted it; :class:`GenerationHost`), and a ``collect_artifacts`` message every
``ARTIFACT_GC_INTERVAL_S`` (sent by the server) that deletes the model artifacts nothing names.

The broker is Redis when ``DYNAFORGE_BROKER_URL`` is set (the API enqueues; ``dynaforge worker`` processes on any
machine consume), and otherwise dramatiq's in-memory ``StubBroker`` with a worker thread inside the server (the
embedded default). Either way the actor runs the evaluation in a child process
(``python -m dynaforge.services.evaluation_runner ID...``), which runs the model in a confined process of its own
(:mod:`dynaforge.evaluation.predictor`): torch never enters the API process, a crashing model takes nothing else
down, the model's code sees no secret, and the memory it reports is the model's own. The runner resumes from
stored chunks, so a message delivered twice (a worker killed before acknowledging, a restart re-enqueuing what was
queued) costs time, never a duplicate or missing score.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import dramatiq
from dramatiq.brokers.stub import StubBroker

from dynaforge.evaluation.predictor import network_isolation
from dynaforge.events import EventBus
from dynaforge.sandbox import scrubbed_environment
from dynaforge.services.announce import progress_topic, update_payload, update_topic
from dynaforge.services.evaluation_runner import LOST, PROGRESS_FD, Runner
from dynaforge.services.job_queue import BrokerUnavailable as BrokerUnavailable
from dynaforge.settings import Settings
from dynaforge.training.runner import TrainingKilled, run_job

log = logging.getLogger(__name__)

QUEUE = "evaluations"
ACTOR = "dynaforge.evaluate"
WEBHOOK_QUEUE = "webhooks"
WEBHOOK_ACTOR = "dynaforge.deliver_webhook"
TRAINING_QUEUE = "training"
#: Training jobs run one at a time, on a worker of their own beside the evaluations' (Jobs.start_worker).
TRAINING_THREADS = 1
TRAINING_ACTOR = "dynaforge.train"
MAINTENANCE_QUEUE = "maintenance"
COLLECT_ACTOR = "dynaforge.collect_artifacts"
GENERATION_QUEUE = "generation"
GENERATION_ACTOR = "dynaforge.generate"
#: Generation runs, one at a time per worker process, on a worker of their own (a run may take hours of target
#: queries; it must not hold up evaluations or training).
GENERATION_THREADS = 1
#: Webhook deliveries and maintenance (short jobs), on a worker of their own: a delivery never waits behind the
#: evaluations queued before it (a new scoring set queues one per model, each minutes long).
SHORT_JOB_THREADS = 1
#: How many times a training job whose process was killed is delivered again (each starts it over).
TRAINING_RETRIES = 2


#: How many times an evaluation whose process was killed is delivered again (each resumes from its stored chunks);
#: after that it stays RUNNING until the next server start re-sends it.
EVAL_RETRIES = 3


class ChildKilled(RuntimeError):
    """The evaluation's child process died from a signal before it could record anything."""


def make_broker(settings: Settings) -> dramatiq.Broker:
    if settings.broker_url:
        if not settings.broker_url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("DYNAFORGE_BROKER_URL must be a Redis URL (redis://host:6379/0)")
        from dramatiq.brokers.redis import RedisBroker

        return RedisBroker(url=settings.broker_url, namespace=settings.broker_namespace)
    return StubBroker()


def run_in_child(
    settings: Settings,
    evaluation_ids: int | list[int],
    *,
    extra_args: tuple[str, ...] = (),
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    side_by_side: int = 1,
) -> int:
    """Run the evaluations in a child process with this process's settings, each model loaded once
    (:meth:`Runner.run_many`); returns its exit status (1 when one of them failed, recorded on it).

    The child writes its progress events, one JSON object per line, to a pipe; a thread here hands each to
    ``on_progress`` (the event bus), so that progress reaches subscribers whichever process runs the job.
    ``side_by_side``: how many evaluations this process runs at once; the model gets its share of the cores as
    torch threads (``EVAL_THREADS`` overrides it).
    """
    # Model code runs in the child: the server's secrets stay here. It keeps the database URL, which it writes its
    # results with, and the job settings below.
    env = scrubbed_environment(keep={"DYNAFORGE_DATABASE_URL", PROGRESS_FD})
    env["DYNAFORGE_DATABASE_URL"] = settings.database_url
    env["DYNAFORGE_OUTBOUND_ALLOW"] = settings.outbound_allow  # the child's http backends check their URLs with it
    env["DYNAFORGE_DATA_DIR"] = str(settings.data_dir.absolute())  # the model store: uploaded models load from it
    if settings.model_store_url:
        # Uploaded models in a bucket: the child fetches them into the data directory's cache before the model's
        # process (which gets none of this) loads one, so it keeps the bucket's settings and credentials.
        env["DYNAFORGE_MODEL_STORE_URL"] = settings.model_store_url
        if settings.model_store_endpoint:
            env["DYNAFORGE_MODEL_STORE_ENDPOINT"] = settings.model_store_endpoint
        env.update({name: value for name, value in os.environ.items() if name.startswith("AWS_")})
    if settings.load_plugins is not None:
        env["DYNAFORGE_LOAD_PLUGINS"] = settings.load_plugins
    env["DYNAFORGE_EVAL_CHUNK_SIZE"] = str(settings.eval_chunk_size)
    env["DYNAFORGE_EVAL_BOOTSTRAP_RESAMPLES"] = str(settings.eval_bootstrap_resamples)
    env["DYNAFORGE_EVAL_TIMEOUT_S"] = str(settings.eval_timeout_s)
    env["DYNAFORGE_EVAL_MEMORY_LIMIT_MB"] = str(settings.eval_memory_limit_mb)
    env["DYNAFORGE_EVAL_CPU_LIMIT_S"] = str(settings.eval_cpu_limit_s)
    env["DYNAFORGE_EVAL_OPEN_FILES"] = str(settings.eval_open_files)
    env["DYNAFORGE_EVAL_ISOLATE_NETWORK"] = "true" if settings.eval_isolate_network else "false"
    threads = settings.eval_threads or max(1, (os.cpu_count() or 1) // max(1, side_by_side))
    env["DYNAFORGE_EVAL_THREADS"] = str(threads)
    ids = [evaluation_ids] if isinstance(evaluation_ids, int) else list(evaluation_ids)
    command = [sys.executable, "-m", "dynaforge.services.evaluation_runner", *map(str, ids), *extra_args]
    read_end, write_end = os.pipe()
    env[PROGRESS_FD] = str(write_end)
    try:
        # A session of its own: at the time limit the whole group goes, the model's process with the job's.
        child = subprocess.Popen(command, env=env, pass_fds=(write_end,), start_new_session=True)
    finally:
        os.close(write_end)
    relay = threading.Thread(target=_relay, args=(read_end, on_progress), name=f"progress-{ids[0]}", daemon=True)
    relay.start()
    try:
        status = child.wait(timeout=settings.eval_timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        log.error("evaluations %s ran past %s s and were stopped", ids, settings.eval_timeout_s)
        status = TIMED_OUT
    relay.join(timeout=5)
    return status


TIMED_OUT = 124


def _record_failure(settings: Settings, evaluation_ids: list[int], error: str) -> None:
    """Mark the evaluations that did not finish FAILED from the actor's thread (their child could not: it was
    stopped); a done one stays done."""

    async def record() -> None:
        runner = Runner(settings)
        try:
            for evaluation_id in evaluation_ids:
                await runner.fail(evaluation_id, error, "")
        finally:
            await runner.close()

    asyncio.run(record())


def _relay(read_end: int, on_progress: Callable[[dict[str, Any]], None] | None) -> None:
    with os.fdopen(read_end, "r", encoding="utf-8") as pipe:
        for line in pipe:
            if on_progress is None or not line.strip():
                continue
            try:
                on_progress(json.loads(line))
            except Exception:  # noqa: BLE001 - a lost progress event never fails the job
                log.warning("could not relay a progress event", exc_info=True)


def publisher(events: EventBus) -> Callable[[dict[str, Any]], None]:
    """Progress events to ``evaluationProgress:{model id}`` on the bus, from the actor's thread, and to the task's
    ``evaluationUpdated`` (the runner reports a change once it is stored)."""

    def publish(event: dict[str, Any]) -> None:
        events.publish_threadsafe(progress_topic(event["model_id"]), event)
        if event.get("task_id") is not None:
            task_id = int(event["task_id"])
            events.publish_threadsafe(
                update_topic("evaluationUpdated", task_id), update_payload(task_id, [int(event["evaluation_id"])])
            )

    return publish


@contextlib.contextmanager
def _without_twice_warning(broker: dramatiq.Broker) -> Iterator[None]:
    """A second Worker on a broker adds a second worker middleware, and dramatiq warns "a middleware of the same
    type twice"; each consumes only its own queues, so here that is expected and the warning is noise."""

    def drop(record: logging.LogRecord) -> bool:
        return "same type twice" not in record.getMessage()

    logger = broker.logger
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


class Jobs:  # a dynaforge.services.job_queue.JobQueue
    """The broker and its actors for one process."""

    def __init__(
        self,
        settings: Settings,
        broker: dramatiq.Broker | None = None,
        events: EventBus | None = None,
        generation: GenerationHost | None = None,
    ):
        self.settings = settings
        self.broker = broker or make_broker(settings)
        self.worker: dramatiq.Worker | None = None
        self.training_worker: dramatiq.Worker | None = None
        self.generation_worker: dramatiq.Worker | None = None
        self.short_worker: dramatiq.Worker | None = None
        #: where this process runs the generation runs it consumes (made on first use)
        self.generation = generation
        self.worker_threads = 1  # how many jobs this process's worker runs at once (start_worker)
        self.on_progress = None if events is None else publisher(events)
        self.publish = None if events is None else events.publish_threadsafe
        # With the in-process broker and its sweep (QUEUED_SWEEP_S), the evaluations this process sent, with when
        # (time.monotonic()): it sends none twice, and the sweep for the queued evaluations nobody sent
        # (services.evaluation_jobs.send_unsent) leaves these alone, and forgets them once they have started.
        self.sent: dict[int, float] = {}
        self._sent_lock = threading.Lock()

        def evaluate(evaluation_ids: int | list[int]) -> None:
            # A message of an earlier version names one evaluation.
            ids = [evaluation_ids] if isinstance(evaluation_ids, int) else list(evaluation_ids)
            status = run_in_child(self.settings, ids, on_progress=self.on_progress, side_by_side=self.worker_threads)
            if status == LOST:
                raise ChildKilled(f"evaluations {ids}: the model's process was killed")
            if status < 0:
                # Killed by a signal (the OOM killer, an operator, a crash): the runner recorded nothing, and the
                # stored chunks let the next attempt resume. Raising makes dramatiq deliver it again, with backoff.
                raise ChildKilled(f"evaluations {ids}: the job's process was killed (signal {-status})")
            if status == TIMED_OUT:
                _record_failure(
                    self.settings,
                    ids,
                    f"the evaluation ran past EVAL_TIMEOUT_S ({self.settings.eval_timeout_s:g} s) and was "
                    "stopped; a faster model or a smaller data set fits in it",
                )
                return
            if status != 0:
                # The runner recorded the failure (error and log tail) on the evaluation; retrying the same model on
                # the same data would fail the same way, so the message is done.
                log.warning("evaluations %s ended with status %s", ids, status)

        self.evaluate = dramatiq.actor(
            broker=self.broker,
            actor_name=ACTOR,
            queue_name=QUEUE,
            max_retries=EVAL_RETRIES,
            min_backoff=1_000,
            max_backoff=60_000,
            time_limit=int(settings.eval_timeout_s * 1000) + 60_000,
            retry_when=lambda retries, exc: isinstance(exc, ChildKilled) and retries < EVAL_RETRIES,
        )(evaluate)

        def deliver_webhook(delivery_id: int) -> None:
            from dynaforge.db.engine import Database
            from dynaforge.services.webhooks import attempt

            async def once() -> str:
                db = Database(self.settings.database_url)
                try:
                    return await attempt(
                        self.settings, db, delivery_id, max_attempts=self.settings.webhook_max_attempts
                    )
                finally:
                    await db.dispose()

            asyncio.run(once())  # DeliveryFailed propagates: dramatiq retries it with backoff

        def train(job_id: int) -> None:
            run_job(self.settings, job_id, enqueue=self.enqueue, publish=self.publish)

        self.train_job = dramatiq.actor(
            broker=self.broker,
            actor_name=TRAINING_ACTOR,
            queue_name=TRAINING_QUEUE,
            max_retries=TRAINING_RETRIES,
            min_backoff=1_000,
            max_backoff=60_000,
            time_limit=int(settings.training_timeout_s * 1000) + 120_000,
            retry_when=lambda retries, exc: isinstance(exc, TrainingKilled) and retries < TRAINING_RETRIES,
        )(train)

        self.deliver_webhook = dramatiq.actor(
            broker=self.broker,
            actor_name=WEBHOOK_ACTOR,
            queue_name=WEBHOOK_QUEUE,
            # the attempt itself marks the delivery FAILED at the last attempt; this bound is a backstop
            max_retries=settings.webhook_max_attempts,
            min_backoff=settings.webhook_min_backoff_ms,
            max_backoff=settings.webhook_max_backoff_ms,
            time_limit=60_000,
        )(deliver_webhook)

        def generate(run_id: int) -> None:
            if self.generation is None:
                self.generation = GenerationHost(self.settings)
            self.generation.run(run_id)

        self.generate_job = dramatiq.actor(
            broker=self.broker,
            actor_name=GENERATION_ACTOR,
            queue_name=GENERATION_QUEUE,
            max_retries=0,  # a run ends FAILED with its reason; one whose worker died is failed at the next start
            time_limit=GENERATION_TIME_LIMIT_MS,
        )(generate)

        def collect_artifacts() -> None:
            from dynaforge.services.actor import Actor
            from dynaforge.services.artifacts import collect_artifacts
            from dynaforge.services.platform import Platform

            async def once() -> None:
                platform = Platform.create(self.settings)
                try:
                    await collect_artifacts(platform, Actor.system())
                finally:
                    await platform.close()

            asyncio.run(once())

        self.collect_job = dramatiq.actor(
            broker=self.broker,
            actor_name=COLLECT_ACTOR,
            queue_name=MAINTENANCE_QUEUE,
            max_retries=0,  # the next period's message tries again
            time_limit=3_600_000,
        )(collect_artifacts)

    @property
    def embedded(self) -> bool:
        return isinstance(self.broker, StubBroker)

    def enqueue(self, evaluation_ids: Sequence[int] | Sequence[Sequence[int]]) -> None:
        """Send the evaluations: a flat list as one message (the runner loads each model once for its sets), a list
        of groups as one message per group (groups run side by side on several worker threads); raises
        BrokerUnavailable (with the cause) when the broker is down."""
        groups = [list(g) for g in evaluation_ids if not isinstance(g, int) and g]
        flat = [i for i in evaluation_ids if isinstance(i, int)]
        messages = self._not_sent_yet(([flat] if flat else []) + groups)
        try:
            _send(self.evaluate, messages, "the evaluations stay queued")
        except BrokerUnavailable:
            with self._sent_lock:  # not sent (or some, which a later send repeats harmlessly): they may go again
                for evaluation_id in (i for message in messages for i in message):
                    self.sent.pop(evaluation_id, None)
            raise

    def _not_sent_yet(self, messages: list[list[int]]) -> list[list[int]]:
        """The messages less the evaluations this process sent already; the rest are marked sent (a request and
        the sweep that race to send one evaluation send it once). Only where the sweep runs: a Redis broker's
        senders keep no record."""
        if not (self.embedded and self.settings.queued_sweep_s > 0):
            return messages
        with self._sent_lock:
            now, kept = time.monotonic(), []
            for message in messages:
                fresh = [i for i in dict.fromkeys(message) if i not in self.sent]
                self.sent.update(dict.fromkeys(fresh, now))
                if fresh:
                    kept.append(fresh)
            return kept

    def forget_sent(self, still_queued: set[int], before: float) -> None:
        """Forget the evaluations sent before ``before`` (``time.monotonic()``) that are no longer queued: they have
        started (or are gone), and an evaluation never returns to QUEUED."""
        with self._sent_lock:
            for evaluation_id in [i for i, at in self.sent.items() if at < before and i not in still_queued]:
                del self.sent[evaluation_id]

    def train(self, job_id: int) -> None:
        """One message for a training job; raises BrokerUnavailable when the broker is down."""
        _send(self.train_job, [job_id], "the training job stays queued")

    def send_webhooks(self, delivery_ids: list[int]) -> None:
        """One message per webhook delivery; raises BrokerUnavailable when the broker is down."""
        _send(self.deliver_webhook, delivery_ids, "the deliveries stay pending")

    def generate(self, run_id: int) -> None:
        """One message for a generation run; raises BrokerUnavailable when the broker is down."""
        _send(self.generate_job, [run_id], "the generation run stays queued")

    def collect_artifacts(self) -> None:
        """One message to delete the model artifacts nothing names (:mod:`dynaforge.services.artifacts`); raises
        BrokerUnavailable when the broker is down."""
        try:
            self.collect_job.send()
        except Exception as exc:
            raise BrokerUnavailable(
                f"the job broker is unreachable ({type(exc).__name__}: {exc}); artifacts are collected at the next "
                "period"
            ) from exc

    def start_worker(self, threads: int = 1) -> None:
        """Consume in this process (the embedded default): evaluations on ``threads`` threads (at least 2), and
        training jobs, webhook deliveries with maintenance, and (with a broker) generation runs each on a worker of
        their own. Says at start-up whether models under evaluation can be cut off from the network here."""
        if self.settings.eval_isolate_network:
            why = network_isolation()
            if why is None:
                log.info("evaluations: models that need no network run without one (network namespaces)")
            else:
                log.warning(
                    "evaluations: models run WITH the network: %s. Allow unprivileged user namespaces "
                    "(sysctl kernel.unprivileged_userns_clone=1, or a container runtime that permits unshare) to "
                    "cut them off",
                    why,
                )
        self.worker_threads = max(2, threads)
        self.worker = dramatiq.Worker(
            self.broker, queues={QUEUE}, worker_threads=self.worker_threads, worker_timeout=200
        )
        self.worker.start()
        # Webhook deliveries and maintenance are short: they never wait behind minutes-long evaluations.
        self.short_worker = dramatiq.Worker(
            self.broker,
            queues={WEBHOOK_QUEUE, MAINTENANCE_QUEUE},
            worker_threads=SHORT_JOB_THREADS,
            worker_timeout=200,
        )
        with _without_twice_warning(self.broker):
            self.short_worker.start()
        # Training jobs have a worker of their own: a job never waits behind the evaluations queued before it (a
        # registered candidate queues a dozen), and a running job never holds up the evaluations. One at a time.
        self.training_worker = dramatiq.Worker(
            self.broker, queues={TRAINING_QUEUE}, worker_threads=TRAINING_THREADS, worker_timeout=200
        )
        with _without_twice_warning(self.broker):
            self.training_worker.start()
        # Generation runs too (those a broker carries: the embedded server runs its own in its event loop).
        if not self.embedded:
            self.generation_worker = dramatiq.Worker(
                self.broker, queues={GENERATION_QUEUE}, worker_threads=GENERATION_THREADS, worker_timeout=200
            )
            with _without_twice_warning(self.broker):
                self.generation_worker.start()

    def stop(self) -> None:
        for worker in (self.worker, self.short_worker, self.training_worker, self.generation_worker):
            if worker is not None:
                worker.stop()
        self.worker = self.short_worker = self.training_worker = self.generation_worker = None
        if self.generation is not None:
            self.generation.close()
        self.broker.close()


#: The longest a generation run may take in a worker: every item of a run at its time limit, and some.
GENERATION_TIME_LIMIT_MS = 12 * 3_600_000


class GenerationHost:
    """Where a worker process runs generation runs: a :class:`~dynaforge.services.platform.Platform` of its own
    (tasks, adversaries, target models) on an event loop thread of its own, made at the first run and kept, so a
    target model loads once for all the runs this process takes. ``make_platform`` (a coroutine function) builds it;
    by default from the settings, with the tasks declared as data."""

    def __init__(self, settings: Settings, make_platform: Callable[[], Any] | None = None):
        self.settings = settings
        self._make_platform = make_platform
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._platform: Any = None
        self._lock = threading.Lock()

    async def _default_platform(self) -> Any:
        from dynaforge.services.platform import Platform
        from dynaforge.services.task_loading import load_stored

        platform = Platform.create(self.settings)
        await load_stored(platform.db, platform.plugins)
        return platform

    def _started(self) -> tuple[asyncio.AbstractEventLoop, Any]:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="generation-host", daemon=True)
                thread.start()
                make = self._make_platform or self._default_platform
                try:
                    self._platform = asyncio.run_coroutine_threadsafe(make(), loop).result()
                except BaseException:
                    loop.call_soon_threadsafe(loop.stop)
                    raise
                self._loop, self._thread = loop, thread
            return self._loop, self._platform

    def run(self, run_id: int) -> None:
        """Run one generation run to its end (blocking: the actor's thread)."""
        from dynaforge.services.adversaries import run_queued

        loop, platform = self._started()
        running = asyncio.run_coroutine_threadsafe(run_queued(platform, run_id), loop)
        try:
            running.result()
        except BaseException:  # the time limit or the worker stopping: the run records itself FAILED as it stops
            running.cancel()
            raise

    def close(self) -> None:
        with self._lock:
            loop, thread, platform = self._loop, self._thread, self._platform
            self._loop = self._thread = self._platform = None
        if loop is None:
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(platform.close(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=10)


def _send(actor: dramatiq.Actor, messages: Sequence[int | list[int]], kept: str) -> None:
    for message in messages:
        try:
            actor.send(message)
        except Exception as exc:  # redis.ConnectionError and friends
            raise BrokerUnavailable(
                f"the job broker is unreachable ({type(exc).__name__}: {exc}); {kept} and are "
                "sent again when the server restarts"
            ) from exc


def worker_main(settings: Settings, threads: int = 1) -> None:  # pragma: no cover - exercised through the CLI
    """``dynaforge worker``: consume evaluation, training, generation and webhook messages from the Redis broker until
    interrupted."""
    import signal
    import threading

    if not settings.broker_url:
        raise SystemExit(
            "set DYNAFORGE_BROKER_URL to the Redis URL the API uses; without it the server runs its "
            "own jobs and needs no worker"
        )
    from dynaforge.events import make_event_bus

    events = make_event_bus(settings)  # Redis pub/sub: progress reaches the API processes' subscribers
    jobs = Jobs(settings, events=events)
    jobs.start_worker(threads)
    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    log.info("worker consuming %s from %s with %d thread(s)", QUEUE, settings.broker_url, threads)
    stopped.wait()
    jobs.stop()
