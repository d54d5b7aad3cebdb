from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode
from .fragments import CrowdStudyFields


class RecordCrowdBonuses(BaseModel):
    record_crowd_bonuses: Union[
        "RecordCrowdBonusesRecordCrowdBonusesCrowdBonusesRecorded",
        "RecordCrowdBonusesRecordCrowdBonusesInvalidInput",
        "RecordCrowdBonusesRecordCrowdBonusesNotAuthenticated",
        "RecordCrowdBonusesRecordCrowdBonusesForbidden",
        "RecordCrowdBonusesRecordCrowdBonusesNotFound",
        "RecordCrowdBonusesRecordCrowdBonusesAlreadyExists",
    ] = Field(alias="recordCrowdBonuses", discriminator="typename__")


class RecordCrowdBonusesRecordCrowdBonusesCrowdBonusesRecorded(BaseModel):
    typename__: Literal["CrowdBonusesRecorded"] = Field(alias="__typename")
    reference: str
    participants: int
    amount: int
    study: "RecordCrowdBonusesRecordCrowdBonusesCrowdBonusesRecordedStudy"


RecordCrowdBonusesRecordCrowdBonusesCrowdBonusesRecordedStudy = CrowdStudyFields


class RecordCrowdBonusesRecordCrowdBonusesInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list[
        "RecordCrowdBonusesRecordCrowdBonusesInvalidInputFieldErrors"
    ] = Field(alias="fieldErrors")


class RecordCrowdBonusesRecordCrowdBonusesInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class RecordCrowdBonusesRecordCrowdBonusesNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class RecordCrowdBonusesRecordCrowdBonusesForbidden(BaseModel):
    typename__: Literal["Forbidden"] = Field(alias="__typename")
    message: str


class RecordCrowdBonusesRecordCrowdBonusesNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


class RecordCrowdBonusesRecordCrowdBonusesAlreadyExists(BaseModel):
    typename__: Literal["AlreadyExists"] = Field(alias="__typename")
    message: str


RecordCrowdBonuses.model_rebuild()
RecordCrowdBonusesRecordCrowdBonusesCrowdBonusesRecorded.model_rebuild()
RecordCrowdBonusesRecordCrowdBonusesInvalidInput.model_rebuild()
