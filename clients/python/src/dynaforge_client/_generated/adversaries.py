from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class Adversaries(BaseModel):
    adversaries: Optional[list["AdversariesAdversaries"]]


class AdversariesAdversaries(BaseModel):
    name: str
    description: str
    needs_draft: bool = Field(alias="needsDraft")
    assists: bool
    generates: bool
    available: bool
    unavailable_reason: Optional[str] = Field(alias="unavailableReason")


Adversaries.model_rebuild()
