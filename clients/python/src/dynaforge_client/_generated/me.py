from typing import Optional

from .base_model import BaseModel
from .fragments import UserFields


class Me(BaseModel):
    me: Optional["MeMe"]


MeMe = UserFields
Me.model_rebuild()
