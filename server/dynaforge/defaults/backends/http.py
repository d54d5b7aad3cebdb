"""The ``http`` backend: a remote model server speaking the JSON contract of docs/model-server.md (which
:mod:`dynaforge.inference.http_server` implements). httpx is imported when a model loads, not when the backend is
registered, so processes that never call a model server do not pay for it."""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from dynaforge.defaults.backends.common import estimate_tokens, is_int, is_name, is_number, unknown_keys
from dynaforge.hookspecs import hookimpl
from dynaforge.inference.backends import InferenceError, InferenceTimeout, ModelBackend, Predictor
from dynaforge.outbound import OutboundPolicy, OutboundRefused

if TYPE_CHECKING:
    import httpx


RETRY_STATUSES = frozenset({502, 503, 504})
_HTTP_KEYS = {"url", "timeout_s", "retries", "backoff_s", "headers", "max_batch"}
_MAX_BACKOFF_S = 5.0
_REFUSED_HOST = (
    "its host does not resolve to a public address, and the server calls loopback, private, link-local or otherwise "
    "internal addresses only when its operator allowlists them (DYNAFORGE_OUTBOUND_ALLOW)"
)
# A name that does not resolve and one that resolves to an internal address read alike: a task owner who names a
# target's url must not learn from annotators' errors which internal names exist.
_REFUSALS = {
    "format": "it must be an absolute http or https URL",
    "credentials": "it must not carry a user name or password (send credentials in headers)",
    "dns": _REFUSED_HOST,
    "internal": _REFUSED_HOST,
}
MAX_TIMEOUT_S = 60.0  # per request: a model server that takes longer holds the job threads hostage


def _body(response: httpx.Response) -> str:
    """What an error may say about a response body: its size, never its content (the body belongs to the remote
    service, and the error reaches submitters and annotators)."""
    size = len(response.content)
    return f"a {size}-byte body" if size else "an empty body"


