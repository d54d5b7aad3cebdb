"""The Platform: the shared objects every service needs (settings, database, plugins, inference, limits, events)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dynaforge.db.engine import Database
from dynaforge.events import EventBus, InMemoryEventBus
from dynaforge.inference.client import InferenceClient, LocalInferenceClient
from dynaforge.plugins import Plugins
from dynaforge.services.ratelimit import RateLimiter
from dynaforge.settings import Settings


@dataclass
class Platform:
    settings: Settings
    db: Database
    plugins: Plugins
    inference: InferenceClient
    events: EventBus = field(default_factory=InMemoryEventBus)
    limiter: RateLimiter = field(default_factory=RateLimiter)

    @classmethod
    def create(
        cls,
        settings: Settings,
        *,
        db: Database | None = None,
        plugins: Plugins | None = None,
        inference: InferenceClient | None = None,
    ) -> "Platform":
        plugins = plugins or Plugins(allowlist=settings.plugin_allowlist())
        return cls(
            settings=settings,
            db=db or Database(settings.database_url, echo=settings.database_echo),
            plugins=plugins,
            inference=inference
            or LocalInferenceClient(
                lambda: plugins.registry.backends, timeout_s=settings.inference_timeout_s, threads=settings.inference_threads
            ),
        )

    async def close(self) -> None:
        await self.inference.close()
        await self.db.dispose()
