from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import DatasetFields


class Datasets(BaseModel):
    task: Optional["DatasetsTask"]


class DatasetsTask(BaseModel):
    id: str
    datasets: Optional["DatasetsTaskDatasets"]


class DatasetsTaskDatasets(BaseModel):
    nodes: list["DatasetsTaskDatasetsNodes"]
    page_info: "DatasetsTaskDatasetsPageInfo" = Field(alias="pageInfo")


DatasetsTaskDatasetsNodes = DatasetFields


class DatasetsTaskDatasetsPageInfo(BaseModel):
    has_next_page: bool = Field(alias="hasNextPage")
    end_cursor: Optional[str] = Field(alias="endCursor")


Datasets.model_rebuild()
DatasetsTask.model_rebuild()
DatasetsTaskDatasets.model_rebuild()
