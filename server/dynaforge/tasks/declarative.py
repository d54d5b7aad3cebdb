"""Declarative tasks: a task defined as data (JSON, or YAML), validated by a published JSON Schema, with no Python.

A declaration names the task's fields and their roles, its labels, metrics, perturbations, fairness slices by field
value, the rule that decides whether the model was fooled (one of :data:`FOOLED_RULES`), its target models on the
``transformers`` or ``http`` backends, and sample examples::

    {
      "code": "formality-lite",
      "name": "Formality (declared)",
      "instructions": "Write one sentence and say whether it is formal or informal ...",
      "labels": ["formal", "informal"],
      "fields": [
        {"name": "sentence", "type": "text", "role": "input", "max_length": 400},
        {"name": "label", "type": "choice", "role": "target"},
        {"name": "native_speaker", "type": "boolean", "role": "metadata", "required": false}
      ],
      "metrics": ["accuracy", "macro_f1"],
      "principal_metric": "macro_f1",
      "perturbations": ["typo"],
      "slices": [{"name": "formality-lite-native", "field": "native_speaker"}],
      "fooled": {"rule": "target_differs"},
      "target_models": [{"name": "remote", "backend": "http", "config": {"url": "https://models.example.org/f"}}],
      "sample_examples": [{"sentence": "...", "label": "formal"}, {"sentence": "...", "label": "informal"}]
    }

:func:`load_declaration` checks a declaration against :data:`DECLARATION_SCHEMA` and the task contract and returns
a :class:`DeclaredTask`; :class:`DeclaredTaskPlugin` is the plugin object that registers one with its slices
(``dynaforge check --declared FILE`` runs the conformance checks on one). Python plugins remain the way to add
backends, metrics, perturbations and behaviour; a declaration can only use what they registered.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import jsonschema

from dynaforge.errors import FieldError, InvalidInput
from dynaforge.hookspecs import hookimpl
from dynaforge.tasks.base import SUBMISSION_KINDS, TASK_CODE_PATTERN, Judge, ModelSpec, Slice, Task
from dynaforge.tasks.fields import (
    NORMALIZATIONS,
    BooleanField,
    ChoiceField,
    Field,
    NumberField,
    ReferencesField,
    Role,
    SpanField,
    TextField,
)

__all__ = [
    "DECLARATION_SCHEMA",
    "FOOLED_RULES",
    "DeclaredTask",
    "DECLARED_PREFIX",
    "DeclaredTaskPlugin",
    "load_declaration",
    "read_file",
]

#: The plugin name of a declared task: this prefix and the task's code.
DECLARED_PREFIX = "declared:"

#: The backends a declared target model may use: a declaration runs no code of its own on the server.
DECLARED_BACKENDS = ("transformers", "http", "openai", "kserve")
_NAME = "^[a-z][a-z0-9_]{0,39}$"
_FIELD_TYPES: dict[str, type[Field]] = {
    "text": TextField,
    "references": ReferencesField,
    "choice": ChoiceField,
    "span": SpanField,
    "number": NumberField,
    "boolean": BooleanField,
}

#: The built-in rules that decide whether the model was fooled, by name, with what each reads.
FOOLED_RULES: dict[str, str] = {
    "target_differs": "the prediction differs from the annotator's value on any target field (or on `fields`)",
    "gold_probability_below": "the probability the model gave the annotator's label of the choice target `field` is "
    "below `threshold` (from the whole output's `probabilities`; without them: the label differs)",
    "number_off_by": "the number target `field` is predicted more than `tolerance` away from the annotator's value",
    "metric_below": "the text the model wrote for the text or references target `field` scores under `threshold` by "
    "`metric` (one of chrf, chrf_pp, bleu on the 0-100 scale; rouge_l, token_f1 on 0-1) against the references",
    "judge": "a judge model (`judge`: a target-model entry on the openai backend) decides with `rubric`, after the "
    "example is stored; an owner may overrule it",
    "people": "the validators decide, voting on the model's output, when its author says it is wrong: by the boolean "
    "metadata `field` (an author who says it is right has not fooled it), or always without one",
}
_MODEL_ENTRY: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "backend", "config"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 100},
        "backend": {"enum": list(DECLARED_BACKENDS)},
        "config": {"type": "object"},
    },
}

DECLARATION_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://dynaforge.dev/schemas/declared-task-1.json",
    "title": "A Dynaforge task declared as data",
    "type": "object",
    "additionalProperties": False,
    "required": ["code", "name", "instructions", "fields", "target_models", "sample_examples"],
    "properties": {
        "code": {"type": "string", "pattern": TASK_CODE_PATTERN, "description": "The task's stable code."},
        "name": {"type": "string", "minLength": 1, "maxLength": 100},
        "description": {"type": "string", "maxLength": 1000},
        "instructions": {"type": "string", "minLength": 80, "maxLength": 10000},
        "labels": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": True},
        "fields": {
            "type": "array",
            "minItems": 2,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "type", "role"],
                "properties": {
                    "name": {"type": "string", "pattern": _NAME},
                    "type": {"enum": list(_FIELD_TYPES)},
                    "role": {"enum": [r.value for r in Role]},
                    "description": {"type": "string", "maxLength": 500},
                    "required": {"type": "boolean"},
                    "reveals_gold": {"type": "boolean"},
                    "min_length": {"type": "integer", "minimum": 0},
                    "max_length": {"type": "integer", "minimum": 1},
                    "choices": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": True},
                    "context_field": {"type": "string", "pattern": _NAME},
                    "minimum": {"type": "number"},
                    "maximum": {"type": "number"},
                    "integer": {"type": "boolean"},
                    "tolerance": {"type": "number", "minimum": 0},
                    "normalize": {"type": "array", "items": {"enum": list(NORMALIZATIONS)}, "uniqueItems": True},
                    "max_references": {"type": "integer", "minimum": 1, "maximum": 20},
                },
            },
        },
        "metrics": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": True},
        "principal_metric": {"type": "string"},
        "perturbations": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "slices": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "field"],
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-z][a-z0-9_-]{1,79}$"},
                    "field": {"type": "string", "pattern": _NAME},
                    "description": {"type": "string", "maxLength": 500},
                },
            },
        },
        "fooled": {
            "type": "object",
            "additionalProperties": False,
            "required": ["rule"],
            "properties": {
                "rule": {"enum": list(FOOLED_RULES)},
                "fields": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "field": {"type": "string"},
                "threshold": {"type": "number", "minimum": 0},
                "tolerance": {"type": "number", "minimum": 0},
                "metric": {"type": "string"},
                "rubric": {"type": "string", "minLength": 20, "maxLength": 10000},
                "judge": _MODEL_ENTRY,
            },
        },
        "target_models": {
            "type": "array",
            "minItems": 1,
            "items": _MODEL_ENTRY,
        },
        "submission_kinds": {
            "type": "array",
            "items": {"enum": [k for k in SUBMISSION_KINDS if k != "selection"]},
            "minItems": 1,
            "uniqueItems": True,
        },
        "sample_examples": {"type": "array", "items": {"type": "object"}, "minItems": 2},
        "demo_contexts": {"type": "array", "items": {"type": "object"}},
        "validation_quorum": {"type": "integer", "minimum": 1, "maximum": 20},
    },
}


_VALIDATOR = jsonschema.Draft202012Validator(DECLARATION_SCHEMA)


class DeclaredTask(Task):
    """A task made from a declaration; :attr:`declaration` is the data it was made from."""

    declaration: dict[str, Any]
    fooled_rule: dict[str, Any]

    def slices(self) -> list[Slice]:
        """The fairness slices the declaration defines, each grouping examples by one field's value."""
        return [
            Slice(sl["name"], _slice_group(sl["field"]), task_code=self.code, description=sl.get("description", ""))
            for sl in self.declaration.get("slices", ())
        ]

    def claims_fooled(self, example: dict[str, Any]) -> bool:
        field = self.fooled_rule.get("field") if self.fooled_rule["rule"] == "people" else None
        return True if field is None else example.get(field) is True

    def is_fooled(self, example: dict[str, Any], prediction: dict[str, Any], context: dict[str, Any]) -> bool:
        rule = self.fooled_rule
        name = rule["rule"]
        if name == "gold_probability_below":
            gold = example.get(rule["field"])
            probabilities = prediction.get("probabilities")
            if isinstance(probabilities, dict) and gold in probabilities:
                try:
                    return float(probabilities[gold]) < float(self.fooled_threshold or 0.0)
                except (TypeError, ValueError):
                    return True
            return prediction.get(rule["field"]) != gold
        if name == "number_off_by":
            gold, predicted = example.get(rule["field"]), prediction.get(rule["field"])
            if not isinstance(predicted, (int, float)) or isinstance(predicted, bool) or gold is None:
                return True
            return abs(float(predicted) - float(gold)) > float(rule["tolerance"])
        if name in ("judge", "people"):  # deferred: decided after the example is stored (services.verdicts)
            return False
        if name == "metric_below":
            from dynaforge.defaults.text_metrics import sentence_score

            predicted = prediction.get(rule["field"])
            if not isinstance(predicted, str):
                return True
            return sentence_score(rule["metric"], example.get(rule["field"]), predicted) < float(
                self.fooled_threshold or 0.0
            )
        names = set(rule.get("fields") or self.field_names(Role.TARGET))
        return any(not f.same(example.get(f.name), prediction.get(f.name)) for f in self.fields if f.name in names)


