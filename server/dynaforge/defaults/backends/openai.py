"""The ``openai`` backend: a model that writes, behind any OpenAI-compatible chat or completions endpoint (vLLM,
llama.cpp's server, Ollama, TGI, a provider).

Each model input is put into a prompt by a template over the task's fields, sent with the configured sampling
settings, and the reply is read into the task's target fields by a parser: the whole text into one field, a JSON
object, or a regular expression's groups. Replies are streamed (server-sent events), so the time to the first token
is measured; every output carries ``generation``: the raw reply, its completion tokens (the server's count, or the
streamed chunks when it gives none), the time to first token, the whole time and the finish reason. Each
streamed piece also goes to the prediction's token sink (:func:`dynaforge.inference.backends.emit_token`): that is
how an annotator sees the reply as it is written.

Like the ``http`` backend, the URL goes through the outbound policy, requests go to the checked address without
following redirects, and errors say what failed by path, status and size only, never what the server answered.
"""

from __future__ import annotations

import json
import re
import string
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from dynaforge.defaults.backends.common import estimate_tokens, is_int, is_name, is_number, unknown_keys
from dynaforge.defaults.backends.http import (
    RETRY_STATUSES,
    TRANSPORT_SCHEMA,
    HttpPredictor,
    RemoteBackend,
    _body,
    transport_problems,
)
from dynaforge.hookspecs import hookimpl
from dynaforge.inference.backends import InferenceError, InferenceTimeout, UnusableOutput, emit_token

#: How a reply becomes the task's target fields.
PARSERS = {
    "text": "the whole reply (stripped) is the value of `field`",
    "json": "the reply is a JSON object of target fields (a ```json fence around it is allowed)",
    "regex": "`pattern` is searched in the reply: its named groups are fields, or its first group is `field`",
}
APIS = ("chat", "completions")
_KEYS = {
    "url",
    "model",
    "api",
    "prompt",
    "system",
    "parse",
    "temperature",
    "top_p",
    "seed",
    "max_tokens",
    "stop",
    "stream",
    "headers",
    "timeout_s",
    "retries",
    "backoff_s",
    "concurrency",
}
MAX_CONCURRENCY = 16
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def template_fields(template: str) -> list[str]:
    """The field names a prompt template uses (``{name}``; ``{{`` and ``}}`` are literal braces). ValueError when it
    is not a template of plain names."""
    names = []
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or spec or conversion:
            raise ValueError(f"prompt placeholder {{{name}}} must be a plain field name, like {{question}}")
        names.append(name)
    return names


def render(template: str, model_input: dict[str, Any]) -> str:
    """The prompt for one model input: each ``{field}`` replaced by its value (JSON for what is not text)."""
    values = {}
    for name in template_fields(template):
        if name not in model_input:
            raise UnusableOutput(f"the prompt template names {{{name}}}, which the model input lacks")
        value = model_input[name]
        values[name] = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return template.format_map(values)


def parse_reply(parse: dict[str, Any], reply: str) -> dict[str, Any]:
    """The target fields a reply gives, by the ``parse`` setting (:data:`PARSERS`); UnusableOutput when it gives
    none."""
    kind = parse.get("type", "text")
    if kind == "text":
        return {parse["field"]: reply.strip()}
    if kind == "json":
        text = reply.strip()
        fenced = _FENCE.match(text)
        try:
            value = json.loads(fenced.group(1) if fenced else text)
        except ValueError:
            raise UnusableOutput(f"the reply is not JSON ({len(reply)} characters)") from None
        if not isinstance(value, dict):
            raise UnusableOutput(f"the reply is JSON {type(value).__name__}, not an object of fields")
        return value
    match = re.search(parse["pattern"], reply, re.DOTALL)
    if match is None:
        raise UnusableOutput(f"the reply ({len(reply)} characters) does not match the parser's pattern")
    named = {k: v.strip() for k, v in match.groupdict().items() if v is not None}
    if named:
        return named
    group = match.group(1) if match.re.groups else match.group(0)
    return {parse["field"]: group.strip()}


