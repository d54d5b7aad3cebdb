from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode
from .fragments import ExampleFields


class WithdrawValidation(BaseModel):
    withdraw_validation: Union[
        "WithdrawValidationWithdrawValidationValidationWithdrawn",
        "WithdrawValidationWithdrawValidationInvalidInput",
        "WithdrawValidationWithdrawValidationNotAuthenticated",
        "WithdrawValidationWithdrawValidationNotFound",
        "WithdrawValidationWithdrawValidationConflict",
    ] = Field(alias="withdrawValidation", discriminator="typename__")


class WithdrawValidationWithdrawValidationValidationWithdrawn(BaseModel):
    typename__: Literal["ValidationWithdrawn"] = Field(alias="__typename")
    example: "WithdrawValidationWithdrawValidationValidationWithdrawnExample"


WithdrawValidationWithdrawValidationValidationWithdrawnExample = ExampleFields


class WithdrawValidationWithdrawValidationInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list[
        "WithdrawValidationWithdrawValidationInvalidInputFieldErrors"
    ] = Field(alias="fieldErrors")


class WithdrawValidationWithdrawValidationInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class WithdrawValidationWithdrawValidationNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class WithdrawValidationWithdrawValidationNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


class WithdrawValidationWithdrawValidationConflict(BaseModel):
    typename__: Literal["Conflict"] = Field(alias="__typename")
    message: str


WithdrawValidation.model_rebuild()
WithdrawValidationWithdrawValidationValidationWithdrawn.model_rebuild()
WithdrawValidationWithdrawValidationInvalidInput.model_rebuild()
