from typing import Any, Optional

from pydantic import Field

from .base_model import BaseModel


class DatasetItems(BaseModel):
    dataset_items: Optional["DatasetItemsDatasetItems"] = Field(alias="datasetItems")


class DatasetItemsDatasetItems(BaseModel):
    nodes: list["DatasetItemsDatasetItemsNodes"]
    page_info: "DatasetItemsDatasetItemsPageInfo" = Field(alias="pageInfo")


class DatasetItemsDatasetItemsNodes(BaseModel):
    id: str
    position: int
    fields: Any


class DatasetItemsDatasetItemsPageInfo(BaseModel):
    has_next_page: bool = Field(alias="hasNextPage")
    end_cursor: Optional[str] = Field(alias="endCursor")


DatasetItems.model_rebuild()
DatasetItemsDatasetItems.model_rebuild()
