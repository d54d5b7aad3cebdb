"""Fake model servers for tests and benchmarks: an OpenAI-compatible API and an Open Inference Protocol (KServe v2)
server, as Starlette apps a test serves on loopback (with uvicorn in a thread, say).

They speak the real wire formats (server-sent events for streamed completions, v2 tensors), so the ``openai`` and
``kserve`` backends are tested end to end without a model: a plugin author's tests can use them too.

``fake_openai_app(reply)``: ``reply(prompt) -> str`` writes the answer to the prompt (the last user message of a
chat, or a completion's prompt); it is streamed word by word, the first after ``ttft_s`` seconds and each next
after ``token_s``. ``requests`` (a list the app appends every request body to) shows what the backend sent.

``fake_kserve_app(name, infer)``: ``infer(inputs) -> outputs`` maps input tensor names to lists of values (one per
item; BYTES as text) and returns output tensor names to lists of values (a list of lists for a 2-D tensor).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

_PIECES = re.compile(r"\s*\S+")


def prompt_of(body: dict[str, Any]) -> str:
    """The prompt a request asks about: a chat's last user message, or a completion's prompt."""
    if isinstance(body.get("messages"), list):
        users = [m.get("content", "") for m in body["messages"] if isinstance(m, dict) and m.get("role") == "user"]
        return str(users[-1]) if users else ""
    return str(body.get("prompt", ""))


def fake_openai_app(
    reply: Callable[[str], str],
    *,
    ttft_s: float = 0.0,
    token_s: float = 0.0,
    models: tuple[str, ...] = ("fake",),
    requests: list[dict[str, Any]] | None = None,
) -> Starlette:
    """An OpenAI-compatible API (``/v1/models``, ``/v1/chat/completions``, ``/v1/completions``) whose answers
    ``reply`` writes (see the module's docstring)."""
    seen = requests if requests is not None else []

    async def list_models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": m, "object": "model"} for m in models]})

    async def complete(request: Request) -> Response:
        body = await request.json()
        seen.append(body)
        chat = request.url.path.endswith("/chat/completions")
        if body.get("model") not in models:
            return JSONResponse({"error": {"message": "no such model"}}, status_code=404)
        text = reply(prompt_of(body))
        pieces = _PIECES.findall(text) or [text]
        limit = int(body.get("max_tokens") or len(pieces))
        finish = "length" if len(pieces) > limit else "stop"
        pieces = pieces[:limit]
        created = int(time.time())

        def choice(piece: str | None, done: bool) -> dict[str, Any]:
            if chat:
                delta = {} if piece is None else {"content": piece}
                return {"index": 0, "delta": delta, "finish_reason": finish if done else None}
            return {"index": 0, "text": piece or "", "finish_reason": finish if done else None}

        if not body.get("stream"):
            await asyncio.sleep(ttft_s + token_s * max(0, len(pieces) - 1))
            whole = "".join(pieces)
            answer = (
                {"index": 0, "message": {"role": "assistant", "content": whole}, "finish_reason": finish}
                if chat
                else {"index": 0, "text": whole, "finish_reason": finish}
            )
            usage = {"prompt_tokens": len(prompt_of(body).split()), "completion_tokens": len(pieces)}
            return JSONResponse({"id": "fake-1", "created": created, "choices": [answer], "usage": usage})

        async def events() -> AsyncIterator[bytes]:
            kind = "chat.completion.chunk" if chat else "text_completion"
            await asyncio.sleep(ttft_s)
            for i, piece in enumerate(pieces):
                if i:
                    await asyncio.sleep(token_s)
                chunk = {"id": "fake-1", "object": kind, "created": created, "choices": [choice(piece, False)]}
                yield f"data: {json.dumps(chunk)}\n\n".encode()
            last = {"id": "fake-1", "object": kind, "created": created, "choices": [choice(None, True)]}
            yield f"data: {json.dumps(last)}\n\n".encode()
            if (body.get("stream_options") or {}).get("include_usage"):
                usage = {"prompt_tokens": len(prompt_of(body).split()), "completion_tokens": len(pieces)}
                tail = {"id": "fake-1", "object": kind, "created": created, "choices": [], "usage": usage}
                yield f"data: {json.dumps(tail)}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(
        routes=[
            Route("/v1/models", list_models),
            Route("/v1/chat/completions", complete, methods=["POST"]),
            Route("/v1/completions", complete, methods=["POST"]),
        ]
    )


def fake_kserve_app(
    name: str,
    infer: Callable[[dict[str, list[Any]]], dict[str, list[Any]]],
    *,
    requests: list[dict[str, Any]] | None = None,
) -> Starlette:
    """An Open Inference Protocol server of one model ``name`` whose outputs ``infer`` computes."""
    seen = requests if requests is not None else []

    async def ready(request: Request) -> Response:
        return JSONResponse({"ready": True})

    async def model_ready(request: Request) -> Response:
        if request.path_params["model"] != name:
            return JSONResponse({"error": "no such model"}, status_code=404)
        return JSONResponse({"name": name, "ready": True})

    async def run(request: Request) -> Response:
        if request.path_params["model"] != name:
            return JSONResponse({"error": "no such model"}, status_code=404)
        body = await request.json()
        seen.append(body)
        inputs = {t["name"]: list(t["data"]) for t in body.get("inputs", [])}
        outputs = []
        for tensor, values in infer(inputs).items():
            rows = len(values)
            nested = bool(values) and isinstance(values[0], list)
            flat = [v for row in values for v in row] if nested else list(values)
            shape = [rows, len(values[0])] if nested else [rows]
            sample = flat[0] if flat else ""
            kind = "BYTES" if isinstance(sample, str) else "BOOL" if isinstance(sample, bool) else "FP32"
            outputs.append({"name": tensor, "shape": shape, "datatype": kind, "data": flat})
        return JSONResponse({"model_name": name, "id": body.get("id"), "outputs": outputs})

    return Starlette(
        routes=[
            Route("/v2/health/ready", ready),
            Route("/v2/models/{model}/ready", model_ready),
            Route("/v2/models/{model}/infer", run, methods=["POST"]),
        ]
    )
