"""G1: an annotator sees the target's reply as it is written: the first token through createExample's reply stream
comes ≤ 50 ms after the engine's own time to first token.

What it measures: an OpenAI-compatible engine in this process (``dynaforge.inference.fakes`` served by uvicorn on
loopback) that writes a 20-word answer, its first token after 200 ms and the next ones 10 ms apart. An admin
declares a task whose target is that engine (chrF against the annotator's answer decides) on the server under test.
The baseline is the engine's own time to first token: the request the server's ``openai`` backend sends, streamed
by this process, from sending it to the first piece of text (median of the runs). The system is what an annotator
sees: with a ``replyStream`` subscription listening (graphql-transport-ws), the time from sending ``createExample``
with that stream's id to the first piece of the reply on the subscription (median of the same number of runs,
alternating with the baseline). Each run also checks that the pieces joined are the reply createExample answers.

Target: median stream TTFT ≤ median engine TTFT + 50 ms. Printed: both medians and their difference.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
import uuid
from typing import Any

import httpx
import websockets

from bench.common import Context, Result, graphql
from bench.g2_deferred_verdicts import _serve, backend_request

ID = "G1"
RUNS = 12
ALLOWANCE_MS = 50.0
ANSWER = " ".join(["word"] * 19) + " done."


def _declaration(code: str, target: str) -> dict[str, Any]:
    return {
        "code": code,
        "name": "G1 streamed answers",
        "instructions": "Ask a question and give the answer you expect; the model is fooled when its answer is far "
        "from yours.",
        "fields": [
            {"name": "question", "type": "text", "role": "input"},
            {"name": "answer", "type": "text", "role": "target"},
        ],
        "metrics": ["chrf"],
        "fooled": {"rule": "metric_below", "field": "answer", "metric": "chrf", "threshold": 50},
        "target_models": [
            {
                "name": "assistant",
                "backend": "openai",
                "config": {
                    "url": f"{target}/v1",
                    "model": "fake",
                    "prompt": "{question}",
                    "parse": {"type": "text", "field": "answer"},
                    "temperature": 0,
                    "max_tokens": 64,
                },
            }
        ],
        "sample_examples": [{"question": "One?", "answer": "1"}, {"question": "Two?", "answer": "2"}],
    }


DECLARE = """mutation($input: DeclareTaskInput!) { declareTask(input: $input) { __typename
  ... on Error { message } ... on InvalidInput { fieldErrors { field message } } } }"""
CREATE = """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename
  ... on ExampleCreated { prediction { fields } } ... on Error { message } } }"""
STREAM = "subscription($id: String!) { replyStream(streamId: $id) { index text done } }"


async def _engine_ttft(http: httpx.AsyncClient, target: str, question: str) -> float:
    """Seconds from sending the backend's request to the engine's first piece of text."""
    body = backend_request(question)
    started = time.perf_counter()
    first = None
    async with http.stream("POST", f"{target}/v1/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if first is None and line.startswith("data:") and '"content"' in line:
                first = time.perf_counter()
            if line.strip() == "data: [DONE]":
                break
    if first is None:
        raise RuntimeError("the engine streamed no text")
    return first - started


async def _streamed(ctx: Context, ws: Any, code: str, run: int) -> float:
    """Seconds from sending createExample with a listening reply stream to the stream's first piece of text."""
    stream_id = f"g1-{uuid.uuid4().hex}"
    await ws.send(
        json.dumps({"type": "subscribe", "id": stream_id, "payload": {"query": STREAM, "variables": {"id": stream_id}}})
    )
    pieces: list[str] = []
    first: float | None = None
    listening = json.loads(await asyncio.wait_for(ws.recv(), 10))
    if listening.get("type") != "next" or listening["payload"]["data"]["replyStream"]["index"] != 0:
        raise RuntimeError(f"replyStream did not start with its listening event: {listening}")
    started = time.perf_counter()
    fields = {"question": f"question {run}?", "answer": ANSWER}
    create = asyncio.create_task(
        graphql(
            ctx.http,
            ctx.server,
            CREATE,
            ctx.server.admin_token,
            input={"taskCode": code, "fields": fields, "replyStream": stream_id},
        )
    )
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if message.get("type") == "complete":
            break
        if message.get("type") != "next":
            raise RuntimeError(f"replyStream: {message}")
        piece = message["payload"]["data"]["replyStream"]
        if piece["text"]:
            first = first or time.perf_counter()
            pieces.append(piece["text"])
    answer = (await create)["createExample"]
    if answer["__typename"] != "ExampleCreated":
        raise RuntimeError(f"createExample answered {answer}")
    if "".join(pieces) != answer["prediction"]["fields"]["answer"]:
        raise RuntimeError(f"the stream wrote {''.join(pieces)!r}, createExample answered {answer}")
    if first is None:
        raise RuntimeError("the reply stream carried no text")
    return first - started


async def run(ctx: Context) -> Result:
    from dynaforge.inference.fakes import fake_openai_app

    target, server, thread = _serve(fake_openai_app(lambda p: ANSWER, ttft_s=0.2, token_s=0.01))
    code = f"g1-{uuid.uuid4().hex[:8]}"
    try:
        declared = await graphql(
            ctx.http, ctx.server, DECLARE, ctx.server.admin_token, input={"definition": _declaration(code, target)}
        )
        if declared["declareTask"]["__typename"] != "TaskDeclared":
            raise RuntimeError(f"declareTask: {declared['declareTask']}")
        async with websockets.connect(
            ctx.server.graphql_url.replace("http://", "ws://"), subprotocols=["graphql-transport-ws"]
        ) as ws:
            await ws.send(
                json.dumps(
                    {"type": "connection_init", "payload": {"authorization": f"Bearer {ctx.server.admin_token}"}}
                )
            )
            await asyncio.wait_for(ws.recv(), 10)
            async with httpx.AsyncClient(timeout=30, trust_env=False) as engine_http:
                await _engine_ttft(engine_http, target, "warm-up")
                await _streamed(ctx, ws, code, -1)
                engine, streamed = [], []
                for i in range(RUNS):
                    engine.append(await _engine_ttft(engine_http, target, f"question {i}?"))
                    streamed.append(await _streamed(ctx, ws, code, i))
    finally:
        server.should_exit = True
        thread.join(5)
    own, seen = statistics.median(engine) * 1000, statistics.median(streamed) * 1000
    return Result(
        ID,
        f"first token through replyStream median {seen:.0f} ms, engine's own {own:.0f} ms: +{seen - own:.0f} ms",
        f"≤ engine's time to first token + {ALLOWANCE_MS:.0f} ms",
        seen <= own + ALLOWANCE_MS,
    )
