from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import ExampleFields


class ExampleToValidate(BaseModel):
    example_to_validate: Optional["ExampleToValidateExampleToValidate"] = Field(
        alias="exampleToValidate"
    )


ExampleToValidateExampleToValidate = ExampleFields
ExampleToValidate.model_rebuild()
