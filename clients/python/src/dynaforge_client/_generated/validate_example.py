from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode
from .fragments import ExampleFields


class ValidateExample(BaseModel):
    validate_example: Union[
        "ValidateExampleValidateExampleValidationRecorded",
        "ValidateExampleValidateExampleInvalidInput",
        "ValidateExampleValidateExampleNotAuthenticated",
        "ValidateExampleValidateExampleForbidden",
        "ValidateExampleValidateExampleNotFound",
        "ValidateExampleValidateExampleAlreadyExists",
        "ValidateExampleValidateExampleConflict",
        "ValidateExampleValidateExampleRateLimited",
    ] = Field(alias="validateExample", discriminator="typename__")


class ValidateExampleValidateExampleValidationRecorded(BaseModel):
    typename__: Literal["ValidationRecorded"] = Field(alias="__typename")
    decided: bool
    example: "ValidateExampleValidateExampleValidationRecordedExample"


ValidateExampleValidateExampleValidationRecordedExample = ExampleFields


class ValidateExampleValidateExampleInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list["ValidateExampleValidateExampleInvalidInputFieldErrors"] = Field(
        alias="fieldErrors"
    )


class ValidateExampleValidateExampleInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class ValidateExampleValidateExampleNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class ValidateExampleValidateExampleForbidden(BaseModel):
    typename__: Literal["Forbidden"] = Field(alias="__typename")
    message: str


class ValidateExampleValidateExampleNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


class ValidateExampleValidateExampleAlreadyExists(BaseModel):
    typename__: Literal["AlreadyExists"] = Field(alias="__typename")
    message: str


class ValidateExampleValidateExampleConflict(BaseModel):
    typename__: Literal["Conflict"] = Field(alias="__typename")
    message: str


class ValidateExampleValidateExampleRateLimited(BaseModel):
    typename__: Literal["RateLimited"] = Field(alias="__typename")
    message: str
    retry_after_seconds: float = Field(alias="retryAfterSeconds")


ValidateExample.model_rebuild()
ValidateExampleValidateExampleValidationRecorded.model_rebuild()
ValidateExampleValidateExampleInvalidInput.model_rebuild()
