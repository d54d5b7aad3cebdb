from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import DatasetFields


class Datasets(BaseModel):
    datasets: Optional["DatasetsDatasets"]


class DatasetsDatasets(BaseModel):
    nodes: list["DatasetsDatasetsNodes"]
    page_info: "DatasetsDatasetsPageInfo" = Field(alias="pageInfo")


DatasetsDatasetsNodes = DatasetFields


class DatasetsDatasetsPageInfo(BaseModel):
    has_next_page: bool = Field(alias="hasNextPage")
    end_cursor: Optional[str] = Field(alias="endCursor")


Datasets.model_rebuild()
DatasetsDatasets.model_rebuild()
