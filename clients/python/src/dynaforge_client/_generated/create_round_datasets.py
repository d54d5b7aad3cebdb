from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode
from .fragments import DatasetFields


class CreateRoundDatasets(BaseModel):
    create_round_datasets: Union[
        "CreateRoundDatasetsCreateRoundDatasetsDatasetsCreated",
        "CreateRoundDatasetsCreateRoundDatasetsInvalidInput",
        "CreateRoundDatasetsCreateRoundDatasetsNotAuthenticated",
        "CreateRoundDatasetsCreateRoundDatasetsForbidden",
        "CreateRoundDatasetsCreateRoundDatasetsNotFound",
        "CreateRoundDatasetsCreateRoundDatasetsAlreadyExists",
    ] = Field(alias="createRoundDatasets", discriminator="typename__")


class CreateRoundDatasetsCreateRoundDatasetsDatasetsCreated(BaseModel):
    typename__: Literal["DatasetsCreated"] = Field(alias="__typename")
    datasets: list["CreateRoundDatasetsCreateRoundDatasetsDatasetsCreatedDatasets"]


CreateRoundDatasetsCreateRoundDatasetsDatasetsCreatedDatasets = DatasetFields


class CreateRoundDatasetsCreateRoundDatasetsInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list[
        "CreateRoundDatasetsCreateRoundDatasetsInvalidInputFieldErrors"
    ] = Field(alias="fieldErrors")


class CreateRoundDatasetsCreateRoundDatasetsInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class CreateRoundDatasetsCreateRoundDatasetsNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class CreateRoundDatasetsCreateRoundDatasetsForbidden(BaseModel):
    typename__: Literal["Forbidden"] = Field(alias="__typename")
    message: str


class CreateRoundDatasetsCreateRoundDatasetsNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


class CreateRoundDatasetsCreateRoundDatasetsAlreadyExists(BaseModel):
    typename__: Literal["AlreadyExists"] = Field(alias="__typename")
    message: str


CreateRoundDatasets.model_rebuild()
CreateRoundDatasetsCreateRoundDatasetsDatasetsCreated.model_rebuild()
CreateRoundDatasetsCreateRoundDatasetsInvalidInput.model_rebuild()
