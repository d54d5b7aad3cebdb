from typing import Optional

from .base_model import BaseModel
from .fragments import (  # noqa: F401
    RoundFields,
    TaskFields,
    TaskFieldsCurrentRound,
    TaskFieldsFields,
    TaskFieldsStats,
    TaskFieldsStatsBySource,
)


class Task(BaseModel):
    task: Optional["TaskTask"]


class TaskTask(TaskFields):
    rounds: list["TaskTaskRounds"]


TaskTaskRounds = RoundFields
Task.model_rebuild()
TaskTask.model_rebuild()
