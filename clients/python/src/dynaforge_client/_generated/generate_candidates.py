from typing import Literal, Optional, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode, Quota
from .fragments import AdversaryRunFields


class GenerateCandidates(BaseModel):
    generate_candidates: Union[
        "GenerateCandidatesGenerateCandidatesGenerationStarted",
        "GenerateCandidatesGenerateCandidatesInvalidInput",
        "GenerateCandidatesGenerateCandidatesNotAuthenticated",
        "GenerateCandidatesGenerateCandidatesForbidden",
        "GenerateCandidatesGenerateCandidatesNotFound",
        "GenerateCandidatesGenerateCandidatesQuotaExceeded",
        "GenerateCandidatesGenerateCandidatesRoundClosed",
    ] = Field(alias="generateCandidates", discriminator="typename__")


class GenerateCandidatesGenerateCandidatesGenerationStarted(BaseModel):
    typename__: Literal["GenerationStarted"] = Field(alias="__typename")
    run: "GenerateCandidatesGenerateCandidatesGenerationStartedRun"


GenerateCandidatesGenerateCandidatesGenerationStartedRun = AdversaryRunFields


class GenerateCandidatesGenerateCandidatesInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list[
        "GenerateCandidatesGenerateCandidatesInvalidInputFieldErrors"
    ] = Field(alias="fieldErrors")


class GenerateCandidatesGenerateCandidatesInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class GenerateCandidatesGenerateCandidatesNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class GenerateCandidatesGenerateCandidatesForbidden(BaseModel):
    typename__: Literal["Forbidden"] = Field(alias="__typename")
    message: str


class GenerateCandidatesGenerateCandidatesNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


class GenerateCandidatesGenerateCandidatesQuotaExceeded(BaseModel):
    typename__: Literal["QuotaExceeded"] = Field(alias="__typename")
    message: str
    quota: Quota
    limit: int
    resets_in_seconds: Optional[float] = Field(alias="resetsInSeconds")


class GenerateCandidatesGenerateCandidatesRoundClosed(BaseModel):
    typename__: Literal["RoundClosed"] = Field(alias="__typename")
    message: str


GenerateCandidates.model_rebuild()
GenerateCandidatesGenerateCandidatesGenerationStarted.model_rebuild()
GenerateCandidatesGenerateCandidatesInvalidInput.model_rebuild()
