from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class ReplyStream(BaseModel):
    reply_stream: "ReplyStreamReplyStream" = Field(alias="replyStream")


class ReplyStreamReplyStream(BaseModel):
    index: int
    model: Optional[str]
    text: str
    done: bool


ReplyStream.model_rebuild()
