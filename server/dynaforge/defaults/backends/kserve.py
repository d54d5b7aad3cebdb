"""The ``kserve`` backend: a model served over the Open Inference Protocol (KServe v2), which Triton, KServe,
MLServer and Seldon speak, so a model a team already serves needs no adapter.

A batch of model inputs becomes one ``POST {url}/v2/models/{model}[/versions/{version}]/infer`` whose input tensors
are the model input's fields (one 1-D tensor per field, named as the field or as ``inputs`` maps it; text as
``BYTES``, whole numbers as ``INT64``, other numbers as ``FP64``, booleans as ``BOOL``, anything else as JSON text).
``outputs`` maps each target field to the output tensor holding it (a 1-D tensor, one value per input; a 2-D one
gives each input its row); ``probabilities`` names a 2-D tensor of class probabilities and the labels of its
columns. The health check is ``GET /v2/health/ready`` and ``GET /v2/models/{model}/ready``.

Like the ``http`` backend, the URL goes through the outbound policy and errors say what failed by path, status and
size, never what the server answered.
"""

from __future__ import annotations

import itertools
import json
from typing import Any
from urllib.parse import quote

from dynaforge.defaults.backends.common import is_int, is_name, is_number, unknown_keys
from dynaforge.defaults.backends.http import TRANSPORT_SCHEMA, HttpPredictor, RemoteBackend, _body, transport_problems
from dynaforge.hookspecs import hookimpl
from dynaforge.inference.backends import InferenceError

_KEYS = {
    "url",
    "model",
    "version",
    "inputs",
    "outputs",
    "probabilities",
    "headers",
    "timeout_s",
    "retries",
    "backoff_s",
    "max_batch",
}
_ids = itertools.count(1)


def tensor(name: str, values: list[Any]) -> dict[str, Any]:
    """One input tensor of the values of a field across a batch (see the module's docstring for the types)."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return {"name": name, "shape": [len(values)], "datatype": "BOOL", "data": [bool(v) for v in values]}
    if present and all(is_int(v) for v in present):
        return {"name": name, "shape": [len(values)], "datatype": "INT64", "data": [v or 0 for v in values]}
    if present and all(is_number(v) for v in present):
        return {"name": name, "shape": [len(values)], "datatype": "FP64", "data": [float(v or 0) for v in values]}
    text = [v if isinstance(v, str) else "" if v is None else json.dumps(v, ensure_ascii=False) for v in values]
    return {"name": name, "shape": [len(values)], "datatype": "BYTES", "data": text}


def rows(output: dict[str, Any], count: int, where: str) -> list[Any]:
    """An output tensor's values per input: ``count`` values (1-D) or rows (2-D, ``[count, k]``)."""
    shape, data = output.get("shape"), output.get("data")
    name = output.get("name")
    if not isinstance(shape, list) or not all(is_int(d) for d in shape) or not isinstance(data, list):
        raise InferenceError(f"{where}: output tensor {name!r} lacks a shape or data")
    if not shape or shape[0] != count:
        raise InferenceError(f"{where}: output tensor {name!r} has shape {shape}, expected {count} rows")
    if len(shape) == 1 and len(data) == count:
        return list(data)
    width = 1
    for d in shape[1:]:
        width *= d
    if len(shape) == 2 and len(data) == count * width:
        return [data[i * width : (i + 1) * width] for i in range(count)]
    raise InferenceError(f"{where}: output tensor {name!r} has shape {shape} and {len(data)} values")


