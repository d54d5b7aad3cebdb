from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import (  # noqa: F401
    EvaluationFields,
    ModelFields,
    ModelFieldsCard,
    ModelFieldsTask,
)


class ModelResults(BaseModel):
    model: Optional["ModelResultsModel"]


class ModelResultsModel(ModelFields):
    evaluations: "ModelResultsModelEvaluations"


class ModelResultsModelEvaluations(BaseModel):
    nodes: list["ModelResultsModelEvaluationsNodes"]
    page_info: "ModelResultsModelEvaluationsPageInfo" = Field(alias="pageInfo")


ModelResultsModelEvaluationsNodes = EvaluationFields


class ModelResultsModelEvaluationsPageInfo(BaseModel):
    has_next_page: bool = Field(alias="hasNextPage")
    end_cursor: Optional[str] = Field(alias="endCursor")


ModelResults.model_rebuild()
ModelResultsModel.model_rebuild()
ModelResultsModelEvaluations.model_rebuild()