def _problem(path: Iterable[Any], message: str, rule: str = "declaration") -> FieldError:
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    return FieldError(f"definition.{where}" if where else "definition", rule, message)


def _field(spec: dict[str, Any]) -> Field:
    kind = _FIELD_TYPES[spec["type"]]
    options = {k: v for k, v in spec.items() if k not in ("type", "role")}
    for listed in ("choices", "normalize"):
        if listed in options:
            options[listed] = tuple(options[listed])
    allowed = set(kind.__dataclass_fields__)
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"a {spec['type']} field takes no {', '.join(unknown)}")
    return kind(role=Role(spec["role"]), **options)


def threshold_range(rule: dict[str, Any]) -> tuple[float, float]:
    """The scale of a threshold rule's number: a probability, a 0-1 metric (ROUGE-L, token F1) or a 0-100 one."""
    if rule["rule"] == "gold_probability_below" or rule.get("metric") in ("rouge_l", "token_f1"):
        return (0.0, 1.0)
    return (0.0, 100.0)


def _fooled_problems(rule: dict[str, Any], fields: dict[str, Field]) -> list[str]:
    name = rule["rule"]
    targets = {n for n, f in fields.items() if f.role is Role.TARGET}
    if "metric" in rule and name != "metric_below":
        return [f"fooled.rule {name} takes no `metric`"]
    if ("judge" in rule or "rubric" in rule) != (name == "judge") or (
        name == "judge" and set(rule) < {"judge", "rubric"}
    ):
        return [
            "fooled.rule judge needs `judge` (a model on the openai backend) and `rubric`; no other rule takes them"
        ]
    if name == "judge":
        backend = rule["judge"]["backend"]
        return (
            [] if backend == "openai" else [f"fooled.judge must be a model that writes (openai backend), not {backend}"]
        )
    if name == "people":
        field = fields.get(rule.get("field", "")) if "field" in rule else None
        if "field" in rule and (
            field is None or field.role is not Role.METADATA or not isinstance(field, BooleanField)
        ):
            return [
                "fooled.rule people: `field` must name a boolean metadata field (the author says the output is wrong)"
            ]
        return []
    if name == "target_differs":
        unknown = sorted(set(rule.get("fields", ())) - targets)
        return [f"fooled.fields names no target field: {', '.join(unknown)}"] if unknown else []
    needs = {
        "gold_probability_below": ("threshold", ChoiceField),
        "number_off_by": ("tolerance", NumberField),
        "metric_below": ("threshold", TextField),
    }
    setting, kind = needs[name]
    problems = []
    field = fields.get(rule.get("field", ""))
    if field is None or field.name not in targets or not isinstance(field, kind):
        problems.append(f"fooled.rule {name} needs `field`: a {kind.__name__} target field")
    if setting not in rule:
        problems.append(f"fooled.rule {name} needs `{setting}`")
    if name == "gold_probability_below" and rule.get("threshold", 0) > 1:
        problems.append("fooled.threshold of gold_probability_below is a probability: at most 1")
    if name == "metric_below":
        from dynaforge.defaults.text_metrics import SENTENCE_METRICS

        metric = rule.get("metric")
        if metric not in SENTENCE_METRICS:
            problems.append(f"fooled.rule metric_below needs `metric`: one of {', '.join(SENTENCE_METRICS)}")
        elif metric in ("rouge_l", "token_f1") and rule.get("threshold", 0) > 1:
            problems.append(f"fooled.threshold for {metric} is on its 0-1 scale: at most 1")
        elif rule.get("threshold", 0) > 100:
            problems.append(f"fooled.threshold for {metric} is on its 0-100 scale: at most 100")
    return problems


