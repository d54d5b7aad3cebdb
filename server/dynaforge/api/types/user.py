"""User and API token types."""

from __future__ import annotations

from datetime import datetime

import strawberry

from dynaforge.api.context import RequestContext
from dynaforge.api.node import Node, global_id
from dynaforge.db.models import ApiToken as ApiTokenRow
from dynaforge.db.models import User as UserRow
from dynaforge.db.models import as_utc
from dynaforge.services import auth as auth_service


@strawberry.type(description="An API token; the secret itself is shown only once, when the token is created.")
class ApiToken(Node):
    row: strawberry.Private[ApiTokenRow]
    id: strawberry.ID
    name: str
    prefix: str = strawberry.field(description="The token's first characters, to recognise it in a list.")
    created_at: datetime
    last_used_at: datetime | None
    revoked: bool

    @strawberry.field(description="Whether this token signed the request that reads it (the session in use).")
    def current(self, info: strawberry.Info[RequestContext]) -> bool:
        token = info.context.token
        return token is not None and auth_service.hash_token(token) == self.row.token_hash

    @classmethod
    def from_row(cls, row: ApiTokenRow) -> ApiToken:
        return cls(
            row=row,
            id=global_id("ApiToken", row.id),
            name=row.name,
            prefix=row.prefix,
            created_at=as_utc(row.created_at),
            last_used_at=as_utc(row.last_used_at),
            revoked=row.revoked_at is not None,
        )


@strawberry.type(description="A person with an account.")
class User(Node):
    row: strawberry.Private[UserRow]
    id: strawberry.ID
    username: str
    is_admin: bool
    created_at: datetime

    @strawberry.field(description="Only visible to the user themself and admins.")
    def email(self, info: strawberry.Info[RequestContext]) -> str | None:
        return auth_service.visible_email(info.context.actor, self.row)

    @strawberry.field(description="The user's API tokens (only for the user themself).")
    async def api_tokens(self, info: strawberry.Info[RequestContext]) -> list[ApiToken]:
        return [ApiToken.from_row(r) for r in await auth_service.tokens_of(*info.context.caller, self.row.id)]

    @classmethod
    def from_row(cls, row: UserRow) -> User:
        return cls(
            row=row,
            id=global_id("User", row.id),
            username=row.username,
            is_admin=row.is_admin,
            created_at=as_utc(row.created_at),
        )
