from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import CrowdStudyFields


class CrowdStudies(BaseModel):
    task: Optional["CrowdStudiesTask"]


class CrowdStudiesTask(BaseModel):
    id: str
    crowd_studies: Optional[list["CrowdStudiesTaskCrowdStudies"]] = Field(
        alias="crowdStudies"
    )


CrowdStudiesTaskCrowdStudies = CrowdStudyFields
CrowdStudies.model_rebuild()
CrowdStudiesTask.model_rebuild()
