from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import DatasetAccess, DatasetSource


class Datasets(BaseModel):
    datasets: Optional["DatasetsDatasets"]


class DatasetsDatasets(BaseModel):
    nodes: list["DatasetsDatasetsNodes"]
    page_info: "DatasetsDatasetsPageInfo" = Field(alias="pageInfo")


class DatasetsDatasetsNodes(BaseModel):
    id: str
    name: str
    description: str
    access: DatasetAccess
    source: DatasetSource
    split: Optional[str]
    size: int
    created_at: datetime = Field(alias="createdAt")


class DatasetsDatasetsPageInfo(BaseModel):
    has_next_page: bool = Field(alias="hasNextPage")
    end_cursor: Optional[str] = Field(alias="endCursor")


Datasets.model_rebuild()
DatasetsDatasets.model_rebuild()
