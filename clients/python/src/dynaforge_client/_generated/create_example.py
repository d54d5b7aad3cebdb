from typing import Literal, Optional, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode, Quota, VerdictSource
from .fragments import ExampleFields


class CreateExample(BaseModel):
    create_example: Union[
        "CreateExampleCreateExampleExampleCreated",
        "CreateExampleCreateExamplePredictionPending",
        "CreateExampleCreateExampleVerdictPending",
        "CreateExampleCreateExampleInvalidInput",
        "CreateExampleCreateExampleNotAuthenticated",
        "CreateExampleCreateExampleForbidden",
        "CreateExampleCreateExampleNotFound",
        "CreateExampleCreateExampleRateLimited",
        "CreateExampleCreateExampleQuotaExceeded",
        "CreateExampleCreateExampleRoundClosed",
        "CreateExampleCreateExampleNearDuplicate",
    ] = Field(alias="createExample", discriminator="typename__")


class CreateExampleCreateExampleExampleCreated(BaseModel):
    typename__: Literal["ExampleCreated"] = Field(alias="__typename")
    fooled: bool
    example: "CreateExampleCreateExampleExampleCreatedExample"


CreateExampleCreateExampleExampleCreatedExample = ExampleFields


class CreateExampleCreateExamplePredictionPending(BaseModel):
    typename__: Literal["PredictionPending"] = Field(alias="__typename")
    message: str
    example: "CreateExampleCreateExamplePredictionPendingExample"


CreateExampleCreateExamplePredictionPendingExample = ExampleFields


class CreateExampleCreateExampleVerdictPending(BaseModel):
    typename__: Literal["VerdictPending"] = Field(alias="__typename")
    decided_by: VerdictSource = Field(alias="decidedBy")
    example: "CreateExampleCreateExampleVerdictPendingExample"


CreateExampleCreateExampleVerdictPendingExample = ExampleFields


class CreateExampleCreateExampleInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list["CreateExampleCreateExampleInvalidInputFieldErrors"] = Field(
        alias="fieldErrors"
    )


class CreateExampleCreateExampleInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class CreateExampleCreateExampleNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class CreateExampleCreateExampleForbidden(BaseModel):
    typename__: Literal["Forbidden"] = Field(alias="__typename")
    message: str


class CreateExampleCreateExampleNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


class CreateExampleCreateExampleRateLimited(BaseModel):
    typename__: Literal["RateLimited"] = Field(alias="__typename")
    message: str
    retry_after_seconds: float = Field(alias="retryAfterSeconds")


class CreateExampleCreateExampleQuotaExceeded(BaseModel):
    typename__: Literal["QuotaExceeded"] = Field(alias="__typename")
    message: str
    quota: Quota
    limit: int
    resets_in_seconds: Optional[float] = Field(alias="resetsInSeconds")


class CreateExampleCreateExampleRoundClosed(BaseModel):
    typename__: Literal["RoundClosed"] = Field(alias="__typename")
    message: str


class CreateExampleCreateExampleNearDuplicate(BaseModel):
    typename__: Literal["NearDuplicate"] = Field(alias="__typename")
    message: str
    similarity: float
    threshold: float
    your_example: Optional["CreateExampleCreateExampleNearDuplicateYourExample"] = (
        Field(alias="yourExample")
    )


class CreateExampleCreateExampleNearDuplicateYourExample(BaseModel):
    id: str


CreateExample.model_rebuild()
CreateExampleCreateExampleExampleCreated.model_rebuild()
CreateExampleCreateExamplePredictionPending.model_rebuild()
CreateExampleCreateExampleVerdictPending.model_rebuild()
CreateExampleCreateExampleInvalidInput.model_rebuild()
CreateExampleCreateExampleNearDuplicate.model_rebuild()
