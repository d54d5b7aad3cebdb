"""Field types of the task contract.

A task declares its fields once; from them the platform validates what annotators submit (each broken rule names
the field and the rule), builds the JSON Schema that frontends render as a form, and knows which values are context
(shown to the annotator), input (written by the annotator), target (the annotator's gold answer) or metadata.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from dynaforge.errors import FieldError, text_problem

if TYPE_CHECKING:
    from dynaforge.tasks.base import Task


class Role(StrEnum):
    """What a field is for in an example."""

    CONTEXT = "context"  #: shown to the annotator, e.g. a passage or a prompt; lives on the context row
    INPUT = "input"  #: written by the annotator and sent to the model, e.g. a question or a statement
    TARGET = "target"  #: the annotator's gold answer, compared with the model's prediction, e.g. a label or a span
    METADATA = "metadata"  #: anything else the annotator tells, e.g. why they think the model was fooled


@dataclass(frozen=True, kw_only=True)
class Field:
    """Base of every field type. Subclasses implement :meth:`check` and :meth:`value_schema`."""

    name: str
    role: Role
    description: str = ""
    required: bool = True
    #: A metadata field that can state the gold answer (an explanation of why the model was fooled, a kind of hate
    #: that is "none" exactly when the statement is not hateful): withheld wherever the target is. Target fields
    #: always are.
    reveals_gold: bool = False

    def check(self, value: Any, *, task: Task, values: dict[str, Any]) -> list[FieldError]:
        """Return the rules ``value`` (never None) breaks; ``values`` holds the example's other fields."""
        raise NotImplementedError

    def value_schema(self, task: Task) -> dict[str, Any]:
        raise NotImplementedError

    def json_schema(self, task: Task) -> dict[str, Any]:
        schema = self.value_schema(task)
        if self.description:
            schema["description"] = self.description
        schema["x-role"] = self.role.value
        if self.reveals_gold:  # targets are gold by their role
            schema["x-reveals-gold"] = True
        return schema

    def error(self, rule: str, message: str) -> list[FieldError]:
        return [FieldError(field=self.name, rule=rule, message=message)]


@dataclass(frozen=True, kw_only=True)
class TextField(Field):
    """Free text with length bounds (counted in characters after stripping surrounding whitespace)."""

    min_length: int = 1
    max_length: int = 2000

    def check(self, value: Any, *, task: Task, values: dict[str, Any]) -> list[FieldError]:
        if not isinstance(value, str):
            return self.error("type", f"must be a string, got {type(value).__name__}")
        length = len(value.strip())
        if length < self.min_length:
            return self.error("min_length", f"must have at least {self.min_length} characters, got {length}")
        if length > self.max_length:
            return self.error("max_length", f"must have at most {self.max_length} characters, got {length}")
        if problem := text_problem(value):
            return self.error("text", problem)
        return []

    def value_schema(self, task: Task) -> dict[str, Any]:
        return {"type": "string", "minLength": self.min_length, "maxLength": self.max_length}


@dataclass(frozen=True, kw_only=True)
class ChoiceField(Field):
    """One value out of a fixed set; ``choices=None`` means the task's labels."""

    choices: tuple[str, ...] | None = None

    def options(self, task: Task) -> tuple[str, ...]:
        return tuple(task.labels) if self.choices is None else tuple(self.choices)

    def check(self, value: Any, *, task: Task, values: dict[str, Any]) -> list[FieldError]:
        options = self.options(task)
        if not isinstance(value, str) or value not in options:
            return self.error("choice", f"must be one of {', '.join(options)}; got {value!r}")
        return []

    def value_schema(self, task: Task) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.options(task))}


@dataclass(frozen=True, kw_only=True)
class SpanField(Field):
    """A span selected from a context field: ``{"text": str, "start": int}``; the text must sit at that offset."""

    context_field: str
    max_length: int = 1000

    def check(self, value: Any, *, task: Task, values: dict[str, Any]) -> list[FieldError]:
        if not isinstance(value, dict) or set(value) != {"text", "start"}:
            return self.error("type", 'must be an object {"text": string, "start": integer}')
        text, start = value["text"], value["start"]
        if not isinstance(text, str) or not text.strip():
            return self.error("type", "text must be a non-empty string")
        if isinstance(start, bool) or not isinstance(start, int) or start < 0:
            return self.error("type", "start must be a non-negative integer offset into " + self.context_field)
        if len(text) > self.max_length:
            return self.error("max_length", f"span must have at most {self.max_length} characters")
        source = values.get(self.context_field)
        if not isinstance(source, str):
            return self.error("span_context", f"needs the context field {self.context_field!r}")
        if source[start : start + len(text)] != text:
            return self.error(
                "span_in_context",
                f"text does not occur at offset {start} of {self.context_field}; select it from the context",
            )
        return []

    def value_schema(self, task: Task) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "text": {"type": "string", "minLength": 1, "maxLength": self.max_length},
                "start": {"type": "integer", "minimum": 0},
            },
            "required": ["text", "start"],
            "additionalProperties": False,
            "x-span-of": self.context_field,
        }


@dataclass(frozen=True, kw_only=True)
class NumberField(Field):
    """A finite number with optional bounds; ``integer=True`` requires a whole number."""

    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False

    def check(self, value: Any, *, task: Task, values: dict[str, Any]) -> list[FieldError]:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return self.error("type", "must be a finite number")
        try:
            finite = math.isfinite(value)
        except OverflowError:  # an integer too large for a float
            finite = False
        if not finite:
            return self.error("type", "must be a finite number")
        if self.integer and not float(value).is_integer():
            return self.error("integer", "must be a whole number")
        if self.minimum is not None and value < self.minimum:
            return self.error("minimum", f"must be at least {self.minimum}")
        if self.maximum is not None and value > self.maximum:
            return self.error("maximum", f"must be at most {self.maximum}")
        return []

    def value_schema(self, task: Task) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "integer" if self.integer else "number"}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        return schema


@dataclass(frozen=True, kw_only=True)
class BooleanField(Field):
    """True or false."""

    def check(self, value: Any, *, task: Task, values: dict[str, Any]) -> list[FieldError]:
        if not isinstance(value, bool):
            return self.error("type", "must be true or false")
        return []

    def value_schema(self, task: Task) -> dict[str, Any]:
        return {"type": "boolean"}
