from typing import Optional

from .base_model import BaseModel
from .fragments import ExampleFields


class Example(BaseModel):
    example: Optional["ExampleExample"]


ExampleExample = ExampleFields
Example.model_rebuild()
