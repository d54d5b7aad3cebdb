"""Field types of the task contract.

A task declares its fields once; from them the platform validates what annotators submit (each broken rule names
the field and the rule), builds the JSON Schema that frontends render as a form, and knows which values are context
(shown to the annotator), input (written by the annotator), target (the annotator's gold answer) or metadata.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from dynaforge.errors import FieldError, text_problem


class LabelledTask(Protocol):
    """What a field reads of the task it belongs to (a :class:`dynaforge.tasks.base.Task` satisfies it): the task's
    labels, which a :class:`ChoiceField` without explicit choices offers. Fields stay below tasks, with no import
    back."""

    @property
    def labels(self) -> tuple[str, ...]: ...


#: The rules a text field's values may be normalised by before they are compared (:func:`normalize_text`), applied
#: in this order whatever order they are given in.
NORMALIZATIONS: dict[str, str] = {
    "unicode": "Unicode compatibility composition (NFKC): full-width letters, ligatures and composed accents alike",
    "case": "case folded (Unicode casefold: 'Straße' and 'STRASSE' match)",
    "punctuation": "Unicode punctuation removed",
    "whitespace": "runs of whitespace read as one space, none at either end",
}


def normalize_text(text: str, rules: Sequence[str]) -> str:
    """``text`` normalised by ``rules`` (names among :data:`NORMALIZATIONS`, applied in that order)."""
    if "unicode" in rules:
        text = unicodedata.normalize("NFKC", text)
    if "case" in rules:
        text = text.casefold()
    if "punctuation" in rules:
        text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
    if "whitespace" in rules or "punctuation" in rules:
        text = " ".join(text.split())
    return text


def normalization_problem(rules: Any) -> str | None:
    """Why ``rules`` is not a list of normalisation rule names, or None."""
    if isinstance(rules, str) or not isinstance(rules, Sequence) or not set(rules) <= set(NORMALIZATIONS):
        return f"normalize must be a list among {', '.join(NORMALIZATIONS)}"
    return None


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

    def check(self, value: Any, *, task: LabelledTask, values: dict[str, Any]) -> list[FieldError]:
        """Return the rules ``value`` (never None) breaks; ``values`` holds the example's other fields."""
        raise NotImplementedError

    def same(self, gold: Any, predicted: Any) -> bool:
        """Whether a model's ``predicted`` value matches the annotator's ``gold`` one (the default fooled rule and
        ``target_differs`` ask each target field). Equality here; a text field applies its normalisation, a
        references field accepts any of its references, a number field its tolerance."""
        return bool(gold == predicted)

    def value_schema(self, task: LabelledTask) -> dict[str, Any]:
        raise NotImplementedError

    def json_schema(self, task: LabelledTask) -> dict[str, Any]:
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
    """Free text with length bounds (counted in characters after stripping surrounding whitespace).

    ``normalize`` (names among :data:`NORMALIZATIONS`) says how a target's values are compared with a model's
    (:meth:`same`, and the metrics that compare text exactly): with ``("case", "punctuation", "whitespace")`` a
    model's "le chien est blanc" matches the gold "Le chien est blanc."."""

    min_length: int = 1
    max_length: int = 2000
    normalize: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (problem := normalization_problem(self.normalize)) is not None:
            raise ValueError(f"field {self.name}: {problem}")
        object.__setattr__(self, "normalize", tuple(self.normalize))

    def _text_errors(self, value: Any, where: str = "") -> list[FieldError]:
        if not isinstance(value, str):
            return self.error("type", f"{where}must be a string, got {type(value).__name__}")
        length = len(value.strip())
        if length < self.min_length:
            return self.error("min_length", f"{where}must have at least {self.min_length} characters, got {length}")
        if length > self.max_length:
            return self.error("max_length", f"{where}must have at most {self.max_length} characters, got {length}")
        if problem := text_problem(value):
            return self.error("text", where + problem)
        return []

    def check(self, value: Any, *, task: LabelledTask, values: dict[str, Any]) -> list[FieldError]:
        return self._text_errors(value)

    def normalized(self, text: str) -> str:
        """``text`` as this field compares it (:attr:`normalize`)."""
        return normalize_text(text, self.normalize)

    def same(self, gold: Any, predicted: Any) -> bool:
        if not isinstance(predicted, str):
            return False
        answer = self.normalized(predicted)
        return any(isinstance(g, str) and self.normalized(g) == answer for g in references(gold))

    def value_schema(self, task: LabelledTask) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string", "minLength": self.min_length, "maxLength": self.max_length}
        if self.normalize:
            schema["x-normalize"] = list(self.normalize)
        return schema


