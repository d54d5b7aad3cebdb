from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode
from .fragments import ModelFields


class SubmitModel(BaseModel):
    submit_model: Union[
        "SubmitModelSubmitModelSubmittedModel",
        "SubmitModelSubmitModelInvalidInput",
        "SubmitModelSubmitModelNotAuthenticated",
        "SubmitModelSubmitModelNotFound",
        "SubmitModelSubmitModelRateLimited",
    ] = Field(alias="submitModel", discriminator="typename__")


class SubmitModelSubmitModelSubmittedModel(BaseModel):
    typename__: Literal["SubmittedModel"] = Field(alias="__typename")
    model: "SubmitModelSubmitModelSubmittedModelModel"


SubmitModelSubmitModelSubmittedModelModel = ModelFields


class SubmitModelSubmitModelInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list["SubmitModelSubmitModelInvalidInputFieldErrors"] = Field(
        alias="fieldErrors"
    )


class SubmitModelSubmitModelInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class SubmitModelSubmitModelNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class SubmitModelSubmitModelNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


class SubmitModelSubmitModelRateLimited(BaseModel):
    typename__: Literal["RateLimited"] = Field(alias="__typename")
    message: str
    retry_after_seconds: float = Field(alias="retryAfterSeconds")


SubmitModel.model_rebuild()
SubmitModelSubmitModelSubmittedModel.model_rebuild()
SubmitModelSubmitModelInvalidInput.model_rebuild()
