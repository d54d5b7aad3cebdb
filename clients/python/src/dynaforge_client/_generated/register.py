from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode
from .fragments import UserFields


class Register(BaseModel):
    account: Union[
        "RegisterAccountAuthPayload",
        "RegisterAccountInvalidInput",
        "RegisterAccountAlreadyExists",
        "RegisterAccountRateLimited",
    ] = Field(discriminator="typename__")


class RegisterAccountAuthPayload(BaseModel):
    typename__: Literal["AuthPayload"] = Field(alias="__typename")
    token: str
    user: "RegisterAccountAuthPayloadUser"


RegisterAccountAuthPayloadUser = UserFields


class RegisterAccountInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list["RegisterAccountInvalidInputFieldErrors"] = Field(
        alias="fieldErrors"
    )


class RegisterAccountInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class RegisterAccountAlreadyExists(BaseModel):
    typename__: Literal["AlreadyExists"] = Field(alias="__typename")
    message: str


class RegisterAccountRateLimited(BaseModel):
    typename__: Literal["RateLimited"] = Field(alias="__typename")
    message: str
    retry_after_seconds: float = Field(alias="retryAfterSeconds")


Register.model_rebuild()
RegisterAccountAuthPayload.model_rebuild()
RegisterAccountInvalidInput.model_rebuild()
