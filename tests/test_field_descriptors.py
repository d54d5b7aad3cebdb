"""Field descriptors: every kind of field a task declares reaches a frontend typed, with its limits, choices and
the context field a span is selected from, so a form can be built and checked without reading JSON Schema."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toy_plugin import ToyTask

from dynaforge.api.types.task import FieldType, task_field
from dynaforge.tasks.fields import BooleanField, ChoiceField, Field, NumberField, Role, SpanField, TextField


@dataclass(frozen=True, kw_only=True)
class Colour(Field):
    """A kind the core does not know: its JSON Schema says what it holds."""

    def check(self, value: Any, *, task: Any, values: dict[str, Any]) -> list:
        return []

    def value_schema(self, task: Any) -> dict[str, Any]:
        return {"type": "string", "pattern": "^#[0-9a-f]{6}$"}


def test_each_kind_of_field_is_described_with_its_limits():
    task = ToyTask()
    text = task_field(TextField(name="premise", role=Role.INPUT, min_length=3, max_length=40), task)
    assert (text.type, text.min_length, text.max_length, text.choices, text.minimum) == (
        FieldType.TEXT,
        3,
        40,
        None,
        None,
    )
    choice = task_field(ChoiceField(name="label", role=Role.TARGET), task)
    assert (choice.type, choice.choices, choice.max_length) == (FieldType.CHOICE, list(task.labels), None)
    span = task_field(SpanField(name="answer", role=Role.TARGET, context_field="passage", max_length=80), task)
    assert (span.type, span.context_field, span.max_length, span.min_length) == (FieldType.SPAN, "passage", 80, None)
    number = task_field(NumberField(name="score", role=Role.METADATA, minimum=0, maximum=5, integer=True), task)
    assert (number.type, number.minimum, number.maximum, number.integer) == (FieldType.NUMBER, 0, 5, True)
    assert task_field(BooleanField(name="sarcastic", role=Role.METADATA), task).type == FieldType.BOOLEAN
    other = task_field(Colour(name="colour", role=Role.INPUT, description="a hex colour"), task)
    assert other.type == FieldType.OTHER
    assert other.json_schema == {
        "type": "string",
        "pattern": "^#[0-9a-f]{6}$",
        "description": "a hex colour",
        "x-role": "input",
    }


FIELDS = """{ task(code: "toy") { fields { name role type required choices minLength maxLength minimum maximum
  integer contextField jsonSchema } } }"""


async def test_the_toy_task_fields_over_graphql(gql):
    fields = {f["name"]: f for f in (await gql(FIELDS))["task"]["fields"]}
    assert fields["text"] == {
        "name": "text",
        "role": "INPUT",
        "type": "TEXT",
        "required": True,
        "choices": None,
        "minLength": 1,
        "maxLength": 100,
        "minimum": None,
        "maximum": None,
        "integer": None,
        "contextField": None,
        "jsonSchema": {"type": "string", "minLength": 1, "maxLength": 100, "x-role": "input"},
    }
    assert fields["label"]["type"] == "CHOICE" and fields["label"]["choices"] == ["good", "bad"]
    assert fields["topic"]["required"] is False and fields["topic"]["role"] == "CONTEXT"
