"""A reference model server for the ``http`` backend's JSON contract (docs/model-server.md).

``create_model_server(predictor, name=...)`` wraps any predictor (a ``python`` callable, a ``transformers``
model, a plugin's own backend) in a Starlette app with ``GET /health`` and ``POST /predict``, so a model can run
on another machine (a GPU box) and be used by the platform through ``{"backend": "http", "config": {"url": ...}}``.
``serve_model`` loads a registered backend and serves it with uvicorn (``dynaforge model-server``).

The predictor runs on a worker thread, one batch at a time, so the event loop keeps answering ``/health`` while a
batch is being predicted and a predictor never sees two batches at once.
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from collections.abc import Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dynaforge.inference.backends import ModelBackend, Predictor

log = logging.getLogger(__name__)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _json_default(value: Any) -> Any:
    """Numpy and torch scalars or arrays, which models often return, as plain JSON values."""
    for method in ("item", "tolist"):
        if callable(getattr(value, method, None)):
            return getattr(value, method)()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _body_problem(body: Any) -> str | None:
    """Why a ``/predict`` body breaks the contract, or None when it is ``{"inputs": [object, ...]}``."""
    if not isinstance(body, dict) or not isinstance(body.get("inputs"), list):
        return 'the body must be a JSON object {"inputs": [ {...}, ... ]}'
    bad = next((i for i, item in enumerate(body["inputs"]) if not isinstance(item, dict)), None)
    if bad is not None:
        return f"inputs[{bad}] is {type(body['inputs'][bad]).__name__}; every input must be an object"
    return None


def create_model_server(predictor: Predictor, *, name: str, token: str | None = None) -> Starlette:
    """A Starlette app serving ``predictor`` under the model-server contract.

    ``GET /health`` answers ``{"status": "ok", "model": name}``. ``POST /predict`` takes ``{"inputs": [...]}`` and
    answers ``{"outputs": [...]}``, one output per input in order; a malformed body gets 400, a model failure or
    malformed model output 500, each with ``{"error": "..."}``. With ``token``, ``/predict`` requires the header
    ``Authorization: Bearer <token>`` (401 otherwise); ``/health`` stays open for load balancers.
    """
    lock = threading.Lock()

    def run(inputs: list[dict[str, Any]]) -> Any:
        with lock:
            return predictor.predict(inputs)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "model": name})

    async def predict(request: Request) -> Response:
        if token is not None:
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                return _error(401, "missing or wrong bearer token in the Authorization header")
        try:
            body = json.loads(await request.body())
        except ValueError as exc:
            return _error(400, f"the body is not JSON: {exc}")
        problem = _body_problem(body)
        if problem:
            return _error(400, problem)
        inputs = body["inputs"]
        if not inputs:
            return JSONResponse({"outputs": []})
        try:
            outputs = await run_in_threadpool(run, inputs)
        except Exception as exc:
            log.exception("model %s failed on a batch of %d", name, len(inputs))
            return _error(500, f"model {name!r} failed: {type(exc).__name__}: {exc}")
        if (
            not isinstance(outputs, list)
            or len(outputs) != len(inputs)
            or not all(isinstance(o, dict) for o in outputs)
        ):
            count = len(outputs) if isinstance(outputs, list) else type(outputs).__name__
            return _error(500, f"model {name!r} returned {count} outputs for {len(inputs)} inputs; expected objects")
        try:
            content = json.dumps({"outputs": outputs}, default=_json_default, allow_nan=False)
        except (TypeError, ValueError) as exc:
            return _error(500, f"model {name!r} returned outputs that are not JSON: {exc}")
        return Response(content, media_type="application/json")

    return Starlette(routes=[Route("/health", health, methods=["GET"]), Route("/predict", predict, methods=["POST"])])


def serve_model(
    backend_name: str,
    config: dict[str, Any],
    host: str = "127.0.0.1",
    port: int = 8080,
    *,
    name: str | None = None,
    token: str | None = None,
    backends: Mapping[str, ModelBackend] | None = None,
    log_level: str = "info",
) -> None:
    """Load ``config`` with the registered backend ``backend_name`` and serve it until interrupted.

    The model is loaded before the server listens, so a wrong config fails at once rather than on the first
    request. ``backends`` defaults to those of the installed plugins (``DYNAFORGE_LOAD_PLUGINS`` applies).
    """
    import uvicorn

    if backends is None:
        from dynaforge.plugins import Plugins
        from dynaforge.settings import Settings

        backends = Plugins(allowlist=Settings().plugin_allowlist()).registry.backends
    backend = backends.get(backend_name)
    if backend is None:
        raise ValueError(f"no model backend {backend_name!r} is registered; available: {', '.join(sorted(backends))}")
    problems = backend.check_config(config)
    if problems:
        raise ValueError(f"backend {backend_name!r}: " + "; ".join(problems))
    predictor = backend.load(config)
    app = create_model_server(predictor, name=name or backend_name, token=token)
    log.info("serving model %s (%s) on http://%s:%d", name or backend_name, backend_name, host, port)
    uvicorn.run(app, host=host, port=port, log_level=log_level)
