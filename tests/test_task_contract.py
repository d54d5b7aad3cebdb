"""The task contract: field validation (each broken rule names the field and the rule), declaration checks, the
JSON Schema of a task's fields, reading model outputs and the default ``is_fooled``."""

from __future__ import annotations

import math

import pytest

from dynaforge import (
    BooleanField,
    ChoiceField,
    InvalidInput,
    ModelSpec,
    NumberField,
    Role,
    SpanField,
    Task,
    TextField,
)

try:
    import jsonschema
except ImportError:  # not a dependency: fall back to a validator of the keywords Task.json_schema uses
    jsonschema = None


class ReadingTask(Task):
    """Every field type: a passage to read, a question, a label and an answer span, and some metadata."""

    code = "reading"
    name = "Reading"
    labels = ("answerable", "unanswerable")
    fields = (
        TextField(name="passage", role=Role.CONTEXT, max_length=500, description="The text to read."),
        TextField(name="question", role=Role.INPUT, min_length=5, max_length=60),
        ChoiceField(name="label", role=Role.TARGET),
        SpanField(name="answer", role=Role.TARGET, context_field="passage", max_length=20, required=False),
        NumberField(name="difficulty", role=Role.METADATA, minimum=1, maximum=5, integer=True, required=False),
        NumberField(name="seconds", role=Role.METADATA, minimum=0, required=False),
        BooleanField(name="checked", role=Role.METADATA, required=False),
        ChoiceField(name="source", role=Role.METADATA, choices=("web", "book"), required=False),
        TextField(name="note", role=Role.METADATA, required=False, max_length=30),
    )


PASSAGE = "The river Thames flows through London."
CONTEXT = {"passage": PASSAGE}
VALID = {"question": "Which city does it cross?", "label": "answerable", "answer": {"text": "London", "start": 31}}


@pytest.fixture
def task():
    t = ReadingTask()
    assert t.check_declaration() == []
    return t


def errors_of(task: Task, values, context=CONTEXT) -> list[tuple[str, str]]:
    with pytest.raises(InvalidInput) as caught:
        task.validate_example(values, context)
    assert caught.value.field_errors, "InvalidInput without field errors"
    for e in caught.value.field_errors:
        assert e.field in caught.value.message and e.message
    return [(e.field, e.rule) for e in caught.value.field_errors]


def with_(**changes):
    values = dict(VALID)
    for key, value in changes.items():
        if value is ...:
            values.pop(key, None)
        else:
            values[key] = value
    return values


# --------------------------------------------------------------------------- valid input


def test_valid_example_is_cleaned(task):
    cleaned = task.validate_example(
        with_(
            question="  Which city does it cross?  ", difficulty=3, seconds=12.5, checked=False, source="web", note=""
        ),
        CONTEXT,
    )
    assert cleaned == {
        "question": "Which city does it cross?",
        "label": "answerable",
        "answer": {"text": "London", "start": 31},
        "difficulty": 3,
        "seconds": 12.5,
        "checked": False,
        "source": "web",
    }  # the empty optional note counts as absent


def test_context_values_are_kept_as_written(task):
    assert task.validate_context({"passage": "  spaced  "}) == {"passage": "  spaced  "}


def test_example_without_stored_context_may_carry_the_context_fields(task):
    cleaned = task.validate_example({**VALID, "passage": PASSAGE}, None)
    assert cleaned["passage"] == PASSAGE and cleaned["answer"] == VALID["answer"]


# --------------------------------------------------------------------------- TextField


@pytest.mark.parametrize(
    ("value", "rule"),
    [(123, "type"), (["a"], "type"), ("abc", "min_length"), ("   abcd   ", "min_length"), ("x" * 61, "max_length")],
)
def test_text_field_rules(task, value, rule):
    assert errors_of(task, with_(question=value)) == [("question", rule)]


def test_text_field_length_bounds_are_inclusive(task):
    assert task.validate_example(with_(question="x" * 5), CONTEXT)["question"] == "x" * 5
    assert task.validate_example(with_(question="x" * 60), CONTEXT)["question"] == "x" * 60


# --------------------------------------------------------------------------- ChoiceField


@pytest.mark.parametrize("value", ["maybe", "Answerable", 1, ["answerable"]])
def test_choice_field_offers_the_task_labels(task, value):
    assert errors_of(task, with_(label=value)) == [("label", "choice")]


def test_choice_field_with_explicit_choices(task):
    assert task.validate_example(with_(source="book"), CONTEXT)["source"] == "book"
    assert errors_of(task, with_(source="answerable")) == [("source", "choice")]


