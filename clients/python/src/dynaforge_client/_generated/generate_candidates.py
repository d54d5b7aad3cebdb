from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode
from .fragments import AdversaryRunFields


class GenerateCandidates(BaseModel):
    generate_candidates: Union[
        "GenerateCandidatesGenerateCandidatesGenerationStarted",
        "GenerateCandidatesGenerateCandidatesInvalidInput",
        "GenerateCandidatesGenerateCandidatesNotAuthenticated",
        "GenerateCandidatesGenerateCandidatesForbidden",
        "GenerateCandidatesGenerateCandidatesNotFound",
        "GenerateCandidatesGenerateCandidatesRateLimited",
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


class GenerateCandidatesGenerateCandidatesRateLimited(BaseModel):
    typename__: Literal["RateLimited"] = Field(alias="__typename")
    message: str
    retry_after_seconds: float = Field(alias="retryAfterSeconds")


class GenerateCandidatesGenerateCandidatesRoundClosed(BaseModel):
    typename__: Literal["RoundClosed"] = Field(alias="__typename")
    message: str


GenerateCandidates.model_rebuild()
GenerateCandidatesGenerateCandidatesGenerationStarted.model_rebuild()
GenerateCandidatesGenerateCandidatesInvalidInput.model_rebuild()