def references(value: Any) -> list[Any]:
    """A target's references as a list: ``value`` itself when it is a list, else ``[value]``."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


@dataclass(frozen=True, kw_only=True)
class ReferencesField(TextField):
    """One or several reference texts for a target a model writes (a translation, a summary, an answer): the value
    is a string or a list of 1 to ``max_references`` distinct strings, each checked like a text field's. A model
    answers one text; it matches when it equals any reference after :attr:`normalize`, and text metrics (chrF,
    BLEU, ROUGE-L, token F1) score it against all of them."""

    max_references: int = 4

    def check(self, value: Any, *, task: LabelledTask, values: dict[str, Any]) -> list[FieldError]:
        if isinstance(value, str):
            return self._text_errors(value)
        if not isinstance(value, list) or not value:
            return self.error("type", "must be a string or a non-empty list of strings (several references)")
        if len(value) > self.max_references:
            return self.error("max_references", f"takes at most {self.max_references} references, got {len(value)}")
        for i, text in enumerate(value):
            if problems := self._text_errors(text, f"reference {i + 1} "):
                return problems
        stripped = [text.strip() for text in value]
        if len(set(stripped)) != len(stripped):
            return self.error("unique", "lists the same reference twice")
        return []

    def value_schema(self, task: LabelledTask) -> dict[str, Any]:
        one = super().value_schema(task)
        normalize = one.pop("x-normalize", None)
        schema: dict[str, Any] = {
            "oneOf": [
                one,
                {"type": "array", "items": dict(one), "minItems": 1, "maxItems": self.max_references},
            ],
            "x-references": True,
        }
        if normalize:
            schema["x-normalize"] = normalize
        return schema


@dataclass(frozen=True, kw_only=True)
class ChoiceField(Field):
    """One value out of a fixed set; ``choices=None`` means the task's labels."""

    choices: tuple[str, ...] | None = None

    def options(self, task: LabelledTask) -> tuple[str, ...]:
        return tuple(task.labels) if self.choices is None else tuple(self.choices)

    def check(self, value: Any, *, task: LabelledTask, values: dict[str, Any]) -> list[FieldError]:
        options = self.options(task)
        if not isinstance(value, str) or value not in options:
            return self.error("choice", f"must be one of {', '.join(options)}; got {value!r}")
        return []

    def value_schema(self, task: LabelledTask) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.options(task))}


@dataclass(frozen=True, kw_only=True)
class SpanField(Field):
    """A span selected from a context field: ``{"text": str, "start": int}``; the text must sit at that offset."""

    context_field: str
    max_length: int = 1000

    def check(self, value: Any, *, task: LabelledTask, values: dict[str, Any]) -> list[FieldError]:
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

    def value_schema(self, task: LabelledTask) -> dict[str, Any]:
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
    #: How far a model's number may be from the gold one and still match (:meth:`same`; ``within_tolerance``).
    tolerance: float = 0.0

    def __post_init__(self) -> None:
        if (
            isinstance(self.tolerance, bool)
            or not isinstance(self.tolerance, (int, float))
            or not (math.isfinite(self.tolerance) and self.tolerance >= 0)
        ):
            raise ValueError(f"field {self.name}: tolerance must be a finite number of at least 0")

    def same(self, gold: Any, predicted: Any) -> bool:
        numbers = [v for v in (gold, predicted) if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return len(numbers) == 2 and abs(float(predicted) - float(gold)) <= self.tolerance

    def check(self, value: Any, *, task: LabelledTask, values: dict[str, Any]) -> list[FieldError]:
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

    def value_schema(self, task: LabelledTask) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "integer" if self.integer else "number"}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        if self.tolerance:
            schema["x-tolerance"] = self.tolerance
        return schema


@dataclass(frozen=True, kw_only=True)
class BooleanField(Field):
    """True or false."""

    def check(self, value: Any, *, task: LabelledTask, values: dict[str, Any]) -> list[FieldError]:
        if not isinstance(value, bool):
            return self.error("type", "must be true or false")
        return []

    def value_schema(self, task: LabelledTask) -> dict[str, Any]:
        return {"type": "boolean"}


#: The formats an image field accepts unless it says otherwise (Pillow's names; told by content, never by name).
IMAGE_FORMATS = ("PNG", "JPEG", "WEBP", "GIF")
_MEDIA_KEY = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True, kw_only=True)
class ImageField(Field):
    """An image the annotator uploaded first (``uploadMedia``: decoded safely, cleaned of its metadata, stored by
    content hash), named in the example by its key: ``{"media": "<sha256>"}``. The image itself never sits in the
    row. ``formats`` (what it may have been uploaded as) and ``max_pixels`` are the field's own limits, on top of the
    server's; the platform checks them, and that the writer uploaded the image, when the example is stored."""

    formats: tuple[str, ...] = IMAGE_FORMATS
    max_pixels: int = 4_000_000

    def check(self, value: Any, *, task: LabelledTask, values: dict[str, Any]) -> list[FieldError]:
        if not isinstance(value, dict) or set(value) != {"media"} or not isinstance(value["media"], str):
            return self.error("type", 'must be {"media": key}, the key uploadMedia gave the image')
        if not _MEDIA_KEY.match(value["media"]):
            return self.error("media", "is not a media key: upload the image with uploadMedia and use its key")
        return []

    def value_schema(self, task: LabelledTask) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"media": {"type": "string", "pattern": _MEDIA_KEY.pattern}},
            "required": ["media"],
            "additionalProperties": False,
            "x-media": "image",
            "x-formats": list(self.formats),
            "x-max-pixels": self.max_pixels,
        }
