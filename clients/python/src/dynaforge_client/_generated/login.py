from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel
from .fragments import UserFields


class Login(BaseModel):
    login: Union[
        "LoginLoginAuthPayload", "LoginLoginInvalidCredentials", "LoginLoginRateLimited"
    ] = Field(discriminator="typename__")


class LoginLoginAuthPayload(BaseModel):
    typename__: Literal["AuthPayload"] = Field(alias="__typename")
    token: str
    user: "LoginLoginAuthPayloadUser"


LoginLoginAuthPayloadUser = UserFields


class LoginLoginInvalidCredentials(BaseModel):
    typename__: Literal["InvalidCredentials"] = Field(alias="__typename")
    message: str


class LoginLoginRateLimited(BaseModel):
    typename__: Literal["RateLimited"] = Field(alias="__typename")
    message: str
    retry_after_seconds: float = Field(alias="retryAfterSeconds")


Login.model_rebuild()
LoginLoginAuthPayload.model_rebuild()
