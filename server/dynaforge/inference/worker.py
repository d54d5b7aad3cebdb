"""The model-worker process: loads target models and answers predictions, micro-batched, over a Unix socket.

``dynaforge serve`` and ``dynaforge demo`` start it (``python -m dynaforge.inference.worker --socket PATH``) and
talk to it through :class:`dynaforge.inference.remote.WorkerInferenceClient`; the API process itself never imports
torch. The worker loads the same plugins as the API (``--plugins`` is the allowlist), so every registered backend is
available. Models that only wait on the network (remote model servers, engines: ``is_io_bound``) run on threads of
their own. One inference thread runs the forward passes (torch parallelises inside each one over
``--threads`` threads); the event loop keeps reading requests meanwhile, which is what lets concurrent requests
form batches (see :mod:`dynaforge.inference.batching`).

The worker exits when its parent process dies or its last client disconnects, so it never outlives the server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from dynaforge.inference import protocol
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
from dynaforge.inference.batching import DEFAULT_MAX_BATCH, MicroBatcher
from dynaforge.inference.client import close_model, spec_key
from dynaforge.tasks.base import ModelSpec

log = logging.getLogger("dynaforge.worker")


class ModelHost:
    """Loaded models and their batchers, in the worker process."""

    def __init__(
        self,
        backends: Callable[[], Mapping[str, ModelBackend]],
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        window_s: float = 0.002,
        threads: int | None = None,
    ):
        self._backends = backends
        self._max_batch = max_batch
        self._window_s = window_s
        self._threads = threads
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dynaforge-model")
        # Models that only wait on the network (is_io_bound): threads of their own, never behind local compute.
        self._remote = ThreadPoolExecutor(max_workers=REMOTE_THREADS, thread_name_prefix="dynaforge-remote")
        self._models: dict[str, Predictor] = {}
        self._batchers: dict[str, MicroBatcher] = {}
        self._loading: dict[str, asyncio.Future] = {}
        self._threads_set = False

    def _load_sync(self, spec: ModelSpec) -> Predictor:
        if self._threads and not self._threads_set:
            self._threads_set = True
            try:
                import torch

                torch.set_num_threads(self._threads)
            except ImportError:
                pass
        backend = self._backends().get(spec.backend)
        if backend is None:
            raise InferenceError(
                f"model {spec.name!r} uses backend {spec.backend!r}, which no installed plugin registers"
            )
        started = time.perf_counter()
        model = backend.load(spec.config)
        if not callable(getattr(model, "predict", None)):
            raise InferenceError(f"backend {spec.backend!r} returned {type(model).__name__}, which cannot predict")
        log.info("loaded model %s (%s) in %.1fs", spec.name, spec.backend, time.perf_counter() - started)
        return model

    async def load(self, spec: ModelSpec) -> MicroBatcher:
        key = spec_key(spec)
        batcher = self._batchers.get(key)
        if batcher is not None:
            return batcher
        pending = self._loading.get(key)
        if pending is None:
            pending = self._loading[key] = asyncio.ensure_future(self._load(spec, key))
        try:
            return await asyncio.shield(pending)
        finally:
            if pending.done():
                self._loading.pop(key, None)

    async def _load(self, spec: ModelSpec, key: str) -> MicroBatcher:
        loop = asyncio.get_running_loop()
        try:
            model = await loop.run_in_executor(self._executor, self._load_sync, spec)
        except InferenceError:
            raise
        except Exception as exc:
            raise InferenceError(f"model {spec.name!r} failed to load: {type(exc).__name__}: {exc}") from exc
        self._models[key] = model
        length = getattr(model, "length", None)
        batcher = MicroBatcher(
            spec.name,
            model.predict,
            self._executor_for(model),
            length=length if callable(length) else None,
            max_batch=self._max_batch,
            window_s=self._window_s,
        )
        self._batchers[key] = batcher
        return batcher

    def _executor_for(self, model: Predictor) -> ThreadPoolExecutor:
        return self._remote if is_io_bound(model) else self._executor

    async def predict(self, spec: ModelSpec, inputs: list[dict[str, Any]], timeout_s: float):
        batcher = await self.load(spec)
        return await batcher.predict(inputs, timeout_s)

    async def predict_streaming(
        self, spec: ModelSpec, inputs: list[dict[str, Any]], timeout_s: float, on_token: TokenSink
    ) -> tuple[list[dict[str, Any]], int, float]:
        """Like :meth:`predict`, outside the micro-batches (a streamed reply is one person's, as it is written),
        on the model's thread pool (:meth:`_executor_for`); ``on_token`` receives the pieces on that thread."""
        await self.load(spec)
        model = self._models[spec_key(spec)]

        def run() -> tuple[list[dict[str, Any]], float]:
            started = time.perf_counter()
            with streaming_to(on_token):
                outputs = model.predict(inputs)
            return outputs, (time.perf_counter() - started) * 1000

        future = asyncio.get_running_loop().run_in_executor(self._executor_for(model), run)
        try:
            outputs, latency_ms = await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except TimeoutError as exc:
            raise InferenceTimeout(f"no answer within {timeout_s:g}s") from exc
        if not isinstance(outputs, list) or len(outputs) != len(inputs):
            raise InferenceError(f"model {spec.name!r} returned {type(outputs).__name__}, expected one per input")
        return outputs, len(inputs), latency_ms

    def info(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "models": {b.name: b.stats.as_dict() for b in self._batchers.values()},
        }

    async def close(self) -> None:
        for batcher in self._batchers.values():
            await batcher.close()
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._remote.shutdown(wait=False, cancel_futures=True)
        for model in self._models.values():
            close_model(model)
        self._models.clear()


class WorkerServer:
    """Serves :class:`ModelHost` over the frame protocol on a Unix socket."""

    def __init__(self, host: ModelHost, socket_path: str):
        self.host = host
        self.socket_path = socket_path
        self._clients = 0
        self._had_client = False
        self._stop = asyncio.Event()

    async def _answer(self, request: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """The answer to one request; a streamed prediction's pieces go out through ``send`` before it."""
        rid = request.get("id")
        op = request.get("op")
        try:
            if op == "ping":
                return {"id": rid, "ok": True, **self.host.info()}
            spec = ModelSpec.from_dict(request["spec"])
            if op == "load":
                await self.host.load(spec)
                return {"id": rid, "ok": True}
            if op == "predict":
                inputs, timeout_s = list(request["inputs"]), float(request.get("timeout_s", 10.0))
                if request.get("stream"):
                    loop = asyncio.get_running_loop()

                    def on_token(text: str) -> None:  # on the inference thread
                        loop.call_soon_threadsafe(send, {"id": rid, "token": text})

                    outputs, batch_size, latency_ms = await self.host.predict_streaming(
                        spec, inputs, timeout_s, on_token
                    )
                else:
                    outputs, batch_size, latency_ms = await self.host.predict(spec, inputs, timeout_s)
                return {"id": rid, "ok": True, "outputs": outputs, "latency_ms": latency_ms, "batch_size": batch_size}
            return {"id": rid, "ok": False, "kind": "error", "error": f"unknown operation {op!r}"}
        except InferenceTimeout as exc:
            return {"id": rid, "ok": False, "kind": "timeout", "error": str(exc)}
        except Exception as exc:
            message = str(exc) if isinstance(exc, InferenceError) else f"{type(exc).__name__}: {exc}"
            return {"id": rid, "ok": False, "kind": "error", "error": message}

    async def _serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._clients += 1
        self._had_client = True
        tasks: set[asyncio.Task] = set()

        def send(message: dict[str, Any]) -> None:
            if not writer.is_closing():
                writer.write(protocol.encode(message))

        async def respond(request: dict[str, Any]) -> None:
            send(await self._answer(request, send))

        try:
            while True:
                request = await protocol.read(reader)
                if request is None:
                    break
                task = asyncio.create_task(respond(request))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        except (ConnectionError, protocol.ProtocolError, asyncio.IncompleteReadError) as exc:
            log.warning("client connection ended: %s", exc)
        finally:
            for task in tasks:
                task.cancel()
            writer.close()
            self._clients -= 1
            if self._clients == 0:
                self._stop.set()

    async def run(self, parent_pid: int | None) -> None:
        server = await asyncio.start_unix_server(self._serve_client, path=self.socket_path)
        os.chmod(self.socket_path, 0o600)
        log.info("model worker %d listening on %s", os.getpid(), self.socket_path)
        watcher = asyncio.create_task(self._watch_parent(parent_pid))
        try:
            async with server:
                await self._stop.wait()
        finally:
            watcher.cancel()
            await self.host.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.socket_path)

    async def _watch_parent(self, parent_pid: int | None) -> None:
        while True:
            await asyncio.sleep(1.0)
            if parent_pid is not None and os.getppid() != parent_pid:
                log.warning("parent process %d is gone; the model worker stops", parent_pid)
                self._stop.set()
                return


def _backends(plugins_allowlist: str | None) -> Callable[[], Mapping[str, ModelBackend]]:
    from dynaforge.plugins import Plugins
    from dynaforge.settings import Settings

    allowlist = Settings(load_plugins=plugins_allowlist).plugin_allowlist()
    plugins = Plugins(allowlist=allowlist)
    for name, error in plugins.errors.items():
        log.warning("plugin %s is broken: %s", name, error)
    return lambda: plugins.registry.backends


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop where it is installed (as with uvicorn's standard extras), as the API process runs:
    each request crosses the loop several times (socket reads, the batcher, the hop to the inference thread and
    back), and uvloop's costs less per crossing than asyncio's default loop."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="dynaforge-model-worker", description=__doc__.split("\n\n")[0])
    parser.add_argument("--socket", required=True, help="Unix socket path to listen on")
    parser.add_argument("--plugins", default=None, help="plugin allowlist (DYNAFORGE_LOAD_PLUGINS format)")
    parser.add_argument("--max-batch", type=int, default=DEFAULT_MAX_BATCH)
    parser.add_argument("--window-ms", type=float, default=2.0)
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--parent-pid", type=int, default=None)
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    host = ModelHost(
        _backends(args.plugins), max_batch=args.max_batch, window_s=args.window_ms / 1000, threads=args.threads
    )
    server = WorkerServer(host, args.socket)

    def stop(*_: Any) -> None:
        server._stop.set()

    async def run() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop)
        await server.run(args.parent_pid)

    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        runner.run(run())
    # Inference threads may be inside a forward pass; do not wait for them.
    if threading.active_count() > 1:
        sys.stdout.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
