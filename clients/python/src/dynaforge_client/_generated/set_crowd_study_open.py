from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode
from .fragments import CrowdStudyFields


class SetCrowdStudyOpen(BaseModel):
    set_crowd_study_open: Union[
        "SetCrowdStudyOpenSetCrowdStudyOpenCrowdStudyChanged",
        "SetCrowdStudyOpenSetCrowdStudyOpenInvalidInput",
        "SetCrowdStudyOpenSetCrowdStudyOpenNotAuthenticated",
        "SetCrowdStudyOpenSetCrowdStudyOpenForbidden",
        "SetCrowdStudyOpenSetCrowdStudyOpenNotFound",
    ] = Field(alias="setCrowdStudyOpen", discriminator="typename__")


class SetCrowdStudyOpenSetCrowdStudyOpenCrowdStudyChanged(BaseModel):
    typename__: Literal["CrowdStudyChanged"] = Field(alias="__typename")
    study: "SetCrowdStudyOpenSetCrowdStudyOpenCrowdStudyChangedStudy"


SetCrowdStudyOpenSetCrowdStudyOpenCrowdStudyChangedStudy = CrowdStudyFields


class SetCrowdStudyOpenSetCrowdStudyOpenInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list["SetCrowdStudyOpenSetCrowdStudyOpenInvalidInputFieldErrors"] = (
        Field(alias="fieldErrors")
    )


class SetCrowdStudyOpenSetCrowdStudyOpenInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class SetCrowdStudyOpenSetCrowdStudyOpenNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class SetCrowdStudyOpenSetCrowdStudyOpenForbidden(BaseModel):
    typename__: Literal["Forbidden"] = Field(alias="__typename")
    message: str


class SetCrowdStudyOpenSetCrowdStudyOpenNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


SetCrowdStudyOpen.model_rebuild()
SetCrowdStudyOpenSetCrowdStudyOpenCrowdStudyChanged.model_rebuild()
SetCrowdStudyOpenSetCrowdStudyOpenInvalidInput.model_rebuild()
