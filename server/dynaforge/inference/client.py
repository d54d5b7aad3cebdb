"""The inference client the services talk to.

``InferenceClient`` is the seam between the domain and wherever models run. ``LocalInferenceClient`` runs
predictors on a small thread pool inside the current process and loads each model lazily, on first use, so the
API process does not import torch at start-up.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from dynaforge.inference.backends import (
    REMOTE_THREADS,
    InferenceError,
    InferenceTimeout,
    ModelBackend,
    Predictor,
    TokenSink,
    is_io_bound,
    streaming_to,
)
from dynaforge.tasks.base import ModelSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelAnswer:
    """One model's raw outputs for a batch and how long the model took."""

    model: str
    outputs: list[dict[str, Any]]
    latency_ms: float


class InferenceClient:
    """Interface: predict a batch of model inputs with one model."""

    async def start(self) -> None:
        """Start whatever runs the models (a worker process); optional, predict starts it when needed."""

    def status(self) -> dict[str, Any]:
        """What /healthz shows about inference."""
        return {"mode": type(self).__name__}

    async def predict(
        self, spec: ModelSpec, inputs: list[dict[str, Any]], on_token: TokenSink | None = None
    ) -> ModelAnswer:
        """Predict a batch of model inputs with one model; raises InferenceError / InferenceTimeout. ``on_token``
        receives the pieces of a streamed output as the model writes them (one input; a predictor that does not
        stream sends none), from any thread: it must be thread-safe and quick."""
        raise NotImplementedError

    async def warm_up(self, spec: ModelSpec) -> None:
        """Load a model ahead of its first request (optional)."""

    async def close(self) -> None:
        """Release threads, processes and loaded models."""


def spec_key(spec: ModelSpec) -> str:
    """A model's identity: its backend and configuration (two names for one configuration share a model)."""
    return spec.backend + ":" + json.dumps(spec.config, sort_keys=True, default=str)


def close_model(model: Any) -> None:
    """Release what a loaded model holds (connections, files), if it says how."""
    close = getattr(model, "close", None)
    if callable(close):
        try:
            close()
        except Exception:
            log.exception("closing model %r failed", model)


class LocalInferenceClient(InferenceClient):
    """Runs registered backends in this process on a thread pool, with a per-request timeout."""

    def __init__(
        self,
        backends: Mapping[str, ModelBackend] | Callable[[], Mapping[str, ModelBackend]],
        *,
        timeout_s: float = 10.0,
        threads: int = 1,
        load_timeout_s: float = 120.0,
    ):
        # A callable is read at each load, so backends registered later (a plugin added at run time) are found.
        self._backends = backends if callable(backends) else (lambda: backends)
        self._timeout_s = timeout_s
        self._load_timeout_s = load_timeout_s
        self._pool = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="dynaforge-inference")
        # Models that only wait on the network (is_io_bound) run here, never queued behind local compute.
        self._remote = ThreadPoolExecutor(max_workers=REMOTE_THREADS, thread_name_prefix="dynaforge-remote")
        self._models: dict[str, Predictor] = {}
        self._lock = threading.Lock()

    def _load(self, spec: ModelSpec) -> Predictor:
        key = spec_key(spec)
        with self._lock:
            model = self._models.get(key)
            if model is None:
                backend = self._backends().get(spec.backend)
                if backend is None:
                    raise InferenceError(
                        f"model {spec.name!r} uses backend {spec.backend!r}, which no installed plugin registers"
                    )
                started = time.perf_counter()
                model = backend.load(spec.config)
                log.info("loaded model %s (%s) in %.1fs", spec.name, spec.backend, time.perf_counter() - started)
                self._models[key] = model
            return model

    def _run(self, spec: ModelSpec, inputs: list[dict[str, Any]], on_token: TokenSink | None = None) -> ModelAnswer:
        model = self._load(spec)
        started = time.perf_counter()
        with streaming_to(on_token):
            outputs = model.predict(inputs)
        elapsed = (time.perf_counter() - started) * 1000
        if not isinstance(outputs, list) or len(outputs) != len(inputs):
            raise InferenceError(
                f"model {spec.name!r} returned {type(outputs).__name__}, expected one output per input"
            )
        return ModelAnswer(model=spec.name, outputs=outputs, latency_ms=elapsed)

    async def _on_pool(
        self, timeout_s: float, failing: str, timing_out: str, fn, *args: Any, pool: ThreadPoolExecutor | None = None
    ) -> Any:
        """Run ``fn`` on the inference thread (or ``pool``) within ``timeout_s``; failures become
        InferenceError/Timeout."""
        future = asyncio.get_running_loop().run_in_executor(pool or self._pool, fn, *args)
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout=timeout_s)
        except TimeoutError as exc:
            raise InferenceTimeout(f"{timing_out} within {timeout_s:g}s") from exc
        except InferenceError:
            raise
        except Exception as exc:
            raise InferenceError(f"{failing}: {type(exc).__name__}: {exc}") from exc

    async def predict(
        self, spec: ModelSpec, inputs: list[dict[str, Any]], on_token: TokenSink | None = None
    ) -> ModelAnswer:
        name = f"model {spec.name!r}"
        if spec_key(spec) not in self._models:
            # Loading is not answering: the timeout covers prediction, while a first load gets its own bound.
            await self._on_pool(
                self._load_timeout_s, f"{name} failed to load", f"{name} did not load", self._load, spec
            )
        remote = is_io_bound(self._models.get(spec_key(spec)))
        return await self._on_pool(
            self._timeout_s,
            f"{name} failed",
            f"{name} did not answer",
            self._run,
            spec,
            inputs,
            on_token,
            pool=self._remote if remote else None,
        )

    def status(self) -> dict[str, Any]:
        return {"mode": "inline", "models_loaded": len(self._models)}

    async def warm_up(self, spec: ModelSpec) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._pool, self._load, spec)

    async def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._remote.shutdown(wait=False, cancel_futures=True)
        for model in self._models.values():
            close_model(model)
        self._models.clear()
