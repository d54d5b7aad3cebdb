from typing import Literal, Optional, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode, Quota
from .fragments import ModelFields


class SubmitPredictions(BaseModel):
    submit_predictions: Union[
        "SubmitPredictionsSubmitPredictionsModelSubmitted",
        "SubmitPredictionsSubmitPredictionsInvalidInput",
        "SubmitPredictionsSubmitPredictionsNotAuthenticated",
        "SubmitPredictionsSubmitPredictionsNotFound",
        "SubmitPredictionsSubmitPredictionsQuotaExceeded",
    ] = Field(alias="submitPredictions", discriminator="typename__")


class SubmitPredictionsSubmitPredictionsModelSubmitted(BaseModel):
    typename__: Literal["ModelSubmitted"] = Field(alias="__typename")
    model: "SubmitPredictionsSubmitPredictionsModelSubmittedModel"


SubmitPredictionsSubmitPredictionsModelSubmittedModel = ModelFields


class SubmitPredictionsSubmitPredictionsInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list["SubmitPredictionsSubmitPredictionsInvalidInputFieldErrors"] = (
        Field(alias="fieldErrors")
    )


class SubmitPredictionsSubmitPredictionsInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class SubmitPredictionsSubmitPredictionsNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class SubmitPredictionsSubmitPredictionsNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


class SubmitPredictionsSubmitPredictionsQuotaExceeded(BaseModel):
    typename__: Literal["QuotaExceeded"] = Field(alias="__typename")
    message: str
    quota: Quota
    limit: int
    resets_in_seconds: Optional[float] = Field(alias="resetsInSeconds")


SubmitPredictions.model_rebuild()
SubmitPredictionsSubmitPredictionsModelSubmitted.model_rebuild()
SubmitPredictionsSubmitPredictionsInvalidInput.model_rebuild()
