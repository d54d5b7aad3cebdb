from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .fragments import TutorialFields


class RestartTutorial(BaseModel):
    restart_tutorial: Union[
        "RestartTutorialRestartTutorialTutorialRestarted",
        "RestartTutorialRestartTutorialNotAuthenticated",
        "RestartTutorialRestartTutorialNotFound",
    ] = Field(alias="restartTutorial", discriminator="typename__")


class RestartTutorialRestartTutorialTutorialRestarted(BaseModel):
    typename__: Literal["TutorialRestarted"] = Field(alias="__typename")
    tutorial: "RestartTutorialRestartTutorialTutorialRestartedTutorial"


RestartTutorialRestartTutorialTutorialRestartedTutorial = TutorialFields


class RestartTutorialRestartTutorialNotAuthenticated(BaseModel):
    typename__: Literal["NotAuthenticated"] = Field(alias="__typename")
    message: str


class RestartTutorialRestartTutorialNotFound(BaseModel):
    typename__: Literal["NotFound"] = Field(alias="__typename")
    message: str


RestartTutorial.model_rebuild()
RestartTutorialRestartTutorialTutorialRestarted.model_rebuild()
