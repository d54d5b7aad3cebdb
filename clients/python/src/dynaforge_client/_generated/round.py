from typing import Optional

from .base_model import BaseModel
from .fragments import RoundFields


class Round(BaseModel):
    round: Optional["RoundRound"]


RoundRound = RoundFields
Round.model_rebuild()