class KServePredictor(HttpPredictor):
    """A client of one model on an Open Inference Protocol server."""

    def __init__(self, config: dict[str, Any]):
        super().__init__(config)
        self.model = config["model"]
        version = config.get("version")
        self._model_path = f"/v2/models/{quote(self.model, safe='')}" + (
            f"/versions/{quote(str(version), safe='')}" if version else ""
        )
        self.input_names: dict[str, str] = dict(config.get("inputs") or {})
        self.outputs: dict[str, str] = dict(config["outputs"])
        self.probabilities: dict[str, Any] | None = config.get("probabilities")

    def check_health(self) -> dict[str, Any]:
        import httpx

        for path in ("/v2/health/ready", self._model_path + "/ready"):
            try:
                response = self._client.get(self._base + path, extensions=self.target.extensions())
            except httpx.HTTPError as exc:
                raise InferenceError(
                    f'the model server is unreachable ({type(exc).__name__}); start it or fix "url"'
                ) from exc
            if response.status_code != 200:
                what = "the model" if path != "/v2/health/ready" else "the server"
                raise InferenceError(
                    f"GET {path} answered {response.status_code} with {_body(response)}: {what} is not ready"
                )
        return {"status": "ok"}

    def request_body(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        fields = list(dict.fromkeys(name for item in inputs for name in item))
        tensors = [tensor(self.input_names.get(f, f), [item.get(f) for item in inputs]) for f in fields]
        wanted = list(
            dict.fromkeys([*self.outputs.values(), *([self.probabilities["tensor"]] if self.probabilities else [])])
        )
        return {"id": str(next(_ids)), "inputs": tensors, "outputs": [{"name": n} for n in wanted]}

    def _predict_chunk(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        path = self._model_path + "/infer"
        where = f"POST {path}"
        given = self._outputs(path, self.request_body(inputs))
        by_name = {o.get("name"): o for o in given if isinstance(o, dict)}
        count = len(inputs)
        results: list[dict[str, Any]] = [{} for _ in inputs]
        for field, name in self.outputs.items():
            if name not in by_name:
                raise InferenceError(f"{where} answered no output tensor {name!r} (for {field})")
            for result, value in zip(results, rows(by_name[name], count, where), strict=True):
                result[field] = value
        if self.probabilities:
            name, labels = self.probabilities["tensor"], self.probabilities["labels"]
            if name not in by_name:
                raise InferenceError(f"{where} answered no output tensor {name!r} (probabilities)")
            for result, row in zip(results, rows(by_name[name], count, where), strict=True):
                if not isinstance(row, list) or len(row) != len(labels):
                    raise InferenceError(f"{where}: tensor {name!r} does not give one value per label")
                result["probabilities"] = dict(zip(labels, row, strict=True))
        return results


class KServeBackend(RemoteBackend):
    """A model on an Open Inference Protocol (KServe v2) server: Triton, KServe, MLServer, Seldon.

    Config: ``url`` (the server's base), ``model`` (its name there), ``version`` (optional), ``inputs`` (field ->
    input tensor name, where they differ), ``outputs`` (target field -> output tensor name; required),
    ``probabilities`` (``{"tensor": name, "labels": [...]}``), ``headers``, ``timeout_s`` (10), ``retries`` (2),
    ``backoff_s`` (0.2), ``max_batch``.
    """

    name = "kserve"
    description = (
        "A model served over the Open Inference Protocol (KServe v2: Triton, KServe, MLServer, Seldon): fields as "
        "input tensors, target fields from output tensors."
    )
    config_schema = {
        "type": "object",
        "required": ["url", "model", "outputs"],
        "additionalProperties": False,
        "properties": {
            "url": {"type": "string", "format": "uri", "description": "The server's http(s) base address."},
            "model": {"type": "string", "minLength": 1},
            "version": {"type": "string", "minLength": 1},
            "inputs": {"type": "object", "additionalProperties": {"type": "string"}},
            "outputs": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "string"}},
            "probabilities": {
                "type": "object",
                "required": ["tensor", "labels"],
                "properties": {"tensor": {"type": "string"}, "labels": {"type": "array", "items": {"type": "string"}}},
            },
            **TRANSPORT_SCHEMA,
            "max_batch": {"type": "integer", "minimum": 1},
        },
    }

    predictor = KServePredictor
    url_words = "the server's http:// or https:// address"

    def check_config(self, config: dict[str, Any]) -> list[str]:
        problems = unknown_keys(config, _KEYS) + self.url_problems(config)
        if not is_name(config.get("model")):
            problems.append('config needs "model": the model\'s name on the server')
        if "version" in config and not is_name(config["version"]):
            problems.append('"version" must be a non-empty string')
        for key in ("inputs", "outputs"):
            value = config.get(key, {} if key == "inputs" else None)
            if not isinstance(value, dict) or not all(is_name(k) and is_name(v) for k, v in value.items()):
                problems.append(f'"{key}" must be an object of field name -> tensor name')
        if isinstance(config.get("outputs"), dict) and not config["outputs"]:
            problems.append('"outputs" must name at least one target field\'s output tensor')
        probabilities = config.get("probabilities")
        if probabilities is not None and not (
            isinstance(probabilities, dict)
            and set(probabilities) == {"tensor", "labels"}
            and is_name(probabilities["tensor"])
            and isinstance(probabilities["labels"], list)
            and probabilities["labels"]
            and all(is_name(label) for label in probabilities["labels"])
        ):
            problems.append('"probabilities" must be {"tensor": name, "labels": [label, ...]}')
        problems += transport_problems(config)
        if "max_batch" in config and (not is_int(config["max_batch"]) or config["max_batch"] < 1):
            problems.append('"max_batch" must be a positive integer')
        return problems


@hookimpl(trylast=True)
def register_model_backends(register: Any) -> None:
    register(KServeBackend())
