"""Who is acting: a signed-in user, the local operator (CLI), or nobody (anonymous, ``None``)."""

from __future__ import annotations

from dataclasses import dataclass

from dynaforge.errors import NotAuthenticated


@dataclass(frozen=True)
class Actor:
    user_id: int | None
    username: str
    is_admin: bool = False
    is_system: bool = False

    @classmethod
    def system(cls) -> Actor:
        """The operator at the command line, who holds the database credentials and may do anything."""
        return cls(user_id=None, username="system", is_admin=True, is_system=True)


def require_user(actor: Actor | None, auth_error: str | None = None) -> Actor:
    """The actor, or NotAuthenticated with a message saying how to sign in."""
    if actor is None:
        raise NotAuthenticated(
            auth_error or "Sign in first: send 'Authorization: Bearer <token>' (from register, login or createApiToken)"
        )
    return actor


def require_human(actor: Actor | None, auth_error: str | None = None) -> Actor:
    """A signed-in user (not the system operator): for actions that belong to a person, such as writing examples."""
    actor = require_user(actor, auth_error)
    if actor.user_id is None:
        raise NotAuthenticated("this action needs a user account; act as a user with a token")
    return actor
