from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import ValidatorQualityFields


class ValidatorQuality(BaseModel):
    task: Optional["ValidatorQualityTask"]


class ValidatorQualityTask(BaseModel):
    id: str
    validator_quality: Optional["ValidatorQualityTaskValidatorQuality"] = Field(
        alias="validatorQuality"
    )


ValidatorQualityTaskValidatorQuality = ValidatorQualityFields
ValidatorQuality.model_rebuild()
ValidatorQualityTask.model_rebuild()
