from typing import Literal, Union

from pydantic import Field

from .base_model import BaseModel


class Login(BaseModel):
    login: Union[
        "LoginLoginAuthPayload", "LoginLoginInvalidCredentials", "LoginLoginRateLimited"
    ] = Field(discriminator="typename__")


class LoginLoginAuthPayload(BaseModel):
    typename__: Literal["AuthPayload"] = Field(alias="__typename")
    token: str
    user: "LoginLoginAuthPayloadUser"


class LoginLoginAuthPayloadUser(BaseModel):
    id: str
    username: str
    is_admin: bool = Field(alias="isAdmin")


class LoginLoginInvalidCredentials(BaseModel):
    typename__: Literal["InvalidCredentials"] = Field(alias="__typename")
    message: str


class LoginLoginRateLimited(BaseModel):
    typename__: Literal["RateLimited"] = Field(alias="__typename")
    message: str
    retry_after_seconds: float = Field(alias="retryAfterSeconds")


Login.model_rebuild()
LoginLoginAuthPayload.model_rebuild()
