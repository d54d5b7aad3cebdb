from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode
from .fragments import CrowdStudyFields


class CreateCrowdStudy(BaseModel):
    create_crowd_study: Union[
        "CreateCrowdStudyCreateCrowdStudyCrowdStudyCreated",
        "CreateCrowdStudyCreateCrowdStudyInvalidInput",
        "CreateCrowdStudyCreateCrowdStudyNotAuthenticated",
        "CreateCrowdStudyCreateCrowdStudyForbidden",
        "CreateCrowdStudyCreateCrowdStudyNotFound",
        "CreateCrowdStudyCreateCrowdStudyAlreadyExists",
    ] = Field(alias="createCrowdStudy", discriminator="typename__")


class CreateCrowdStudyCreateCrowdStudyCrowdStudyCreated(BaseModel):
    typename__: Literal["CrowdStudyCreated"] = Field(alias="__typename")
    study: "CreateCrowdStudyCreateCrowdStudyCrowdStudyCreatedStudy"


CreateCrowdStudyCreateCrowdStudyCrowdStudyCreatedStudy = CrowdStudyFields


class CreateCrowdStudyCreateCrowdStudyInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list["CreateCrowdStudyCreateCrowdStudyInvalidInputFieldErrors"] = (
        Field(alias="fieldErrors")
    )


class CreateCrowdStudyCreateCrowdStudyInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class CreateCrowdStudyCreateCrowdStudyNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class CreateCrowdStudyCreateCrowdStudyForbidden(BaseModel):
    typename__: Literal["Forbidden"] = Field(alias="__typename")
    message: str


class CreateCrowdStudyCreateCrowdStudyNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


class CreateCrowdStudyCreateCrowdStudyAlreadyExists(BaseModel):
    typename__: Literal["AlreadyExists"] = Field(alias="__typename")
    message: str


CreateCrowdStudy.model_rebuild()
CreateCrowdStudyCreateCrowdStudyCrowdStudyCreated.model_rebuild()
CreateCrowdStudyCreateCrowdStudyInvalidInput.model_rebuild()
