"""The API side of the model worker: starts it, talks to it, restarts it when it dies.

:class:`WorkerInferenceClient` starts ``python -m dynaforge.inference.worker`` as a child process and sends it
requests over a Unix socket (:mod:`dynaforge.inference.protocol`). It never imports torch.

Failure handling, as the services expect it:

* every request has a timeout (``timeout_s`` for a prediction, ``load_timeout_s`` for a first load); past it the
  caller gets :class:`InferenceTimeout` and the example is stored pending;
* when the worker dies, every request in flight fails at once with :class:`InferenceUnavailable` (nobody waits for
  a timeout), a new worker is started with exponential backoff, and the models that were loaded before are loaded
  again in the background; until a model is back, its requests fail fast too. The examples are stored as
  ``PENDING_PREDICTION`` and the pending-prediction retry predicts them once the model answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from dynaforge.inference import protocol
from dynaforge.inference.backends import InferenceError, InferenceTimeout, TokenSink
from dynaforge.inference.batching import DEFAULT_MAX_BATCH
from dynaforge.inference.client import InferenceClient, ModelAnswer, spec_key
from dynaforge.sandbox import scrubbed_environment
from dynaforge.tasks.base import ModelSpec

log = logging.getLogger(__name__)


class InferenceUnavailable(InferenceError):
    """The model worker is not running (it died or is restarting); try again later."""


class WorkerInferenceClient(InferenceClient):
    """Runs models in a supervised child process; see the module docstring."""

    def __init__(
        self,
        *,
        plugins_allowlist: str | None = None,
        timeout_s: float = 10.0,
        load_timeout_s: float = 300.0,
        start_timeout_s: float = 60.0,
        max_batch: int = DEFAULT_MAX_BATCH,
        window_ms: float = 2.0,
        threads: int | None = None,
        python: str = sys.executable,
        max_backoff_s: float = 10.0,
        data_dir: str | os.PathLike[str] | None = None,
        outbound_allow: str | None = None,
        prepare: Callable[[ModelSpec], object] | None = None,
    ):
        self._plugins = plugins_allowlist
        # The worker's model loaders find trained weights in the model store under this data directory.
        self._data_dir = None if data_dir is None else os.path.abspath(data_dir)
        # The outbound policy's allowlist for the worker's http backends (None: the worker inherits this process's).
        self._outbound_allow = outbound_allow
        # Called (on a thread) before the worker is asked to load a model: fetches what the worker cannot, an uploaded
        # artifact in a bucket (the worker has no credentials), into the data directory's cache.
        self._prepare = prepare
        self._timeout_s = timeout_s
        self._load_timeout_s = load_timeout_s
        self._start_timeout_s = start_timeout_s
        self._max_batch = max_batch
        self._window_ms = window_ms
        self._threads = threads
        self._python = python
        self._max_backoff_s = max_backoff_s
        self._dir = tempfile.mkdtemp(prefix="dynaforge-worker-")
        self._socket = os.path.join(self._dir, "worker.sock")
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        self._sinks: dict[int, TokenSink] = {}  # requests whose streamed pieces someone reads
        self._writer: asyncio.StreamWriter | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._ready = asyncio.Event()
        self._supervisor: asyncio.Task | None = None
        self._closed = False
        self._loaded: set[str] = set()  # models loaded in the current worker
        self._wanted: dict[str, ModelSpec] = {}  # models loaded at least once: reloaded after a restart
        self.starts = 0
        self._was_ready = False
        self.last_exit: str | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Start the worker (idempotent); returns once it accepts requests or ``start_timeout_s`` has passed."""
        if self._closed:
            raise InferenceUnavailable("the inference client is closed")
        if self._was_ready and not self._ready.is_set():
            raise InferenceUnavailable("the model worker is restarting; the example will be predicted later")
        if self._supervisor is None:
            self._supervisor = asyncio.create_task(self._supervise(), name="model-worker-supervisor")
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._ready.wait(), self._start_timeout_s)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None and self._process.returncode is None else None

    def status(self) -> dict[str, Any]:
        return {
            "mode": "worker",
            "ready": self._ready.is_set(),
            "pid": self.pid,
            "starts": self.starts,
            "last_exit": self.last_exit,
            "models_loaded": len(self._loaded),
        }

    async def _spawn(self) -> asyncio.subprocess.Process:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._socket)
        args = [
            self._python,
            "-m",
            "dynaforge.inference.worker",
            "--socket",
            self._socket,
            "--max-batch",
            str(self._max_batch),
            "--window-ms",
            str(self._window_ms),
            "--parent-pid",
            str(os.getpid()),
        ]
        if self._plugins is not None:
            args += ["--plugins", self._plugins]
        # By default leave one core to the API process: on a small machine a forward pass spread over every core
        # stalls whenever the API needs one of them.
        threads = self._threads or max(1, (os.cpu_count() or 2) - 1)
        args += ["--threads", str(threads)]
        env = scrubbed_environment()  # model code runs there: none of the server's secrets, not its database URL
        if self._data_dir is not None:
            env["DYNAFORGE_DATA_DIR"] = self._data_dir
        if self._outbound_allow is not None:
            env["DYNAFORGE_OUTBOUND_ALLOW"] = self._outbound_allow
        return await asyncio.create_subprocess_exec(*args, stdin=asyncio.subprocess.DEVNULL, env=env)

    async def _connect(self, process: asyncio.subprocess.Process) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        deadline = time.monotonic() + self._start_timeout_s
        while True:
            if process.returncode is not None:
                raise InferenceUnavailable(f"the model worker exited with status {process.returncode} at start-up")
            try:
                return await asyncio.open_unix_connection(self._socket)
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    raise InferenceUnavailable(
                        f"the model worker did not start within {self._start_timeout_s:g}s"
                    ) from None
                await asyncio.sleep(0.05)

    async def _supervise(self) -> None:
        backoff = 0.2
        while not self._closed:
            started = time.monotonic()
            process = None
            try:
                process = self._process = await self._spawn()
                self.starts += 1
                reader, writer = await self._connect(process)
                self._writer = writer
                self._loaded.clear()
                self._ready.set()
                self._was_ready = True
                log.info("model worker %d ready", process.pid)
                reloading = asyncio.create_task(self._reload())
                try:
                    await self._read(reader)
                finally:
                    reloading.cancel()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.error("model worker failed: %s", exc)
            finally:
                self._ready.clear()
                self._writer = None
                self._fail_pending(InferenceUnavailable("the model worker stopped while answering; it is restarting"))
                if process is not None:
                    await self._reap(process)
            if self._closed:
                break
            backoff = 0.2 if time.monotonic() - started > 30 else min(backoff * 2, self._max_backoff_s)
            log.warning("model worker stopped (%s); restarting in %.1fs", self.last_exit, backoff)
            await asyncio.sleep(backoff)

    async def _reap(self, process: asyncio.subprocess.Process) -> None:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 5.0)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        self.last_exit = f"exit status {process.returncode}"

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while True:
            message = await protocol.read(reader)
            if message is None:
                return
            rid = message.get("id")
            if "token" in message:  # a piece of a streamed output; the answer comes later
                sink = self._sinks.get(rid) if isinstance(rid, int) else None
                if sink is not None and isinstance(message["token"], str):
                    try:
                        sink(message["token"])
                    except Exception:  # noqa: BLE001 - the stream is a courtesy, the answer is what counts
                        log.warning("a token sink failed", exc_info=True)
                continue
            future = self._pending.pop(rid, None) if isinstance(rid, int) else None
            if future is not None and not future.done():
                future.set_result(message)

    async def _load(self, spec: ModelSpec) -> None:
        """Ask the worker to load ``spec``, after :attr:`_prepare` made its files local."""
        if self._prepare is not None:
            try:
                await asyncio.to_thread(self._prepare, spec)
            except Exception as exc:  # noqa: BLE001 - the model cannot load; the caller learns why
                raise InferenceError(f"model {spec.name!r} could not be fetched: {exc}") from exc
        await self._request({"op": "load", "spec": spec.as_dict()}, self._load_timeout_s)

    async def _reload(self) -> None:
        """After a restart, load again the models that were in use, so their requests stop failing fast."""
        for key, spec in list(self._wanted.items()):
            try:
                await self._load(spec)
                self._loaded.add(key)
            except InferenceError as exc:
                # Forget it: its next request loads it again (and waits for that) instead of failing fast.
                self._wanted.pop(key, None)
                log.warning("could not reload model %s: %s", spec.name, exc)

    def _fail_pending(self, error: Exception) -> None:
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(error)

    # ------------------------------------------------------------------ requests
    async def _request(
        self, message: dict[str, Any], timeout_s: float, on_token: TokenSink | None = None
    ) -> dict[str, Any]:
        writer = self._writer
        if writer is None or not self._ready.is_set():
            raise InferenceUnavailable("the model worker is restarting; the example will be predicted later")
        rid = next(self._ids)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        if on_token is not None:
            self._sinks[rid] = on_token
            message = {**message, "stream": True}
        try:
            writer.write(protocol.encode({"id": rid, **message}))
            answer = await asyncio.wait_for(future, timeout_s)
        except TimeoutError as exc:
            raise InferenceTimeout(f"no answer within {timeout_s:g}s") from exc
        except (ConnectionError, RuntimeError) as exc:
            raise InferenceUnavailable(f"the model worker connection failed: {exc}") from exc
        finally:
            self._pending.pop(rid, None)
            self._sinks.pop(rid, None)
        if not answer.get("ok"):
            error = answer.get("error") or "unknown error"
            raise InferenceTimeout(error) if answer.get("kind") == "timeout" else InferenceError(error)
        return answer

    async def _ensure_loaded(self, spec: ModelSpec) -> None:
        key = spec_key(spec)
        if key in self._loaded:
            return
        if not self._ready.is_set():
            if self._was_ready:
                raise InferenceUnavailable("the model worker is restarting; the example will be predicted later")
            await self.start()  # the first start: wait for it
        if key in self._wanted:
            # It was loaded before this worker started: the reload is under way; fail fast meanwhile.
            raise InferenceUnavailable(f"model {spec.name!r} is loading again after a worker restart")
        try:
            await self._load(spec)
        except InferenceTimeout as exc:
            raise InferenceTimeout(f"model {spec.name!r} did not load within {self._load_timeout_s:g}s") from exc
        self._loaded.add(key)
        self._wanted[key] = spec

    async def predict(
        self, spec: ModelSpec, inputs: list[dict[str, Any]], on_token: TokenSink | None = None
    ) -> ModelAnswer:
        await self._ensure_loaded(spec)
        try:
            answer = await self._request(
                {"op": "predict", "spec": spec.as_dict(), "inputs": inputs, "timeout_s": self._timeout_s},
                self._timeout_s,
                on_token,
            )
        except InferenceTimeout as exc:
            raise InferenceTimeout(f"model {spec.name!r} did not answer: {exc}") from exc
        outputs = answer.get("outputs")
        if not isinstance(outputs, list) or len(outputs) != len(inputs):
            raise InferenceError(f"model {spec.name!r} gave {len(outputs or [])} outputs for {len(inputs)} inputs")
        return ModelAnswer(model=spec.name, outputs=outputs, latency_ms=float(answer.get("latency_ms", 0.0)))

    async def warm_up(self, spec: ModelSpec) -> None:
        await self._ensure_loaded(spec)

    async def ping(self) -> dict[str, Any]:
        """The worker's pid and per-model batching statistics."""
        return await self._request({"op": "ping"}, 5.0)

    async def close(self) -> None:
        self._closed = True
        if self._writer is not None:
            self._writer.close()
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._supervisor
        if self._process is not None and self._process.returncode is None:
            await self._reap(self._process)
        self._fail_pending(InferenceUnavailable("the inference client is closed"))
        with contextlib.suppress(OSError):
            os.unlink(self._socket)
        with contextlib.suppress(OSError):
            os.rmdir(self._dir)