# --------------------------------------------------------------------------- SpanField


@pytest.mark.parametrize(
    "value",
    [
        "London",
        {"text": "London"},
        {"text": "London", "start": 31, "end": 38},
        {"text": "", "start": 31},
        {"text": "   ", "start": 31},
        {"text": 5, "start": 31},
        {"text": "London", "start": -1},
        {"text": "London", "start": "32"},
        {"text": "London", "start": True},
        {"text": "London", "start": 31.0},
    ],
)
def test_span_field_type(task, value):
    assert errors_of(task, with_(answer=value)) == [("answer", "type")]


def test_span_field_max_length(task):
    assert errors_of(task, with_(answer={"text": PASSAGE[:25], "start": 0})) == [("answer", "max_length")]


@pytest.mark.parametrize("start", [0, 30, 32, 100])
def test_span_field_text_must_sit_at_its_offset(task, start):
    assert errors_of(task, with_(answer={"text": "London", "start": start})) == [("answer", "span_in_context")]


def test_span_field_needs_its_context_field(task):
    values = with_()
    assert errors_of(task, values, context={}) == [("answer", "span_context")]


def test_span_field_is_checked_against_a_context_field_sent_with_the_example(task):
    assert errors_of(task, {**with_(answer={"text": "Paris", "start": 31}), "passage": PASSAGE}, None) == [
        ("answer", "span_in_context")
    ]


class HighlightTask(Task):
    code = "highlight"
    name = "Highlight"
    labels = ("yes", "no")
    fields = (
        TextField(name="sentence", role=Role.INPUT),
        ChoiceField(name="label", role=Role.TARGET),
        SpanField(name="cue", role=Role.METADATA, context_field="sentence", required=False),
    )


def test_span_into_an_input_field_still_points_at_its_text_after_cleaning():
    cleaned = HighlightTask().validate_example(
        {"sentence": "  Hey you", "label": "yes", "cue": {"text": "Hey", "start": 2}}, None
    )
    cue = cleaned["cue"]
    assert cleaned["sentence"][cue["start"] : cue["start"] + len(cue["text"])] == cue["text"]


# --------------------------------------------------------------------------- NumberField


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("difficulty", "3", "type"),
        ("difficulty", True, "type"),
        ("seconds", math.nan, "type"),
        ("seconds", math.inf, "type"),
        ("difficulty", 2.5, "integer"),
        ("difficulty", 0, "minimum"),
        ("difficulty", 6, "maximum"),
        ("seconds", -0.1, "minimum"),
    ],
)
def test_number_field_rules(task, field, value, rule):
    assert errors_of(task, with_(**{field: value})) == [(field, rule)]


def test_number_field_bounds_are_inclusive_and_whole_floats_are_integers(task):
    assert task.validate_example(with_(difficulty=1), CONTEXT)["difficulty"] == 1
    assert task.validate_example(with_(difficulty=5), CONTEXT)["difficulty"] == 5
    assert task.validate_example(with_(difficulty=4.0), CONTEXT)["difficulty"] == 4.0
    assert task.validate_example(with_(seconds=1e6), CONTEXT)["seconds"] == 1e6


def test_number_field_huge_integer_is_a_field_error(task):
    errors_of(task, with_(seconds=10**400))


# --------------------------------------------------------------------------- BooleanField


@pytest.mark.parametrize("value", ["true", 1, 0, "yes"])
def test_boolean_field_type(task, value):
    assert errors_of(task, with_(checked=value)) == [("checked", "type")]


# --------------------------------------------------------------------------- whole-submission rules


def test_required_fields(task):
    assert errors_of(task, with_(question=..., label=None)) == [("question", "required"), ("label", "required")]


def test_required_text_field_of_whitespace_breaks_min_length(task):
    assert errors_of(task, with_(question="   ")) == [("question", "min_length")]


def test_unknown_field(task):
    assert errors_of(task, with_(mood="happy")) == [("mood", "unknown_field")]


def test_context_field_with_a_stored_context_breaks_role(task):
    assert errors_of(task, {**VALID, "passage": PASSAGE}) == [("passage", "role")]


def test_validate_context_refuses_other_roles(task):
    with pytest.raises(InvalidInput) as caught:
        task.validate_context({"passage": PASSAGE, "question": "What?", "label": "answerable"})
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("question", "role"), ("label", "role")]


def test_validate_context_rules(task):
    with pytest.raises(InvalidInput) as caught:
        task.validate_context({})
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("passage", "required")]
    with pytest.raises(InvalidInput) as caught:
        task.validate_context({"passage": "x" * 501})
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("passage", "max_length")]


