"""Admins run the accounts: ``users`` (a connection with a search), ``setUserAdmin`` and ``setUserActive``.

Who may do what is decided in :mod:`dynaforge.services.users`; ``User.apiTokens`` and ``User.active`` show admins
any account's tokens (never their secrets) and state.
"""

from __future__ import annotations

from typing import Annotated

import strawberry

from dynaforge.api.context import Info
from dynaforge.api.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    errors_as_graphql,
    errors_as_union,
)
from dynaforge.api.node import parse_id
from dynaforge.api.types.connection import After, Before, Connection, First, Last
from dynaforge.api.types.user import User
from dynaforge.services import users as user_service


@strawberry.type
class UserQuery:
    @strawberry.field(
        description="The accounts, newest first, a page at a time (admins; machine adversaries' accounts are left "
        "out). Null with a FORBIDDEN error for everyone else."
    )
    @errors_as_graphql
    async def users(
        self,
        info: Info,
        search: Annotated[
            str | None,
            strawberry.argument(
                description="Only the accounts whose username or email contains this, in any case (1 to 100 "
                "characters)."
            ),
        ] = None,
        admins_only: Annotated[bool, strawberry.argument(description="Only the admins.")] = False,
        disabled_only: Annotated[bool, strawberry.argument(description="Only the disabled accounts.")] = False,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[User] | None:
        listing = await user_service.list_users(
            *info.context.caller,
            search=search,
            admins_only=admins_only,
            disabled_only=disabled_only,
            first=first,
            after=after,
            last=last,
            before=before,
        )
        return Connection.from_listing(listing, User.from_row)


@strawberry.input(description="An account to make an admin, or an admin to make an ordinary user.")
class SetUserAdminInput:
    id: strawberry.ID = strawberry.field(description="The account's id (User.id).")
    is_admin: bool = strawberry.field(description="True: an admin; false: an ordinary user.")


@strawberry.input(description="An account to disable, or to enable again.")
class SetUserActiveInput:
    id: strawberry.ID = strawberry.field(description="The account's id (User.id).")
    active: bool = strawberry.field(
        description="False: disabled (its tokens stop signing anyone in; what it wrote stays); true: enabled again."
    )


@strawberry.type(description="The account changed.")
class UserUpdated:
    user: User = strawberry.field(description="The account as it is now.")


_FAILURES = (
    "The other members are the expected failures, and change nothing: InvalidInput (the id is not a User's), "
    "NotAuthenticated, Forbidden (not an admin), NotFound (no such account), Conflict (your own account: ask another "
    "admin)."
)
SetUserAdminResult = Annotated[
    UserUpdated | InvalidInput | NotAuthenticated | Forbidden | NotFound | Conflict,
    strawberry.union("SetUserAdminResult", description=f"UserUpdated: the admin flag is set. {_FAILURES}"),
]
SetUserActiveResult = Annotated[
    UserUpdated | InvalidInput | NotAuthenticated | Forbidden | NotFound | Conflict,
    strawberry.union(
        "SetUserActiveResult", description=f"UserUpdated: the account is disabled or enabled. {_FAILURES}"
    ),
]


@strawberry.type
class UserMutation:
    @strawberry.mutation(
        description="Admins make an account an admin, or an admin an ordinary user (not themself). It takes effect "
        "at once on this server process, and within the token cache's lifetime (2 seconds by default) on others."
    )
    @errors_as_union
    async def set_user_admin(
        self, info: Info, input: Annotated[SetUserAdminInput, strawberry.argument(description="Who, and what.")]
    ) -> SetUserAdminResult:
        user = await user_service.set_admin(*info.context.caller, parse_id(input.id, "id", "User"), input.is_admin)
        return UserUpdated(user=User.from_row(user))

    @strawberry.mutation(
        description="Admins disable an account (its tokens stop signing anyone in, live subscriptions end at their "
        "next token check; its examples, models and votes stay) or enable it again (not their own). It takes effect "
        "at once on this server process, and within the token cache's lifetime on others."
    )
    @errors_as_union
    async def set_user_active(
        self, info: Info, input: Annotated[SetUserActiveInput, strawberry.argument(description="Who, and what.")]
    ) -> SetUserActiveResult:
        user = await user_service.set_active(*info.context.caller, parse_id(input.id, "id", "User"), input.active)
        return UserUpdated(user=User.from_row(user))
