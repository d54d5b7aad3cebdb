from typing import Literal, Optional, Union

from pydantic import Field

from .base_model import BaseModel
from .enums import FieldErrorCode, ValidationLabel


class AnswerTutorial(BaseModel):
    answer_tutorial: Union[
        "AnswerTutorialAnswerTutorialTutorialAnswered",
        "AnswerTutorialAnswerTutorialInvalidInput",
        "AnswerTutorialAnswerTutorialNotAuthenticated",
        "AnswerTutorialAnswerTutorialNotFound",
        "AnswerTutorialAnswerTutorialAlreadyExists",
    ] = Field(alias="answerTutorial", discriminator="typename__")


class AnswerTutorialAnswerTutorialTutorialAnswered(BaseModel):
    typename__: Literal["TutorialAnswered"] = Field(alias="__typename")
    item: "AnswerTutorialAnswerTutorialTutorialAnsweredItem"
    tutorial: "AnswerTutorialAnswerTutorialTutorialAnsweredTutorial"


class AnswerTutorialAnswerTutorialTutorialAnsweredItem(BaseModel):
    example_id: str = Field(alias="exampleId")
    your_answer: Optional[ValidationLabel] = Field(alias="yourAnswer")
    expected: Optional[ValidationLabel]
    explanation: Optional[str]
    correct: Optional[bool]


class AnswerTutorialAnswerTutorialTutorialAnsweredTutorial(BaseModel):
    pass_mark: Optional[float] = Field(alias="passMark")
    required: bool
    passed: bool
    total: int
    answered: int
    correct: int
    score: Optional[float]
    attempts: int


class AnswerTutorialAnswerTutorialInvalidInput(BaseModel):
    typename__: Literal["InvalidInput"] = Field(alias="__typename")
    message: str
    field_errors: list["AnswerTutorialAnswerTutorialInvalidInputFieldErrors"] = Field(
        alias="fieldErrors"
    )


class AnswerTutorialAnswerTutorialInvalidInputFieldErrors(BaseModel):
    field: list[str]
    code: FieldErrorCode
    rule: str
    message: str


class AnswerTutorialAnswerTutorialNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class AnswerTutorialAnswerTutorialNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


class AnswerTutorialAnswerTutorialAlreadyExists(BaseModel):
    typename__: Literal["AlreadyExists"] = Field(alias="__typename")
    message: str


AnswerTutorial.model_rebuild()
AnswerTutorialAnswerTutorialTutorialAnswered.model_rebuild()
AnswerTutorialAnswerTutorialInvalidInput.model_rebuild()
