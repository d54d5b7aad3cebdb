from pydantic import Field

from .base_model import BaseModel
from .fragments import ExampleFields


class ModelFooled(BaseModel):
    model_fooled: "ModelFooledModelFooled" = Field(alias="modelFooled")


ModelFooledModelFooled = ExampleFields
ModelFooled.model_rebuild()
