from typing import Literal, Optional, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode, Quota
from .fragments import ModelFields


class UploadModel(BaseModel):
    upload_model: Union[
        "UploadModelUploadModelModelUploaded",
        "UploadModelUploadModelInvalidInput",
        "UploadModelUploadModelNotAuthenticated",
        "UploadModelUploadModelNotFound",
        "UploadModelUploadModelQuotaExceeded",
    ] = Field(alias="uploadModel", discriminator="typename__")


class UploadModelUploadModelModelUploaded(BaseModel):
    typename__: Literal["ModelUploaded"] = Field(alias="__typename")
    artifact: str
    files: list[str]
    size: float
    stored: bool
    model: "UploadModelUploadModelModelUploadedModel"


UploadModelUploadModelModelUploadedModel = ModelFields


class UploadModelUploadModelInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list["UploadModelUploadModelInvalidInputFieldErrors"] = Field(
        alias="fieldErrors"
    )


class UploadModelUploadModelInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class UploadModelUploadModelNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class UploadModelUploadModelNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


class UploadModelUploadModelQuotaExceeded(BaseModel):
    typename__: Literal["QuotaExceeded"] = Field(alias="__typename")
    message: str
    quota: Quota
    limit: int
    resets_in_seconds: Optional[float] = Field(alias="resetsInSeconds")


UploadModel.model_rebuild()
UploadModelUploadModelModelUploaded.model_rebuild()
UploadModelUploadModelInvalidInput.model_rebuild()