def test_all_broken_rules_are_reported_together(task):
    values = {"question": "Hm", "label": "maybe", "difficulty": 9, "mood": 1}
    assert errors_of(task, values) == [
        ("mood", "unknown_field"),
        ("question", "min_length"),
        ("label", "choice"),
        ("difficulty", "maximum"),
    ]


@pytest.mark.parametrize("values", [None, [], "question=hi"])
def test_fields_must_be_an_object(task, values):
    assert errors_of(task, values) == [("fields", "type")]


# --------------------------------------------------------------------------- declaration checks


def declared(**attrs) -> Task:
    base = {
        "code": "decl",
        "name": "Decl",
        "labels": ("a", "b"),
        "fields": (TextField(name="text", role=Role.INPUT), ChoiceField(name="label", role=Role.TARGET)),
    }
    return type("Declared", (Task,), {**base, **attrs})()


@pytest.mark.parametrize(
    ("attrs", "problem"),
    [
        ({"code": "Bad Code"}, "code must match"),
        ({"code": "x"}, "code must match"),
        (
            {"fields": (TextField(name="t", role=Role.INPUT), TextField(name="t", role=Role.TARGET))},
            "field names must be unique",
        ),
        ({"fields": (ChoiceField(name="label", role=Role.TARGET),)}, "at least one input field"),
        ({"fields": (TextField(name="text", role=Role.INPUT),)}, "at least one target field"),
        ({"labels": ()}, "offers the task's labels but the task has none"),
        (
            {
                "fields": (
                    TextField(name="q", role=Role.INPUT),
                    SpanField(name="a", role=Role.TARGET, context_field="passage"),
                )
            },
            "selects from unknown field passage",
        ),
    ],
)
def test_check_declaration_problems(attrs, problem):
    problems = declared(**attrs).check_declaration()
    assert any(problem in p for p in problems), problems


def test_check_declaration_of_a_good_task():
    assert declared().check_declaration() == []
    assert declared(code="ok-code_2").check_declaration() == []


# --------------------------------------------------------------------------- JSON Schema


_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}


def schema_errors(instance, schema, path="$") -> list[str]:
    """Errors of ``instance`` against ``schema``: jsonschema's when installed, else a check of the keywords that
    Task.json_schema emits (type, enum, minLength, maxLength, minimum, maximum, properties, required,
    additionalProperties)."""
    if jsonschema is not None:
        validator = jsonschema.Draft202012Validator(schema)
        return [e.message for e in validator.iter_errors(instance)]
    errors = []
    kind = schema.get("type")
    if kind and not _TYPES[kind](instance):
        return [f"{path}: not of type {kind}"]
    if "enum" in schema and instance not in schema["enum"]:
        errors.append(f"{path}: not one of {schema['enum']}")
    if isinstance(instance, str):
        if len(instance) < schema.get("minLength", 0):
            errors.append(f"{path}: too short")
        if len(instance) > schema.get("maxLength", math.inf):
            errors.append(f"{path}: too long")
    if kind in ("number", "integer"):
        if instance < schema.get("minimum", -math.inf):
            errors.append(f"{path}: below minimum")
        if instance > schema.get("maximum", math.inf):
            errors.append(f"{path}: above maximum")
    if kind == "object":
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in instance:
                errors.append(f"{path}.{name}: required")
        for name, value in instance.items():
            if name in properties:
                errors.extend(schema_errors(value, properties[name], f"{path}.{name}"))
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}.{name}: not allowed")
    return errors


def test_json_schema_structure(task):
    schema = task.json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "Reading" and schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == [f.name for f in task.fields]
    assert schema["required"] == ["passage", "question", "label"]
    props = schema["properties"]
    assert props["passage"] == {
        "type": "string",
        "minLength": 1,
        "maxLength": 500,
        "description": "The text to read.",
        "x-role": "context",
    }
    assert props["question"] == {"type": "string", "minLength": 5, "maxLength": 60, "x-role": "input"}
    assert props["label"] == {"type": "string", "enum": ["answerable", "unanswerable"], "x-role": "target"}
    assert props["answer"] == {
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": 20},
            "start": {"type": "integer", "minimum": 0},
        },
        "required": ["text", "start"],
        "additionalProperties": False,
        "x-span-of": "passage",
        "x-role": "target",
    }
    assert props["difficulty"] == {"type": "integer", "minimum": 1, "maximum": 5, "x-role": "metadata"}
    assert props["seconds"] == {"type": "number", "minimum": 0, "x-role": "metadata"}
    assert props["checked"] == {"type": "boolean", "x-role": "metadata"}
    assert props["source"] == {"type": "string", "enum": ["web", "book"], "x-role": "metadata"}


