from typing import Optional

from .base_model import BaseModel
from .fragments import TutorialFields


class Tutorial(BaseModel):
    task: Optional["TutorialTask"]


class TutorialTask(BaseModel):
    id: str
    tutorial: Optional["TutorialTaskTutorial"]


TutorialTaskTutorial = TutorialFields
Tutorial.model_rebuild()
TutorialTask.model_rebuild()
