"""User and API token types."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

import strawberry

from dynaforge.api.context import Info
from dynaforge.api.enums import CreationOrder, OrderBy, work_page
from dynaforge.api.node import Node, global_id
from dynaforge.api.types.connection import After, Before, Connection, First, Last
from dynaforge.db.models import ApiToken as ApiTokenRow
from dynaforge.db.models import User as UserRow
from dynaforge.db.models import as_utc
from dynaforge.services import auth as auth_service


@strawberry.enum(description="How an API token was issued.")
class TokenOrigin(Enum):
    REGISTRATION = strawberry.enum_value("REGISTRATION", description="By register, for the new account.")
    LOGIN = strawberry.enum_value("LOGIN", description="By login.")
    API = strawberry.enum_value("API", description="By createApiToken, by the user themself (for a script, say).")
    OPERATOR = strawberry.enum_value(
        "OPERATOR", description="For the user by an admin, or by the server's operator (dynaforge tokens create)."
    )
    CROWD = strawberry.enum_value("CROWD", description="By joinCrowdStudy, for a crowd study's participant.")


@strawberry.type(description="An API token; the secret itself is shown only once, when the token is created.")
class ApiToken(Node):
    row: strawberry.Private[ApiTokenRow]
    name: str = strawberry.field(
        description="A label for people: the name given to createApiToken (1 to 100 characters), or 'registration' "
        "and 'login' for the tokens those mutations issue."
    )
    prefix: str = strawberry.field(description="The token's first characters, to recognise it in a list.")
    created_at: datetime = strawberry.field(description="When the token was issued (ISO 8601, UTC).")
    last_used_at: datetime | None = strawberry.field(
        description="When the token last signed a request (ISO 8601, UTC), recorded at most every five minutes; "
        "null when it has never been used."
    )
    revoked: bool = strawberry.field(
        description="Whether the token was revoked (logout, revokeApiToken, revokeAllApiTokens, or a newer token "
        "past the server's tokens per user): a revoked token signs no one in and cannot be restored."
    )
    expires_at: datetime | None = strawberry.field(
        description="When the token stops signing anyone in (ISO 8601, UTC; 90 days after it was issued unless the "
        "server is configured otherwise); null: never."
    )
    origin: TokenOrigin = strawberry.field(description="How it was issued.")

    @strawberry.field(description="Whether this token signed the request that reads it (the session in use).")
    def current(self, info: Info) -> bool:
        token = info.context.token
        return token is not None and auth_service.hash_token(token) == self.row.token_hash

    @classmethod
    def from_row(cls, row: ApiTokenRow) -> ApiToken:
        return cls(
            row=row,
            id=global_id("ApiToken", row.id),
            name=row.name,
            origin=TokenOrigin(row.origin),
            prefix=row.prefix,
            created_at=as_utc(row.created_at),
            last_used_at=as_utc(row.last_used_at),
            revoked=row.revoked_at is not None,
            expires_at=as_utc(row.expires_at),
        )


@strawberry.type(
    description="A person with an account. Anyone may read a user's username, admin flag and creation date; the "
    "email and API tokens are private."
)
class User(Node):
    row: strawberry.Private[UserRow]
    username: str = strawberry.field(
        description="The public name: 3 to 40 letters, digits, '_', '.' or '-', unique regardless of case."
    )
    is_admin: bool = strawberry.field(
        description="Whether the user is an admin: admins may do whatever a task's owners may, on every task, and "
        "run the platform (task ownership, proposals)."
    )
    created_at: datetime = strawberry.field(description="When the account was created (ISO 8601, UTC).")

    @strawberry.field(
        description="The email address (stored in lower case); null for everyone but the user themself and admins."
    )
    def email(self, info: Info) -> str | None:
        return auth_service.visible_email(info.context.actor, self.row)

    @strawberry.field(
        description="Whether the account may sign in (an admin may disable it: setUserActive); null for everyone "
        "but the user themself and admins."
    )
    def active(self, info: Info) -> bool | None:
        actor = info.context.actor
        return self.row.is_active if actor.user_id == self.row.id or actor.is_admin else None

    @strawberry.field(
        description="The user's API tokens (names, dates, whether revoked; never a secret, which is stored hashed), "
        "revoked ones included, a page at a time, newest first unless `orderBy` says otherwise; empty for everyone "
        "but the user themself and admins."
    )
    async def api_tokens(
        self,
        info: Info,
        order_by: OrderBy = CreationOrder.NEWEST_FIRST,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[ApiToken]:
        page = work_page(None, order_by, first, after, last, before)
        listing = await auth_service.token_listing(*info.context.caller, self.row.id, page)
        return Connection.from_listing(listing, ApiToken.from_row)

    @classmethod
    def from_row(cls, row: UserRow) -> User:
        return cls(
            row=row,
            id=global_id("User", row.id),
            username=row.username,
            is_admin=row.is_admin,
            created_at=as_utc(row.created_at),
        )
