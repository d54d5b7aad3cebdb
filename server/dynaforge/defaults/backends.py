"""Default model backends: ``python`` (an import path) and ``transformers`` (sequence classification)."""

from __future__ import annotations

import importlib
from typing import Any, Callable

from dynaforge.hookspecs import hookimpl
from dynaforge.inference.backends import ModelBackend, Predictor


def import_object(path: str) -> Any:
    """Import ``package.module:attribute`` (or ``package.module.attribute``)."""
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ValueError(f"{path!r} is not an import path of the form package.module:attribute")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class _CallablePredictor:
    def __init__(self, fn: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]):
        self._fn = fn

    def predict(self, inputs):
        return self._fn(inputs)


class PythonBackend(ModelBackend):
    """A model given by an import path.

    Config: ``{"callable": "pkg.mod:fn"}`` where ``fn(inputs) -> outputs`` handles a batch, or
    ``{"factory": "pkg.mod:load", "kwargs": {...}}`` where ``load(**kwargs)`` returns an object with ``predict``.
    """

    name = "python"
    description = "A Python callable or model factory given by an import path (baselines, tests, custom code)."

    def check_config(self, config):
        keys = {"callable", "factory"} & set(config)
        if len(keys) != 1:
            return ['config needs exactly one of "callable" or "factory" (an import path pkg.module:attribute)']
        if "kwargs" in config and not isinstance(config["kwargs"], dict):
            return ['"kwargs" must be an object']
        return []

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


class TransformersClassifier:
    """A Hugging Face sequence-classification model; outputs ``{target_field: label, "probabilities": {...}}``."""

    def __init__(self, config: dict[str, Any]):
        import torch  # lazily: only where inference runs
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self._torch = torch
        path = config["path"]
        local_only = bool(config.get("local_files_only", True))
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=local_only)
        self.model = AutoModelForSequenceClassification.from_pretrained(path, local_files_only=local_only)
        self.model.eval()
        self.max_length = int(config.get("max_length", 128))
        self.text_fields: list[str] | None = config.get("text_fields")
        self.target_field: str = config.get("target_field", "label")
        id2label = {int(k): v for k, v in self.model.config.id2label.items()}
        label_map: dict[str, str] = config.get("label_map") or {}
        self.labels = [label_map.get(id2label[i], id2label[i]) for i in range(len(id2label))]

    def _texts(self, item: dict[str, Any]) -> list[str]:
        names = self.text_fields or [k for k, v in item.items() if isinstance(v, str)]
        texts = [str(item[n]) for n in names if n in item]
        if not texts or len(texts) > 2:
            raise ValueError(f"expected one or two text fields, got {names}")
        return texts

    def predict(self, inputs):
        torch = self._torch
        pairs = [self._texts(item) for item in inputs]
        first = [p[0] for p in pairs]
        second = [p[1] for p in pairs] if all(len(p) == 2 for p in pairs) else None
        batch = self.tokenizer(
            first, second, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        with torch.inference_mode():
            probs = self.model(**batch).logits.softmax(-1).tolist()
        outputs = []
        for row in probs:
            best = max(range(len(row)), key=row.__getitem__)
            outputs.append(
                {
                    self.target_field: self.labels[best],
                    "probabilities": {label: float(p) for label, p in zip(self.labels, row)},
                }
            )
        return outputs


class TransformersBackend(ModelBackend):
    """A transformers model directory (or hub id). Config: ``path``, optional ``label_map`` (model label -> task
    label), ``text_fields`` (which model-input fields to encode, one or a pair), ``target_field``, ``max_length``,
    ``local_files_only`` (default true: nothing is downloaded unless you ask)."""

    name = "transformers"
    description = "Hugging Face transformers sequence classification from a local folder or hub id."

    def check_config(self, config):
        if not isinstance(config.get("path"), str) or not config["path"]:
            return ['config needs "path": a local model folder or a hub id']
        return []

    def load(self, config: dict[str, Any]) -> Predictor:
        problems = self.check_config(config)
        if problems:
            raise ValueError("; ".join(problems))
        return TransformersClassifier(config)


@hookimpl(trylast=True)
def register_model_backends(register):
    register(PythonBackend())
    register(TransformersBackend())
