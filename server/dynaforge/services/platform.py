"""The Platform: the shared objects every service needs (settings, database, plugins, inference, limits, events)."""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass, field
from typing import Any

from dynaforge.db.engine import Database
from dynaforge.events import EventBus, InMemoryEventBus, make_event_bus
from dynaforge.inference.client import InferenceClient, LocalInferenceClient
from dynaforge.model_artifacts import ArtifactStore
from dynaforge.plugins import Plugins
from dynaforge.services.cache import Caches
from dynaforge.services.hashing import PasswordHashing
from dynaforge.services.job_queue import JobQueue
from dynaforge.services.ratelimit import RateLimiter, Slots
from dynaforge.settings import Settings
from dynaforge.tasks.base import ModelSpec


@dataclass
class Platform:
    settings: Settings
    db: Database
    plugins: Plugins
    inference: InferenceClient
    events: EventBus = field(default_factory=InMemoryEventBus)
    limiter: RateLimiter = field(default_factory=RateLimiter)  # shared through Redis when configured
    hashing: PasswordHashing = field(default_factory=PasswordHashing)  # password hashing pools per purpose
    caches: Caches = field(default_factory=Caches)
    subscriptions: Slots = field(default_factory=Slots)  # live subscriptions per user (or client address)
    jobs: JobQueue | None = None  # dynaforge.jobs.Jobs once the server starts its job system; None: work stays queued
    adversary_runs: dict[int, asyncio.Task[None]] = field(default_factory=dict)  # generation runs in this process
    #: task code -> why its round's target cannot answer the task's sample examples (services.examples.probe_targets)
    target_problems: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def create(
        cls,
        settings: Settings,
        *,
        db: Database | None = None,
        plugins: Plugins | None = None,
        inference: InferenceClient | None = None,
    ) -> Platform:
        plugins = plugins or Plugins(allowlist=settings.plugin_allowlist())
        return cls(
            settings=settings,
            db=db or Database(settings.database_url, echo=settings.database_echo),
            plugins=plugins,
            inference=inference or _inference_client(settings, plugins),
            caches=Caches(settings.cache_ttl_s),
            events=make_event_bus(settings),
            limiter=RateLimiter.from_settings(settings),
            hashing=PasswordHashing.from_settings(settings),
        )

    async def close(self) -> None:
        running = list(self.adversary_runs.values())
        for run in running:  # each records itself FAILED ("the server stopped") as it is cancelled
            run.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await self.events.close()
        await self.inference.close()
        await self.db.dispose()
        await self.limiter.close()
        self.hashing.close()


def _inference_client(settings: Settings, plugins: Plugins) -> InferenceClient:
    if settings.inference == "inline":
        return LocalInferenceClient(
            lambda: plugins.registry.backends,
            timeout_s=settings.inference_timeout_s,
            load_timeout_s=settings.inference_load_timeout_s,
            threads=settings.inference_threads,
        )
    from dynaforge.inference.remote import WorkerInferenceClient

    return WorkerInferenceClient(
        plugins_allowlist=settings.load_plugins,
        timeout_s=settings.inference_timeout_s,
        load_timeout_s=settings.inference_load_timeout_s,
        max_batch=settings.batch_max_size,
        window_ms=settings.batch_window_ms,
        threads=settings.model_threads,
        data_dir=settings.data_dir,
        outbound_allow=settings.outbound_allow,
        prepare=functools.partial(fetch_artifacts, settings, plugins),
    )


def fetch_artifacts(settings: Settings, plugins: Plugins, spec: ModelSpec) -> None:
    """The uploaded artifacts a target model loads, fetched into the data directory's cache before the model worker
    (no credentials) loads it from there. Blocking: the worker client calls it on a thread."""
    store = ArtifactStore.from_settings(settings)
    store.materialise(plugins.registry.backends.get(spec.backend), spec.config)
