from typing import Any, Optional

from pydantic import Field

from .base_model import BaseModel


class NextContext(BaseModel):
    next_context: Optional["NextContextNextContext"] = Field(alias="nextContext")


class NextContextNextContext(BaseModel):
    id: str
    fields: Any
    tag: Optional[str]


NextContext.model_rebuild()
