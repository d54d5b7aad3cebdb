"""G2: an example whose fooled verdict waits for a judge never blocks its annotator: createExample returns in ≤ 1.2 ×
the generation time, and the verdict arrives as an event.

What it measures: two OpenAI-compatible engines in this process (``dynaforge.inference.fakes`` served by uvicorn on
loopback): a target that writes a 20-word answer, its first token after 200 ms and the next ones 10 ms apart (about
0.4 s), and a judge that takes a full second to answer. An admin declares a task whose verdict is the judge's
(``fooled: {rule: judge}``) on the server under test. The baseline is the generation itself: the same request the
server's ``openai`` backend sends, streamed from the target engine by this process (median of the runs). The system
is ``createExample`` on that task over HTTP (median of the same number of runs, alternating with the baseline), which
answers ``VerdictPending``; a ``verdictDecided`` subscription (graphql-transport-ws) must then bring every verdict.

Target: median createExample ≤ 1.2 × median generation, and every verdict arrives (within 10 s of its example).
Printed: both medians, their ratio, and the verdicts that arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import statistics
import threading
import time
import uuid
from typing import Any

import httpx
import websockets

from bench.common import Context, Result, graphql

ID = "G2"
RUNS = 12
RATIO_TARGET = 1.2
ANSWER = " ".join(["word"] * 19) + " done."
VERDICT_WAIT_S = 10.0


def _serve(app: Any) -> tuple[str, Any, threading.Thread]:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, thread


def _declaration(code: str, target: str, judge: str) -> dict[str, Any]:
    model = {"model": "fake", "temperature": 0, "max_tokens": 64}
    return {
        "code": code,
        "name": "G2 judged answers",
        "instructions": "Ask a question the assistant answers wrongly; a judge model decides whether it did, after "
        "the example is stored.",
        "fields": [
            {"name": "question", "type": "text", "role": "input"},
            {"name": "answer", "type": "text", "role": "target", "required": False},
        ],
        "metrics": ["token_f1"],
        "fooled": {
            "rule": "judge",
            "rubric": "The answer is wrong when it does not answer the question.",
            "judge": {"name": "judge", "backend": "openai", "config": {"url": f"{judge}/v1", **model}},
        },
        "target_models": [
            {
                "name": "assistant",
                "backend": "openai",
                "config": {
                    "url": f"{target}/v1",
                    "prompt": "{question}",
                    "parse": {"type": "text", "field": "answer"},
                    **model,
                },
            }
        ],
        "sample_examples": [{"question": "One?", "answer": "1"}, {"question": "Two?", "answer": "2"}],
    }


DECLARE = """mutation($input: DeclareTaskInput!) { declareTask(input: $input) { __typename
  ... on Error { message } ... on InvalidInput { fieldErrors { field message } } } }"""
CREATE = """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename
  ... on VerdictPending { example { id } } ... on Error { message } } }"""


def backend_request(question: str) -> dict[str, Any]:
    """The streamed chat request the server's ``openai`` backend sends the target for ``question``."""
    return {
        "model": "fake",
        "messages": [{"role": "user", "content": question}],
        "temperature": 0,
        "max_tokens": 64,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def _generation(http: httpx.AsyncClient, target: str, question: str) -> float:
    """Seconds for the target engine to stream the answer, as the server's backend asks for it."""
    body = backend_request(question)
    started = time.perf_counter()
    async with http.stream("POST", f"{target}/v1/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if line.strip() == "data: [DONE]":
                break
    return time.perf_counter() - started


async def run(ctx: Context) -> Result:
    from dynaforge.inference.fakes import fake_openai_app

    target, target_server, target_thread = _serve(fake_openai_app(lambda p: ANSWER, ttft_s=0.2, token_s=0.01))
    judge, judge_server, judge_thread = _serve(
        fake_openai_app(lambda p: json.dumps({"fooled": True, "rationale": "It does not answer."}), ttft_s=1.0)
    )
    code = f"g2-{uuid.uuid4().hex[:8]}"
    arrived: dict[str, float] = {}
    sent: dict[str, float] = {}
    every_verdict = asyncio.Event()
    refused: list[str] = []
    reader: asyncio.Task[None] | None = None
    try:
        declared = await graphql(
            ctx.http,
            ctx.server,
            DECLARE,
            ctx.server.admin_token,
            input={"definition": _declaration(code, target, judge)},
        )
        if declared["declareTask"]["__typename"] != "TaskDeclared":
            raise RuntimeError(f"declareTask: {declared['declareTask']}")
        ws = await websockets.connect(
            ctx.server.graphql_url.replace("http://", "ws://"), subprotocols=["graphql-transport-ws"]
        )
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {ctx.server.admin_token}"}})
        )
        await asyncio.wait_for(ws.recv(), 10)
        query = f'subscription {{ verdictDecided(taskCode: "{code}") {{ ... on Example {{ id fooled }} }} }}'
        await ws.send(json.dumps({"type": "subscribe", "id": "1", "payload": {"query": query}}))

        async def read() -> None:
            async for raw in ws:
                message = json.loads(raw)
                if message.get("type") == "error":  # a refused subscription: say why, rather than count 0 events
                    refused.append(json.dumps(message.get("payload"))[:300])
                    every_verdict.set()
                if message.get("type") == "next":
                    event = (message["payload"].get("data") or {}).get("verdictDecided")
                    if event:
                        arrived[event["id"]] = time.monotonic()
                        if len(sent) == RUNS and set(sent) <= set(arrived):
                            every_verdict.set()

        reader = asyncio.create_task(read())
        await asyncio.sleep(0.3)
        async with httpx.AsyncClient(timeout=30, trust_env=False) as engine_http:
            await _generation(engine_http, target, "warm-up")
            await graphql(
                ctx.http,
                ctx.server,
                CREATE,
                ctx.server.admin_token,
                input={"taskCode": code, "fields": {"question": "warm-up?"}},
            )
            generation, created = [], []
            for i in range(RUNS):
                generation.append(await _generation(engine_http, target, f"question {i}?"))
                started = time.perf_counter()
                answer = await graphql(
                    ctx.http,
                    ctx.server,
                    CREATE,
                    ctx.server.admin_token,
                    input={"taskCode": code, "fields": {"question": f"question {i}?"}},
                )
                created.append(time.perf_counter() - started)
                result = answer["createExample"]
                if result["__typename"] != "VerdictPending":
                    raise RuntimeError(f"createExample answered {result}")
                sent[result["example"]["id"]] = time.monotonic()
        if not set(sent) <= set(arrived):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(every_verdict.wait(), VERDICT_WAIT_S)
        await ws.close()
    finally:
        if reader is not None:
            reader.cancel()
        for server, thread in ((target_server, target_thread), (judge_server, judge_thread)):
            server.should_exit = True
            thread.join(5)
    gen, create = statistics.median(generation), statistics.median(created)
    ratio = create / gen
    verdicts = sum(1 for example_id in sent if example_id in arrived)
    return Result(
        ID,
        f"createExample median {create * 1000:.0f} ms, generation median {gen * 1000:.0f} ms, ratio {ratio:.2f}; "
        f"verdicts as events {verdicts}/{len(sent)} (judge takes 1 s)"
        + (f"; the subscription was refused: {refused[0]}" if refused else ""),
        f"≤ {RATIO_TARGET} × generation, every verdict as an event",
        ratio <= RATIO_TARGET and verdicts == len(sent),
    )
