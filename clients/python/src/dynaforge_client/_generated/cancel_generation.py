from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode
from .fragments import AdversaryRunFields


class CancelGeneration(BaseModel):
    cancel_generation: Union[
        "CancelGenerationCancelGenerationGenerationCancelled",
        "CancelGenerationCancelGenerationInvalidInput",
        "CancelGenerationCancelGenerationNotAuthenticated",
        "CancelGenerationCancelGenerationNotFound",
    ] = Field(alias="cancelGeneration", discriminator="typename__")


class CancelGenerationCancelGenerationGenerationCancelled(BaseModel):
    typename__: Literal["GenerationCancelled"] = Field(alias="__typename")
    run: "CancelGenerationCancelGenerationGenerationCancelledRun"


CancelGenerationCancelGenerationGenerationCancelledRun = AdversaryRunFields


class CancelGenerationCancelGenerationInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list["CancelGenerationCancelGenerationInvalidInputFieldErrors"] = (
        Field(alias="fieldErrors")
    )


class CancelGenerationCancelGenerationInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class CancelGenerationCancelGenerationNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class CancelGenerationCancelGenerationNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


CancelGeneration.model_rebuild()
CancelGenerationCancelGenerationGenerationCancelled.model_rebuild()
CancelGenerationCancelGenerationInvalidInput.model_rebuild()
