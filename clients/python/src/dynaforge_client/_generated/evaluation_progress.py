from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import EvaluationStatus


class EvaluationProgress(BaseModel):
    evaluation_progress: "EvaluationProgressEvaluationProgress" = Field(
        alias="evaluationProgress"
    )


class EvaluationProgressEvaluationProgress(BaseModel):
    evaluation_id: str = Field(alias="evaluationId")
    model_id: str = Field(alias="modelId")
    dataset_id: str = Field(alias="datasetId")
    dataset_name: str = Field(alias="datasetName")
    status: EvaluationStatus
    progress: float
    error: Optional[str]


EvaluationProgress.model_rebuild()
