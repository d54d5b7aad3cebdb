"""Who is acting: a signed-in user, the local operator (CLI), or nobody (anonymous).

Every service takes an :class:`Actor`, never ``None``: an anonymous actor carries why its credentials were
refused (an unknown, revoked or disabled token), so that an action that needs a user can say why sign-in failed.
"""

from __future__ import annotations

from dataclasses import dataclass

from dynaforge.errors import NotAuthenticated

SIGN_IN_FIRST = "Sign in first: send 'Authorization: Bearer <token>' (from register, login or createApiToken)"


@dataclass(frozen=True, slots=True)
class Actor:
    user_id: int | None
    username: str
    is_admin: bool = False
    is_system: bool = False
    #: Anonymous only: why the credentials sent were refused (None: none were sent).
    sign_in_error: str | None = None

    @classmethod
    def system(cls) -> Actor:
        """The operator at the command line, who holds the database credentials and may do anything."""
        return cls(user_id=None, username="system", is_admin=True, is_system=True)

    @classmethod
    def anonymous(cls, sign_in_error: str | None = None) -> Actor:
        """Nobody signed in; ``sign_in_error`` says why the credentials sent (if any) were refused."""
        if sign_in_error is None:
            return ANONYMOUS
        return cls(user_id=None, username="", sign_in_error=sign_in_error)

    @property
    def is_anonymous(self) -> bool:
        return self.user_id is None and not self.is_system

    @property
    def is_authenticated(self) -> bool:
        """A signed-in user or the operator."""
        return not self.is_anonymous

    @property
    def person_id(self) -> int:
        """The user id of a signed-in person (what ``require_human`` checks): for writing rows that belong to one."""
        if self.user_id is None:
            raise NotAuthenticated(self.sign_in_error or SIGN_IN_FIRST)
        return self.user_id


ANONYMOUS = Actor(user_id=None, username="")


def require_user(actor: Actor) -> Actor:
    """The actor, or NotAuthenticated with a message saying why sign-in failed or how to sign in."""
    if actor.is_anonymous:
        raise NotAuthenticated(actor.sign_in_error or SIGN_IN_FIRST)
    return actor


def require_human(actor: Actor) -> Actor:
    """A signed-in user (not the system operator): for actions that belong to a person, such as writing examples."""
    actor = require_user(actor)
    if actor.user_id is None:
        raise NotAuthenticated("this action needs a user account; act as a user with a token")
    return actor