def load_declaration(data: Any) -> DeclaredTask:
    """The task a declaration describes. InvalidInput (fields under ``definition``) lists every problem: against
    :data:`DECLARATION_SCHEMA` first, then against the task contract (``Task.check_declaration``, the fooled rule,
    the slices' fields, the sample examples' and demo contexts' validity)."""
    errors = sorted(_VALIDATOR.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        raise InvalidInput.from_errors([_problem(e.absolute_path, e.message, "schema") for e in errors[:20]])
    problems: list[FieldError] = []
    fields: dict[str, Field] = {}
    for i, spec in enumerate(data["fields"]):
        try:
            fields[spec["name"]] = _field(spec)
        except (TypeError, ValueError) as exc:
            problems.append(_problem(["fields", i], str(exc)))
    rule = data.get("fooled", {"rule": "target_differs"})
    problems += [_problem(["fooled"], p) for p in _fooled_problems(rule, fields)]
    for i, sl in enumerate(data.get("slices", [])):
        if sl["field"] not in fields:
            problems.append(_problem(["slices", i, "field"], f"no field {sl['field']!r}"))
    if problems:
        raise InvalidInput.from_errors(problems)
    attributes: dict[str, Any] = {
        "code": data["code"],
        "name": data["name"],
        "description": data.get("description", ""),
        "instructions": data["instructions"],
        "labels": tuple(data.get("labels", ())),
        "fields": tuple(fields.values()),
        "perturbations": tuple(data.get("perturbations", ())),
        "fairness_slices": tuple(sl["name"] for sl in data.get("slices", ())),
        "default_target_models": tuple(
            ModelSpec(m["name"], m["backend"], dict(m["config"])) for m in data["target_models"]
        ),
        "sample_examples": tuple(dict(e) for e in data["sample_examples"]),
        "demo_contexts": tuple(dict(c) for c in data.get("demo_contexts", ())),
        "validation_quorum": data.get("validation_quorum", 3),
        "declaration": json.loads(json.dumps(data)),
        "fooled_rule": dict(rule),
    }
    if rule["rule"] in ("gold_probability_below", "metric_below"):
        attributes["fooled_threshold"] = float(rule["threshold"])
        attributes["fooled_threshold_range"] = threshold_range(rule)
    if rule["rule"] in ("judge", "people"):
        attributes["verdict"] = rule["rule"]
    if rule["rule"] == "judge":
        entry = rule["judge"]
        attributes["judge"] = Judge(ModelSpec(entry["name"], entry["backend"], dict(entry["config"])), rule["rubric"])
    if "metrics" in data:
        attributes["metrics"] = tuple(data["metrics"])
        attributes["principal_metric"] = data.get("principal_metric", data["metrics"][0])
    if "submission_kinds" in data:
        attributes["submission_kinds"] = tuple(data["submission_kinds"])
    made: type[DeclaredTask] = type(f"Declared_{data['code'].replace('-', '_')}", (DeclaredTask,), attributes)
    task = made()
    problems = [_problem([], p) for p in task.check_declaration()]
    for i, values in enumerate(task.sample_examples):
        context, example = task.split_fields(values)
        try:
            if context:
                task.validate_context(context)
            task.validate_example(example, context or None)
        except InvalidInput as exc:
            problems += [_problem(["sample_examples", i, e.field], e.message, e.rule) for e in exc.field_errors]
    if task.demo_contexts and not task.fields_with(Role.CONTEXT):
        problems.append(_problem(["demo_contexts"], "the task has no context field: leave demo_contexts out"))
    elif task.demo_contexts:  # round 1's contexts when the task is declared
        for i, values in enumerate(task.demo_contexts):
            try:
                if not task.validate_context(values):
                    problems.append(_problem(["demo_contexts", i], "sets no context field", "empty"))
            except InvalidInput as exc:
                problems += [_problem(["demo_contexts", i, e.field], e.message, e.rule) for e in exc.field_errors]
    if problems:
        raise InvalidInput.from_errors(problems)
    return task


def _slice_group(field: str) -> Callable[[dict[str, Any]], str | None]:
    def group(values: dict[str, Any]) -> str | None:
        value = values.get(field)
        if value is None or value == "":
            return None
        return json.dumps(value) if not isinstance(value, str) else value

    return group


class DeclaredTaskPlugin:
    """The plugin object that registers one declared task and its slices, named :data:`DECLARED_PREFIX` + its code
    (so that a broken declaration is listed, and dropped, on its own)."""

    def __init__(self, task: DeclaredTask):
        self.task = task
        self.__name__ = DECLARED_PREFIX + task.code

    @hookimpl
    def register_tasks(self, register: Callable[[Task], None]) -> None:
        register(self.task)

    @hookimpl
    def register_fairness_slices(self, register: Callable[[Slice], None]) -> None:
        for sl in self.task.slices():
            register(sl)


def read_file(path: Path) -> Any:
    """A declaration file: JSON (``.json``) or YAML (``.yaml``, ``.yml``)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        return yaml.safe_load(text)
    return json.loads(text)
