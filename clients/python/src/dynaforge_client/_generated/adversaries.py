from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class Adversaries(BaseModel):
    task: Optional["AdversariesTask"]


class AdversariesTask(BaseModel):
    id: str
    adversaries: Optional[list["AdversariesTaskAdversaries"]]


class AdversariesTaskAdversaries(BaseModel):
    name: str
    description: str
    needs_draft: bool = Field(alias="needsDraft")
    assists: bool
    generates: bool
    available: bool
    unavailable_reason: Optional[str] = Field(alias="unavailableReason")


Adversaries.model_rebuild()
AdversariesTask.model_rebuild()
