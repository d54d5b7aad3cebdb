from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode
from .fragments import CrowdStudyFields


class PayCrowdBonuses(BaseModel):
    pay_crowd_bonuses: Union[
        "PayCrowdBonusesPayCrowdBonusesCrowdBonusesPaid",
        "PayCrowdBonusesPayCrowdBonusesInvalidInput",
        "PayCrowdBonusesPayCrowdBonusesNotAuthenticated",
        "PayCrowdBonusesPayCrowdBonusesForbidden",
        "PayCrowdBonusesPayCrowdBonusesNotFound",
        "PayCrowdBonusesPayCrowdBonusesAlreadyExists",
    ] = Field(alias="payCrowdBonuses", discriminator="typename__")


class PayCrowdBonusesPayCrowdBonusesCrowdBonusesPaid(BaseModel):
    typename__: Literal["CrowdBonusesPaid"] = Field(alias="__typename")
    reference: str
    participants: int
    amount: int
    study: "PayCrowdBonusesPayCrowdBonusesCrowdBonusesPaidStudy"


PayCrowdBonusesPayCrowdBonusesCrowdBonusesPaidStudy = CrowdStudyFields


class PayCrowdBonusesPayCrowdBonusesInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list["PayCrowdBonusesPayCrowdBonusesInvalidInputFieldErrors"] = Field(
        alias="fieldErrors"
    )


class PayCrowdBonusesPayCrowdBonusesInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class PayCrowdBonusesPayCrowdBonusesNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class PayCrowdBonusesPayCrowdBonusesForbidden(BaseModel):
    typename__: Literal["Forbidden"] = Field(alias="__typename")
    message: str


class PayCrowdBonusesPayCrowdBonusesNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


class PayCrowdBonusesPayCrowdBonusesAlreadyExists(BaseModel):
    typename__: Literal["AlreadyExists"] = Field(alias="__typename")
    message: str


PayCrowdBonuses.model_rebuild()
PayCrowdBonusesPayCrowdBonusesCrowdBonusesPaid.model_rebuild()
PayCrowdBonusesPayCrowdBonusesInvalidInput.model_rebuild()