class HttpPredictor:
    """A client of a remote model server (``POST {url}/predict``, ``GET {url}/health``).

    ``predict`` is called from an inference thread: it uses one pooled :class:`httpx.Client`, splits batches
    larger than ``max_batch``, and retries connection errors, timeouts and 502/503/504 with exponential backoff
    and jitter (never a 4xx or a 500). Every failure raises :class:`InferenceError` (:class:`InferenceTimeout`
    when the server did not answer in time) that says what went wrong by path, status, size and time only: never
    the server's address or what it answered (errors reach submitters and annotators).

    It only waits on the network (``io_bound``): the inference process runs it on threads of its own, so a slow
    model server (a judge taking seconds) never holds up the models that compute here, nor another remote one.

    The URL goes through the outbound policy (:mod:`dynaforge.outbound`) when the predictor is made: an internal
    address is refused unless the operator allowlisted it, and every request goes to the address that was checked
    (the ``Host`` header and, for https, the certificate check keep the name), without following redirects.
    """

    io_bound = True  # dynaforge.inference.backends.is_io_bound
    #: The statuses a request is retried on (with backoff): a proxy's or an overloaded server's.
    retry_statuses: frozenset[int] = RETRY_STATUSES

    def __init__(self, config: dict[str, Any], policy: OutboundPolicy | None = None):
        self.url = config["url"].rstrip("/")
        try:
            self.target = (policy or OutboundPolicy.from_environment()).resolve(self.url)
        except OutboundRefused as exc:
            # Not exc.message: it names the host, and this error reaches annotators of a task whose target it is.
            raise InferenceError(
                f"the server's outbound policy refuses the model server's url: {_REFUSALS[exc.rule]}"
            ) from None
        self._base = self.target.pinned_url.rstrip("/")
        self.timeout_s = float(config.get("timeout_s", 10.0))
        self.retries = int(config.get("retries", 2))
        self.backoff_s = float(config.get("backoff_s", 0.2))
        self.max_batch: int | None = config.get("max_batch")
        import httpx

        headers = {**(config.get("headers") or {}), **self.target.headers()}
        self._client = httpx.Client(timeout=self.timeout_s, headers=headers, follow_redirects=False, trust_env=False)

    def length(self, model_input: dict[str, Any]) -> int:
        return estimate_tokens(list(model_input.values()))

    def close(self) -> None:
        """Close pooled connections."""
        self._client.close()

    def check_health(self) -> dict[str, Any]:
        """``GET /health`` once; raises :class:`InferenceError` unless the server answers ``{"status": "ok"}``."""
        import httpx

        url = "GET /health"
        try:
            response = self._client.get(self._base + "/health", extensions=self.target.extensions())
        except httpx.HTTPError as exc:
            raise InferenceError(
                f'the model server is unreachable ({type(exc).__name__}); start it or fix "url"'
            ) from exc
        if response.status_code != 200:
            raise InferenceError(f"{url} answered {response.status_code} with {_body(response)}")
        try:
            body = response.json()
        except ValueError as exc:
            raise InferenceError(f"{url} answered {_body(response)} that is not JSON") from exc
        if not isinstance(body, dict) or body.get("status") != "ok":
            raise InferenceError(f'{url} did not answer {{"status": "ok"}}')
        return body

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: between half and all of ``backoff_s * 2**attempt`` (capped)."""
        delay = min(_MAX_BACKOFF_S, self.backoff_s * 2**attempt)
        return delay * (0.5 + random.random() / 2)

    def _post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        """POST with retries on transient failures; returns the first non-transient response."""
        import httpx

        url = f"POST {path}"
        attempts = self.retries + 1
        for attempt in range(attempts):
            cause: Exception | None = None
            started = time.perf_counter()
            try:
                response = self._client.post(self._base + path, json=body, extensions=self.target.extensions())
            except httpx.TimeoutException as exc:
                error: type[InferenceError] = InferenceTimeout
                message, cause = f"{url} did not answer within {self.timeout_s:g}s ({type(exc).__name__})", exc
            except httpx.TransportError as exc:
                error, message, cause = InferenceError, f"{url} failed ({type(exc).__name__})", exc
            else:
                if response.status_code not in self.retry_statuses:
                    return response
                elapsed = (time.perf_counter() - started) * 1000
                error = InferenceError
                message = f"{url} answered {response.status_code} with {_body(response)} after {elapsed:.0f} ms"
            if attempt + 1 < attempts:
                time.sleep(self._backoff(attempt))
        raise error(f"{message} (after {attempts} attempt{'s' if attempts > 1 else ''})") from cause

    def _outputs(self, path: str, body: dict[str, Any]) -> list[Any]:
        """POST ``body`` to ``path`` and read the ``outputs`` list of its JSON answer; InferenceError (naming the path,
        the status and the answer's size only) for any other answer."""
        where = f"POST {path}"
        response = self._post(path, body)
        if response.status_code != 200:
            raise InferenceError(f"{where} answered {response.status_code} with {_body(response)}")
        try:
            answer = response.json()
        except ValueError as exc:
            raise InferenceError(f"{where} answered {_body(response)} that is not JSON") from exc
        outputs = answer.get("outputs") if isinstance(answer, dict) else None
        if not isinstance(outputs, list):
            raise InferenceError(f'{where} answered no "outputs" list')
        return outputs

    def _predict_chunk(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        url = "POST /predict"
        outputs = self._outputs("/predict", {"inputs": inputs})
        if len(outputs) != len(inputs):
            raise InferenceError(f"{url}: expected {len(inputs)} outputs, got {len(outputs)}")
        bad = next((i for i, o in enumerate(outputs) if not isinstance(o, dict)), None)
        if bad is not None:
            raise InferenceError(f"{url}: output {bad} is {type(outputs[bad]).__name__}, expected an object")
        return outputs

    def predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        size = self.max_batch or max(1, len(inputs))
        outputs: list[dict[str, Any]] = []
        for begin in range(0, len(inputs), size):
            outputs.extend(self._predict_chunk(inputs[begin : begin + size]))
        return outputs


def transport_problems(config: dict[str, Any]) -> list[str]:
    """What is wrong with the settings every HTTP-speaking backend shares: ``timeout_s``, ``retries``, ``backoff_s``
    and ``headers``."""
    problems = []
    if "timeout_s" in config and (not is_number(config["timeout_s"]) or not 0 < config["timeout_s"] <= MAX_TIMEOUT_S):
        problems.append(f'"timeout_s" must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:g}')
    if "retries" in config and (not is_int(config["retries"]) or not 0 <= config["retries"] <= 10):
        problems.append('"retries" must be an integer from 0 to 10')
    if "backoff_s" in config and (not is_number(config["backoff_s"]) or not 0 <= config["backoff_s"] <= 5):
        problems.append('"backoff_s" must be a number of seconds from 0 to 5')
    headers = config.get("headers", {})
    if not isinstance(headers, dict) or not all(is_name(k) and isinstance(v, str) for k, v in headers.items()):
        problems.append('"headers" must be an object of header name -> string value')
    return problems


#: The JSON Schema of the settings in :func:`transport_problems`.
TRANSPORT_SCHEMA: dict[str, Any] = {
    "timeout_s": {
        "type": "number",
        "exclusiveMinimum": 0,
        "maximum": MAX_TIMEOUT_S,
        "description": "Seconds per request (at most 60).",
    },
    "retries": {"type": "integer", "minimum": 0, "maximum": 10, "description": "Retries on failure."},
    "backoff_s": {
        "type": "number",
        "minimum": 0,
        "maximum": 5,
        "description": "Seconds before the first retry (at most 5).",
    },
    "headers": {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": "Header name -> value, sent with every request (e.g. an API key).",
    },
}


class RemoteBackend(ModelBackend):
    """What the backends of models behind a URL share: the URL is what the outbound policy checks, a configuration is
    checked before anything loads, and a model loads by making its client (``predictor``, called with the
    configuration) and asking its server once whether it is up."""

    predictor: Any = None  # the predictor class: predictor(config) has check_health() and close()
    url_words = "the model server's http:// or https:// address"

    def outbound_urls(self, config: dict[str, Any]) -> list[str]:
        url = config.get("url")
        return [url] if isinstance(url, str) else []

    def url_problems(self, config: dict[str, Any]) -> list[str]:
        url = config.get("url")
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            return [f'config needs "url": {self.url_words}']
        return []

    def load(self, config: dict[str, Any]) -> Predictor:
        problems = self.check_config(config)
        if problems:
            raise ValueError("; ".join(problems))
        predictor = self.predictor(config)
        try:
            predictor.check_health()
        except BaseException:
            predictor.close()
            raise
        return predictor


class HttpBackend(RemoteBackend):
    """A model served over HTTP with the JSON contract of docs/model-server.md.

    Config: ``url`` (http or https), ``timeout_s`` (10), ``retries`` (2), ``backoff_s`` (0.2, the first retry's
    delay, doubled each time), ``headers`` (sent with every request, e.g. ``Authorization``), ``max_batch``
    (larger batches are sent in several requests).
    """

    name = "http"
    description = 'A remote model server: POST {url}/predict with {"inputs": [...]}, GET {url}/health.'

    config_schema = {
        "type": "object",
        "required": ["url"],
        "additionalProperties": False,
        "properties": {
            "url": {"type": "string", "format": "uri", "description": "The model server's http(s) address."},
            **TRANSPORT_SCHEMA,
            "max_batch": {"type": "integer", "minimum": 1, "description": "The most inputs per request."},
        },
    }

    predictor = HttpPredictor

    def check_config(self, config):
        problems = unknown_keys(config, _HTTP_KEYS) + self.url_problems(config)
        problems += transport_problems(config)
        if "max_batch" in config and (not is_int(config["max_batch"]) or config["max_batch"] < 1):
            problems.append('"max_batch" must be a positive integer')
        return problems


@hookimpl(trylast=True)
def register_model_backends(register: Any) -> None:
    register(HttpBackend())
