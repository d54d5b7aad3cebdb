from pydantic import Field

from .base_model import BaseModel
from .fragments import CrowdPlatformFields


class CrowdPlatforms(BaseModel):
    crowd_platforms: list["CrowdPlatformsCrowdPlatforms"] = Field(
        alias="crowdPlatforms"
    )


CrowdPlatformsCrowdPlatforms = CrowdPlatformFields
CrowdPlatforms.model_rebuild()
