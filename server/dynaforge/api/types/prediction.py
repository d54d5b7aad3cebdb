"""A target model's prediction as typed objects: what every task shares is typed, the task's own shape stays JSON.

The stored prediction is a dict keyed by the task's target field names (``{"label": "entailment"}``, ``{"answer":
{"text": ..., "start": ...}}``) plus what the platform adds: ``probabilities`` (label -> probability) and
``confidence`` when the backend gave them, ``generation`` (the raw reply, tokens, time to first token) from a backend
of models that write, and ``ensemble`` (rule, members, fooledMembers) for an ensemble.
"""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.enums import EnsembleRule
from dynaforge.tasks.base import Task
from dynaforge.tasks.fields import ChoiceField, Role, SpanField

#: Keys the platform adds beside the target fields.
PLATFORM_KEYS = ("probabilities", "confidence", "generation", "ensemble")


@strawberry.type(description="One label and the probability the model gave it.")
class LabelProbability:
    label: str = strawberry.field(description="One of the task's labels.")
    probability: float = strawberry.field(description="Between 0 and 1; a prediction's probabilities add up to 1.")


@strawberry.type(description="A span of a context field: its text and where it starts.")
class SpanAnswer:
    text: str = strawberry.field(description="The selected text, exactly as it stands in the context field.")
    start: int = strawberry.field(description="Its offset (in characters) in the context field it was selected from.")


@strawberry.type(description="How an ensemble reached its verdict.")
class EnsembleVerdict:
    rule: EnsembleRule = strawberry.field(description="The round's ensemble rule.")
    members: int = strawberry.field(description="How many target models answered.")
    fooled_members: int = strawberry.field(description="How many of them the example fooled.")


@strawberry.type(description="How a model that writes produced its reply, as its backend measured it.")
class Generation:
    text: str = strawberry.field(description="The reply as the model wrote it, before the task's parser read it.")
    tokens: int | None = strawberry.field(description="How many tokens it wrote (the server's count, if it gave one).")
    time_to_first_token_ms: float | None = strawberry.field(
        description="Milliseconds from the request to the reply's first token."
    )
    total_ms: float | None = strawberry.field(description="Milliseconds from the request to the reply's end.")
    finish_reason: str | None = strawberry.field(
        description="Why the model stopped, as its server said (stop, length, ...)."
    )

    @classmethod
    def of(cls, g: Any) -> Generation | None:
        if not isinstance(g, dict):
            return None

        def number(key: str) -> float | None:
            value = g.get(key)
            return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

        tokens = g.get("tokens")
        return cls(
            text=str(g.get("text") or ""),
            tokens=tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None,
            time_to_first_token_ms=number("ttft_ms"),
            total_ms=number("total_ms"),
            finish_reason=g.get("finish_reason") if isinstance(g.get("finish_reason"), str) else None,
        )


@strawberry.type(
    description="A target model's answer. `fields` has the task's target fields as the model filled them (the "
    "task's shape); `label`, `span` and `probabilities` are the same answer typed, where the task has such a field."
)
class Prediction:
    fields: JSON = strawberry.field(
        description="The task's target fields as the model answered, keyed by field name (the task's plugin defines "
        "their shape)."
    )
    label: str | None = strawberry.field(description="The answer of the task's first choice target field, if any.")
    span: SpanAnswer | None = strawberry.field(description="The answer of the task's first span target field, if any.")
    probabilities: list[LabelProbability] | None = strawberry.field(
        description="Each label's probability, most likely first, when the model gave them."
    )
    confidence: float | None = strawberry.field(description="The model's confidence, when it gave one.")
    ensemble: EnsembleVerdict | None = strawberry.field(
        description="For an ensemble of target models: the rule and how many members were fooled; null for one model."
    )
    generation: Generation | None = strawberry.field(
        description="A model that writes: its raw reply, tokens and timing; null for other models."
    )

    @classmethod
    def of(cls, stored: dict[str, Any], task: Task | None) -> Prediction:
        fields = {k: v for k, v in stored.items() if k not in PLATFORM_KEYS}
        label = span = None
        for f in task.fields_with(Role.TARGET) if task is not None else ():
            value = fields.get(f.name)
            if label is None and isinstance(f, ChoiceField) and isinstance(value, str):
                label = value
            elif (
                span is None
                and isinstance(f, SpanField)
                and isinstance(value, dict)
                and isinstance(value.get("text"), str)
                and isinstance(value.get("start"), int)
            ):
                span = SpanAnswer(text=value["text"], start=value["start"])
        raw = stored.get("probabilities")
        probabilities = None
        if isinstance(raw, dict):
            probabilities = [
                LabelProbability(label=str(k), probability=float(v))
                for k, v in sorted(raw.items(), key=lambda kv: -float(kv[1]))
                if isinstance(v, int | float)
            ]
        confidence = stored.get("confidence")
        ensemble = stored.get("ensemble")
        return cls(
            fields=JSON(fields),
            label=label,
            span=span,
            probabilities=probabilities,
            confidence=float(confidence) if isinstance(confidence, int | float) else None,
            ensemble=EnsembleVerdict(
                rule=EnsembleRule(ensemble["rule"]),
                members=int(ensemble["members"]),
                fooled_members=int(ensemble["fooledMembers"]),
            )
            if isinstance(ensemble, dict)
            else None,
            generation=Generation.of(stored.get("generation")),
        )


@strawberry.type(description="One target model's own answer to an example, and whether the example fooled it.")
class ModelPrediction:
    model: str = strawberry.field(description="The target model's name in the round.")
    prediction: Prediction = strawberry.field(description="This model's own answer, typed like Example.prediction.")
    fooled: bool | None = strawberry.field(description="Whether this model got it wrong (null for older examples).")
    latency_ms: float | None = strawberry.field(description="How long this model took to answer, in milliseconds.")

    @classmethod
    def of(cls, member: dict[str, Any], task: Task | None) -> ModelPrediction:
        latency = member.get("latency_ms")
        fooled = member.get("fooled")
        return cls(
            model=str(member.get("model", "")),
            prediction=Prediction.of(member.get("prediction") or {}, task),
            fooled=fooled if isinstance(fooled, bool) else None,
            latency_ms=float(latency) if isinstance(latency, int | float) else None,
        )