def test_json_schema_of_selected_roles(task):
    schema = task.json_schema(Role.INPUT, Role.TARGET)
    assert list(schema["properties"]) == ["question", "label", "answer"]
    assert schema["required"] == ["question", "label"]
    assert list(task.json_schema(Role.CONTEXT)["properties"]) == ["passage"]


def test_json_schema_validates_a_correct_sample(task):
    sample = {
        "passage": PASSAGE,
        **VALID,
        "difficulty": 2,
        "seconds": 3.5,
        "checked": True,
        "source": "book",
        "note": "fine",
    }
    assert schema_errors(sample, task.json_schema()) == []
    # and the task agrees with its schema
    assert task.validate_example(sample, None)


@pytest.mark.parametrize(
    "change",
    [
        {"label": "maybe"},
        {"question": "Hm"},
        {"question": 12},
        {"difficulty": 2.5},
        {"difficulty": 9},
        {"checked": "yes"},
        {"answer": {"text": "London"}},
        {"answer": {"text": "London", "start": -1}},
        {"answer": {"text": "London", "start": 31, "end": 38}},
        {"mood": "happy"},
        {"label": None},
    ],
)
def test_json_schema_rejects_a_wrong_sample(task, change):
    sample = {"passage": PASSAGE, **VALID, **change}
    if change.get("label", "") is None:
        del sample["label"]
    assert schema_errors(sample, task.json_schema()), f"schema accepted {change}"
    with pytest.raises(InvalidInput):  # the validator refuses it too
        task.validate_example(sample, None)


# --------------------------------------------------------------------------- the model in the loop


def test_build_model_input_default_sends_context_and_input_fields(task):
    cleaned = task.validate_example(with_(difficulty=2), CONTEXT)
    assert task.build_model_input(CONTEXT, cleaned) == {"passage": PASSAGE, "question": VALID["question"]}


def test_read_model_output_keeps_targets_and_confidence(task):
    output = {
        "label": "answerable",
        "answer": {"text": "London", "start": 31},
        "probabilities": {"answerable": 0.9},
        "confidence": 0.9,
        "logits": [1, 2],
    }
    assert task.read_model_output(output) == {
        "label": "answerable",
        "answer": {"text": "London", "start": 31},
        "probabilities": {"answerable": 0.9},
        "confidence": 0.9,
    }


@pytest.mark.parametrize("label", ["maybe", "ANSWERABLE", None, 1])
def test_read_model_output_rejects_a_label_outside_the_set(task, label):
    with pytest.raises(ValueError, match="not one of"):
        task.read_model_output({"label": label, "answer": None})


def test_read_model_output_rejects_missing_targets_and_non_objects(task):
    with pytest.raises(ValueError, match="lacks the target field 'answer'"):
        task.read_model_output({"label": "answerable"})
    with pytest.raises(ValueError, match="must be an object"):
        task.read_model_output(["answerable"])


def test_is_fooled_default_compares_every_target_field(task):
    example = task.validate_example(VALID, CONTEXT)
    same = {"label": "answerable", "answer": {"text": "London", "start": 31}, "confidence": 0.3}
    assert task.is_fooled(example, same, CONTEXT) is False
    assert task.is_fooled(example, {**same, "label": "unanswerable"}, CONTEXT) is True
    assert task.is_fooled(example, {**same, "answer": {"text": "Thames", "start": 10}}, CONTEXT) is True
    assert task.is_fooled(example, {"label": "answerable"}, CONTEXT) is True  # a missing target counts as wrong


def test_is_fooled_default_for_a_single_label_task():
    t = declared()
    assert t.is_fooled({"text": "x", "label": "a"}, {"label": "a", "probabilities": {"a": 0.6}}, {}) is False
    assert t.is_fooled({"text": "x", "label": "a"}, {"label": "b"}, {}) is True


def test_train_is_optional(task):
    with pytest.raises(NotImplementedError, match="task reading has no training command"):
        task.train("data", None)


def test_model_spec_round_trip():
    spec = ModelSpec("m", "python", {"callable": "pkg.mod:fn"})
    assert ModelSpec.from_dict(spec.as_dict()) == spec
    assert ModelSpec.from_dict({"name": "m", "backend": "python", "config": None}).config == {}
