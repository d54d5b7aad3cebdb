from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode
from .fragments import ValidatorQualityFields


class SetValidatorWeights(BaseModel):
    set_validator_weights: Union[
        "SetValidatorWeightsSetValidatorWeightsValidatorWeightsSet",
        "SetValidatorWeightsSetValidatorWeightsInvalidInput",
        "SetValidatorWeightsSetValidatorWeightsNotAuthenticated",
        "SetValidatorWeightsSetValidatorWeightsForbidden",
        "SetValidatorWeightsSetValidatorWeightsNotFound",
    ] = Field(alias="setValidatorWeights", discriminator="typename__")


class SetValidatorWeightsSetValidatorWeightsValidatorWeightsSet(BaseModel):
    typename__: Literal["ValidatorWeightsSet"] = Field(alias="__typename")
    quality: "SetValidatorWeightsSetValidatorWeightsValidatorWeightsSetQuality"


SetValidatorWeightsSetValidatorWeightsValidatorWeightsSetQuality = (
    ValidatorQualityFields
)


class SetValidatorWeightsSetValidatorWeightsInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list[
        "SetValidatorWeightsSetValidatorWeightsInvalidInputFieldErrors"
    ] = Field(alias="fieldErrors")


class SetValidatorWeightsSetValidatorWeightsInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class SetValidatorWeightsSetValidatorWeightsNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class SetValidatorWeightsSetValidatorWeightsForbidden(BaseModel):
    typename__: Literal["Forbidden"] = Field(alias="__typename")
    message: str


class SetValidatorWeightsSetValidatorWeightsNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


SetValidatorWeights.model_rebuild()
SetValidatorWeightsSetValidatorWeightsValidatorWeightsSet.model_rebuild()
SetValidatorWeightsSetValidatorWeightsInvalidInput.model_rebuild()