class OpenAIPredictor(HttpPredictor):
    """A client of an OpenAI-compatible endpoint (``POST {url}/chat/completions`` or ``{url}/completions``,
    ``GET {url}/models`` as the health check). A batch is sent as concurrent requests (``concurrency``), each retried
    like the ``http`` backend's (also on 429) until its first byte arrives."""

    retry_statuses = RETRY_STATUSES | {429}

    def __init__(self, config: dict[str, Any]):
        super().__init__(config)
        self.config = config
        self.api = config.get("api", "chat")
        self.prompt = config.get("prompt", "")
        self.parse = dict(config["parse"])
        self.stream = bool(config.get("stream", True))
        self.concurrency = int(config.get("concurrency", 4))
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="openai")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        super().close()

    def length(self, model_input: dict[str, Any]) -> int:
        return estimate_tokens([self.prompt, *model_input.values()]) + int(self.config.get("max_tokens", 256))

    def check_health(self) -> dict[str, Any]:
        """``GET /models`` once: any answer but a 5xx says the server is up (some providers list no models)."""
        import httpx

        try:
            response = self._client.get(self._base + "/models", extensions=self.target.extensions())
        except httpx.HTTPError as exc:
            raise InferenceError(
                f'the model server is unreachable ({type(exc).__name__}); start it or fix "url"'
            ) from exc
        if response.status_code >= 500:
            raise InferenceError(f"GET /models answered {response.status_code} with {_body(response)}")
        return {"status": "ok"}

    def request_body(self, model_input: dict[str, Any]) -> dict[str, Any]:
        """What is sent for one model input."""
        prompt = render(self.prompt, model_input)
        body: dict[str, Any] = {"model": self.config["model"]}
        if self.api == "chat":
            messages = [{"role": "system", "content": self.config["system"]}] if self.config.get("system") else []
            body["messages"] = [*messages, {"role": "user", "content": prompt}]
        else:
            system = self.config.get("system")
            body["prompt"] = f"{system}\n\n{prompt}" if system else prompt
        for key in ("temperature", "top_p", "seed", "max_tokens", "stop"):
            if key in self.config:
                body[key] = self.config[key]
        body.setdefault("max_tokens", 256)
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def _path(self) -> str:
        return "/chat/completions" if self.api == "chat" else "/completions"

    def _text(self, choice: dict[str, Any], streamed: bool) -> str:
        if self.api == "completions":
            text = choice.get("text")
        else:
            text = (choice.get("delta" if streamed else "message") or {}).get("content")
        return text if isinstance(text, str) else ""

    def _streamed(self, body: dict[str, Any]) -> dict[str, Any]:
        """One streamed completion: its text, tokens, time to first token and finish reason."""
        import httpx

        path = self._path()
        where = f"POST {path}"
        attempts = self.retries + 1
        for attempt in range(attempts):
            started = time.perf_counter()
            first: float | None = None
            parts: list[str] = []
            chunks, tokens, finish, done = 0, None, None, False
            try:
                with self._client.stream(
                    "POST", self._base + path, json=body, extensions=self.target.extensions()
                ) as response:
                    if response.status_code in self.retry_statuses and attempt + 1 < attempts:
                        time.sleep(self._backoff(attempt))
                        continue
                    if response.status_code != 200:
                        response.read()
                        raise InferenceError(f"{where} answered {response.status_code} with {_body(response)}")
                    for line in response.iter_lines():
                        if not line.startswith("data:"):
                            continue
                        data = line[5:].strip()
                        if data == "[DONE]":
                            done = True
                            break
                        try:
                            event = json.loads(data)
                        except ValueError:
                            raise InferenceError(f"{where} streamed an event that is not JSON") from None
                        usage = event.get("usage") if isinstance(event, dict) else None
                        if isinstance(usage, dict) and is_int(usage.get("completion_tokens")):
                            tokens = usage["completion_tokens"]
                        choices = event.get("choices") if isinstance(event, dict) else None
                        if not choices:
                            continue
                        choice = choices[0]
                        text = self._text(choice, streamed=True)
                        if text:
                            if first is None:
                                first = time.perf_counter()
                            parts.append(text)
                            chunks += 1
                            emit_token(text)
                        finish = choice.get("finish_reason") or finish
            except httpx.TimeoutException as exc:
                if attempt + 1 < attempts and first is None:
                    time.sleep(self._backoff(attempt))
                    continue
                raise InferenceTimeout(f"{where} did not answer within {self.timeout_s:g}s") from exc
            except httpx.TransportError as exc:
                if attempt + 1 < attempts and first is None:
                    time.sleep(self._backoff(attempt))
                    continue
                raise InferenceError(f"{where} failed ({type(exc).__name__})") from exc
            ended = time.perf_counter()
            if not done and finish is None:  # the server closed the stream before the reply ended
                raise InferenceError(f"{where}: the stream ended before the reply did ({chunks} chunks)")
            return {
                "text": "".join(parts),
                "tokens": tokens if tokens is not None else chunks,
                "ttft_ms": round(((first or ended) - started) * 1000, 3),
                "total_ms": round((ended - started) * 1000, 3),
                "finish_reason": finish,
            }
        raise InferenceError(f"{where} kept answering a status to retry (after {attempts} attempts)")

    def _whole(self, body: dict[str, Any]) -> dict[str, Any]:
        """One completion without streaming (``stream: false``): the first token's time is the whole time."""
        path = self._path()
        started = time.perf_counter()
        response = self._post(path, body)
        ended = time.perf_counter()
        if response.status_code != 200:
            raise InferenceError(f"POST {path} answered {response.status_code} with {_body(response)}")
        try:
            data = response.json()
            choice = data["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            raise InferenceError(f"POST {path} answered {_body(response)} without choices") from None
        usage = data.get("usage") if isinstance(data, dict) else None
        tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
        text = self._text(choice, streamed=False)
        elapsed = round((ended - started) * 1000, 3)
        return {
            "text": text,
            "tokens": tokens if is_int(tokens) else max(1, estimate_tokens([text]) - 3) if text else 0,
            "ttft_ms": elapsed,
            "total_ms": elapsed,
            "finish_reason": choice.get("finish_reason"),
        }

    def generate(self, model_input: dict[str, Any]) -> dict[str, Any]:
        """One model input's output: its target fields as the parser reads them, and ``generation``. A reply the
        parser cannot read (or a prompt that cannot be made) is this input's ``unusable`` output, not the batch's
        failure."""
        try:
            body = self.request_body(model_input)
        except UnusableOutput as exc:
            return {"unusable": str(exc)}
        generation = self._streamed(body) if self.stream else self._whole(body)
        try:
            output = parse_reply(self.parse, generation["text"])
        except UnusableOutput as exc:
            output = {"unusable": str(exc)}
        output["generation"] = generation
        return output

    def predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(inputs) == 1:
            return [self.generate(inputs[0])]
        return list(self._pool.map(self.generate, inputs))


def _check_parse(parse: Any) -> list[str]:
    if not isinstance(parse, dict) or parse.get("type", "text") not in PARSERS:
        return [f'"parse" must be an object with "type" one of {", ".join(PARSERS)}']
    kind = parse.get("type", "text")
    allowed = {"type", "field", "pattern"} if kind == "regex" else {"type", "field"} if kind == "text" else {"type"}
    problems = [f'"parse" of type {kind} takes no {k!r}' for k in sorted(set(parse) - allowed)]
    if kind == "text" and not is_name(parse.get("field")):
        problems.append('"parse" of type text needs "field": the target field the reply is written into')
    if kind == "regex":
        try:
            pattern = re.compile(parse.get("pattern") or "")
        except (re.error, TypeError) as exc:
            return [*problems, f'"parse.pattern" is not a regular expression: {exc}']
        if not parse.get("pattern"):
            problems.append('"parse" of type regex needs "pattern"')
        elif not pattern.groupindex and not is_name(parse.get("field")):
            problems.append('"parse" of type regex needs named groups, or "field" for its first group')
    return problems


class OpenAIBackend(RemoteBackend):
    """A model behind an OpenAI-compatible API.

    Config: ``url`` (the API's base, e.g. ``http://127.0.0.1:8080/v1``), ``model`` (sent as the model's name),
    ``api`` (``chat``, the default, or ``completions``), ``prompt`` (a template over the model input's fields:
    ``"Translate into English: {source}"``), ``system`` (a system prompt), ``parse`` (:data:`PARSERS`), sampling:
    ``temperature``, ``top_p``, ``seed``, ``max_tokens`` (256), ``stop``; ``stream`` (true), ``headers`` (e.g.
    ``Authorization: Bearer ...``), ``timeout_s`` (30), ``retries`` (2), ``backoff_s`` (0.2), ``concurrency`` (4
    requests at once for a batch).
    """

    name = "openai"
    description = (
        "A model that writes, behind an OpenAI-compatible chat or completions API (vLLM, llama.cpp, Ollama, TGI, a "
        "provider): a prompt template over the task's fields, a parser from the reply to its target fields."
    )
    config_schema = {
        "type": "object",
        "required": ["url", "model", "prompt", "parse"],
        "additionalProperties": False,
        "properties": {
            "url": {"type": "string", "format": "uri", "description": "The API's base URL, ending in /v1 usually."},
            "model": {"type": "string", "minLength": 1, "description": "The model name the server knows."},
            "api": {"enum": list(APIS), "description": "chat (messages) or completions (one prompt)."},
            "prompt": {"type": "string", "minLength": 1, "description": "Template: {field} is the field's value."},
            "system": {"type": "string", "description": "A system prompt (chat), or text put before the prompt."},
            "parse": {
                "type": "object",
                "description": "How the reply becomes target fields: "
                + "; ".join(f"{k}: {v}" for k, v in PARSERS.items()),
                "properties": {
                    "type": {"enum": list(PARSERS)},
                    "field": {"type": "string"},
                    "pattern": {"type": "string"},
                },
            },
            "temperature": {"type": "number", "minimum": 0, "maximum": 2},
            "top_p": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "seed": {"type": "integer"},
            "max_tokens": {"type": "integer", "minimum": 1, "maximum": 8192},
            "stop": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
            "stream": {"type": "boolean", "description": "Stream the reply (measures time to first token)."},
            **TRANSPORT_SCHEMA,
            "concurrency": {"type": "integer", "minimum": 1, "maximum": MAX_CONCURRENCY},
        },
    }

    url_words = "the API's http:// or https:// base, e.g. http://127.0.0.1:8080/v1"

    @staticmethod
    def predictor(config: dict[str, Any]) -> OpenAIPredictor:
        return OpenAIPredictor({"timeout_s": 30.0, **config})

    def check_config(self, config: dict[str, Any]) -> list[str]:
        problems = unknown_keys(config, _KEYS) + self.url_problems(config)
        if not is_name(config.get("model")):
            problems.append('config needs "model": the name the server knows the model by')
        if config.get("api", "chat") not in APIS:
            problems.append(f'"api" must be one of {", ".join(APIS)}')
        prompt = config.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            problems.append('config needs "prompt": a template such as "Translate into English: {source}"')
        else:
            try:
                template_fields(prompt)
            except ValueError as exc:
                problems.append(str(exc))
        if "system" in config and not isinstance(config["system"], str):
            problems.append('"system" must be text')
        problems += _check_parse(config.get("parse"))
        bounds = {"temperature": (0, 2), "top_p": (0, 1)}
        for key, (low, high) in bounds.items():
            if key in config and (not is_number(config[key]) or not low <= config[key] <= high):
                problems.append(f'"{key}" must be a number from {low} to {high}')
        if "seed" in config and not is_int(config["seed"]):
            problems.append('"seed" must be an integer')
        if "max_tokens" in config and (not is_int(config["max_tokens"]) or not 1 <= config["max_tokens"] <= 8192):
            problems.append('"max_tokens" must be an integer from 1 to 8192')
        stop = config.get("stop", [])
        if not isinstance(stop, list) or len(stop) > 4 or not all(is_name(s) for s in stop):
            problems.append('"stop" must be a list of at most 4 non-empty strings')
        if "stream" in config and not isinstance(config["stream"], bool):
            problems.append('"stream" must be true or false')
        problems += transport_problems(config)
        if "concurrency" in config and (
            not is_int(config["concurrency"]) or not 1 <= config["concurrency"] <= MAX_CONCURRENCY
        ):
            problems.append(f'"concurrency" must be an integer from 1 to {MAX_CONCURRENCY}')
        return problems


@hookimpl(trylast=True)
def register_model_backends(register: Any) -> None:
    register(OpenAIBackend())
