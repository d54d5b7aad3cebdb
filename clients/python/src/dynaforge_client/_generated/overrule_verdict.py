from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode
from .fragments import ExampleFields


class OverruleVerdict(BaseModel):
    overrule_verdict: Union[
        "OverruleVerdictOverruleVerdictVerdictOverruled",
        "OverruleVerdictOverruleVerdictInvalidInput",
        "OverruleVerdictOverruleVerdictNotAuthenticated",
        "OverruleVerdictOverruleVerdictForbidden",
        "OverruleVerdictOverruleVerdictNotFound",
        "OverruleVerdictOverruleVerdictConflict",
    ] = Field(alias="overruleVerdict", discriminator="typename__")


class OverruleVerdictOverruleVerdictVerdictOverruled(BaseModel):
    typename__: Literal["VerdictOverruled"] = Field(alias="__typename")
    example: "OverruleVerdictOverruleVerdictVerdictOverruledExample"


OverruleVerdictOverruleVerdictVerdictOverruledExample = ExampleFields


class OverruleVerdictOverruleVerdictInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list["OverruleVerdictOverruleVerdictInvalidInputFieldErrors"] = Field(
        alias="fieldErrors"
    )


class OverruleVerdictOverruleVerdictInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class OverruleVerdictOverruleVerdictNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class OverruleVerdictOverruleVerdictForbidden(BaseModel):
    typename__: Literal["Forbidden"] = Field(alias="__typename")
    message: str


class OverruleVerdictOverruleVerdictNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


class OverruleVerdictOverruleVerdictConflict(BaseModel):
    typename__: Literal["Conflict"] = Field(alias="__typename")
    message: str


OverruleVerdict.model_rebuild()
OverruleVerdictOverruleVerdictVerdictOverruled.model_rebuild()
OverruleVerdictOverruleVerdictInvalidInput.model_rebuild()
