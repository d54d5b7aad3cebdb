from typing import Any, Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode
from .fragments import TargetVerdictFields


class SuggestEdits(BaseModel):
    suggest_edits: Union[
        "SuggestEditsSuggestEditsEditsSuggested",
        "SuggestEditsSuggestEditsInvalidInput",
        "SuggestEditsSuggestEditsNotAuthenticated",
        "SuggestEditsSuggestEditsNotFound",
        "SuggestEditsSuggestEditsRateLimited",
        "SuggestEditsSuggestEditsRoundClosed",
        "SuggestEditsSuggestEditsServiceUnavailable",
    ] = Field(alias="suggestEdits", discriminator="typename__")


class SuggestEditsSuggestEditsEditsSuggested(BaseModel):
    typename__: Literal["EditsSuggested"] = Field(alias="__typename")
    draft: "SuggestEditsSuggestEditsEditsSuggestedDraft"
    suggestions: list["SuggestEditsSuggestEditsEditsSuggestedSuggestions"]
    adversaries: list[str]
    queries: int


SuggestEditsSuggestEditsEditsSuggestedDraft = TargetVerdictFields


class SuggestEditsSuggestEditsEditsSuggestedSuggestions(BaseModel):
    id: str
    adversary: str
    fields: Any
    edits: list[str]
    rationale: str
    verdict: "SuggestEditsSuggestEditsEditsSuggestedSuggestionsVerdict"
    moves: list["SuggestEditsSuggestEditsEditsSuggestedSuggestionsMoves"]


SuggestEditsSuggestEditsEditsSuggestedSuggestionsVerdict = TargetVerdictFields


class SuggestEditsSuggestEditsEditsSuggestedSuggestionsMoves(BaseModel):
    label: str
    before: float
    after: float


class SuggestEditsSuggestEditsInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list["SuggestEditsSuggestEditsInvalidInputFieldErrors"] = Field(
        alias="fieldErrors"
    )


class SuggestEditsSuggestEditsInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class SuggestEditsSuggestEditsNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class SuggestEditsSuggestEditsNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


class SuggestEditsSuggestEditsRateLimited(BaseModel):
    typename__: Literal["RateLimited"] = Field(alias="__typename")
    message: str
    retry_after_seconds: float = Field(alias="retryAfterSeconds")


class SuggestEditsSuggestEditsRoundClosed(BaseModel):
    typename__: Literal["RoundClosed"] = Field(alias="__typename")
    message: str


class SuggestEditsSuggestEditsServiceUnavailable(BaseModel):
    typename__: Literal["ServiceUnavailable"] = Field(alias="__typename")
    message: str


SuggestEdits.model_rebuild()
SuggestEditsSuggestEditsEditsSuggested.model_rebuild()
SuggestEditsSuggestEditsEditsSuggestedSuggestions.model_rebuild()
SuggestEditsSuggestEditsInvalidInput.model_rebuild()
