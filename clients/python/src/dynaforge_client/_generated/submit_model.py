from typing import Literal, Optional, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode, Quota
from .fragments import ModelFields


class SubmitModel(BaseModel):
    submit_model: Union[
        "SubmitModelSubmitModelModelSubmitted",
        "SubmitModelSubmitModelInvalidInput",
        "SubmitModelSubmitModelNotAuthenticated",
        "SubmitModelSubmitModelNotFound",
        "SubmitModelSubmitModelQuotaExceeded",
    ] = Field(alias="submitModel", discriminator="typename__")


class SubmitModelSubmitModelModelSubmitted(BaseModel):
    typename__: Literal["ModelSubmitted"] = Field(alias="__typename")
    model: "SubmitModelSubmitModelModelSubmittedModel"


SubmitModelSubmitModelModelSubmittedModel = ModelFields


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


class SubmitModelSubmitModelQuotaExceeded(BaseModel):
    typename__: Literal["QuotaExceeded"] = Field(alias="__typename")
    message: str
    quota: Quota
    limit: int
    resets_in_seconds: Optional[float] = Field(alias="resetsInSeconds")


SubmitModel.model_rebuild()
SubmitModelSubmitModelModelSubmitted.model_rebuild()
SubmitModelSubmitModelInvalidInput.model_rebuild()
