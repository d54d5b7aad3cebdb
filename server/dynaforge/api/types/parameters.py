"""Hyper-parameters, typed: a recipe declares each one by its default, and the values a job, a registered model or a
tuning trial carries are read back with the type of their value, so that a client reads a number as a number and
never has to parse JSON to learn what it got."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

import strawberry


@strawberry.enum(description="The type of a recipe's hyper-parameter: a value given must have it.")
class ParameterType(Enum):
    BOOLEAN = strawberry.enum_value("BOOLEAN", description="true or false.")
    INTEGER = strawberry.enum_value("INTEGER", description="A whole number.")
    NUMBER = strawberry.enum_value("NUMBER", description="A number (a whole number is accepted).")
    STRING = strawberry.enum_value("STRING", description="Text.")


_PARAMETER_TYPES = {bool: ParameterType.BOOLEAN, int: ParameterType.INTEGER, float: ParameterType.NUMBER}


def parameter_type(value: Any) -> ParameterType:
    """The type a value has (text for anything that is not a boolean or a number)."""
    return _PARAMETER_TYPES.get(type(value), ParameterType.STRING)


@strawberry.type(
    description="A hyper-parameter's value, typed: the field named after its `type` holds it (`number` for NUMBER, "
    "`integer` for INTEGER...), the others are null; all are null for a value left unset (null)."
)
class ParameterValue:
    name: str = strawberry.field(description="The hyper-parameter (one of TrainingRecipe.parameters).")
    type: ParameterType = strawberry.field(description="The type of the value.")
    boolean: bool | None = strawberry.field(description="A BOOLEAN's value.")
    integer: int | None = strawberry.field(description="An INTEGER's value.")
    number: float | None = strawberry.field(description="A NUMBER's value.")
    string: str | None = strawberry.field(description="A STRING's value (text).")

    @classmethod
    def of(cls, name: str, value: Any) -> ParameterValue:
        kind = parameter_type(value)
        return cls(
            name=name,
            type=kind,
            boolean=value if kind is ParameterType.BOOLEAN else None,
            integer=value if kind is ParameterType.INTEGER else None,
            number=value if kind is ParameterType.NUMBER else None,
            string=None if value is None or kind is not ParameterType.STRING else str(value),
        )


def parameter_values(values: Mapping[str, Any] | None) -> list[ParameterValue]:
    """Each of ``values`` (a hyper-parameters mapping), typed, in its order."""
    return [ParameterValue.of(name, value) for name, value in (values or {}).items()]
