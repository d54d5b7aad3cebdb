from .base_model import BaseModel
from .fragments import TaskFields


class Tasks(BaseModel):
    tasks: list["TasksTasks"]


TasksTasks = TaskFields
Tasks.model_rebuild()
