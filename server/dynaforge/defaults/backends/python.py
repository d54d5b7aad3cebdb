"""The ``python`` backend: a model given by an import path (baselines, tests, custom code)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dynaforge.defaults.backends.common import estimate_tokens, import_object
from dynaforge.hookspecs import hookimpl
from dynaforge.inference.backends import ModelBackend, Predictor


class _CallablePredictor:
    """Wraps a plain ``fn(inputs) -> outputs`` as a predictor."""

    def __init__(self, fn: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]):
        self._fn = fn

    def predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self._fn(inputs)

    def length(self, model_input: dict[str, Any]) -> int:
        return estimate_tokens(list(model_input.values()))


class PythonBackend(ModelBackend):
    """A model given by an import path.

    Config: ``{"callable": "pkg.mod:fn"}`` where ``fn(inputs) -> outputs`` handles a batch, or
    ``{"factory": "pkg.mod:load", "kwargs": {...}}`` where ``load(**kwargs)`` returns an object with ``predict``.
    A ``weights_artifact`` keyword names weights in the model store by digest (what a training recipe's factory
    takes); it is fetched, and its existence checked, like an uploaded model's artifact.
    """

    name = "python"
    description = "A Python callable or model factory given by an import path (baselines, tests, custom code)."

    config_schema = {
        "type": "object",
        "properties": {
            "callable": {"type": "string", "description": "pkg.module:attribute of a function inputs -> outputs."},
            "factory": {"type": "string", "description": "pkg.module:attribute that returns an object with predict()."},
            "kwargs": {"type": "object", "description": "Keyword arguments for the factory."},
        },
        "oneOf": [{"required": ["callable"]}, {"required": ["factory"]}],
    }

    def check_config(self, config):
        keys = {"callable", "factory"} & set(config)
        if len(keys) != 1:
            return ['config needs exactly one of "callable" or "factory" (an import path pkg.module:attribute)']
        if "kwargs" in config and not isinstance(config["kwargs"], dict):
            return ['"kwargs" must be an object']
        return []

    def artifacts(self, config: dict[str, Any]) -> list[str]:
        """A factory's ``weights_artifact`` keyword (a trained model's weights in the model store, by digest): the
        trusted process fetches it before the model's process loads it."""
        kwargs = config.get("kwargs")
        digest = kwargs.get("weights_artifact") if isinstance(kwargs, dict) else None
        return [digest] if digest is not None else []

    def load(self, config: dict[str, Any]) -> Predictor:
        problems = self.check_config(config)
        if problems:
            raise ValueError("; ".join(problems))
        if "callable" in config:
            return _CallablePredictor(import_object(config["callable"]))
        model = import_object(config["factory"])(**config.get("kwargs", {}))
        if not callable(getattr(model, "predict", None)):
            raise TypeError(f"{config['factory']} returned {type(model).__name__}, which has no predict() method")
        return model


@hookimpl(trylast=True)
def register_model_backends(register: Any) -> None:
    register(PythonBackend())
