"""Running the platform's accounts (admins): list the users, make or unmake admins, disable and enable accounts.

Each change takes effect at once on this server process (the tokens it had cached for the user are dropped) and
within the token cache's lifetime (``TOKEN_CACHE_TTL_S``, 2 seconds by default) on the others. An admin cannot
unmake or disable themself, so a platform never loses its last admin by a slip; another admin, or ``dynaforge
users create --admin`` on the server, can.
"""

from __future__ import annotations

from sqlalchemy import func, or_, select
from sqlmodel import col

from dynaforge.db.models import ApiToken, User
from dynaforge.errors import Conflict, FieldError, Forbidden, InvalidInput, NotFound
from dynaforge.services import cursors
from dynaforge.services.actor import Actor, require_user
from dynaforge.services.platform import Platform

#: The most characters a user search takes.
MAX_SEARCH = 100


def _require_admin(actor: Actor, verb: str) -> Actor:
    actor = require_user(actor)
    if not actor.is_admin:
        raise Forbidden(f"Only admins {verb}")
    return actor


async def list_users(
    p: Platform,
    actor: Actor,
    *,
    search: str | None = None,
    admins_only: bool = False,
    disabled_only: bool = False,
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
) -> cursors.Listing:
    """A page of the accounts, newest first (admins): those whose username or email contains ``search`` (without
    case), only admins or only disabled accounts when asked. Machine adversaries' accounts are left out."""
    _require_admin(actor, "list the users")
    request = cursors.PageRequest.of(
        "user", first=first, after=after, last=last, before=before, max_size=p.settings.page_max_size
    )
    statement = select(User).where(col(User.is_machine).is_(False))
    if search is not None:
        needle = search.strip().lower()
        if not needle or len(needle) > MAX_SEARCH:
            raise InvalidInput.from_errors(
                [FieldError("search", "length", f"must be 1 to {MAX_SEARCH} characters (or leave it out)")]
            )
        escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        pattern = f"%{escaped}%"
        statement = statement.where(
            or_(
                func.lower(col(User.username)).like(pattern, escape="\\"),
                func.lower(col(User.email)).like(pattern, escape="\\"),
            )
        )
    if admins_only:
        statement = statement.where(col(User.is_admin).is_(True))
    if disabled_only:
        statement = statement.where(col(User.is_active).is_(False))
    async with p.db.session() as s:
        page = await cursors.window(s, statement, col(User.id), "user", request)
    return cursors.Listing(page, cursors.counter(p, statement))


async def _change(p: Platform, actor: Actor, user_id: int, verb: str, yourself: str, **values: bool) -> User:
    actor = _require_admin(actor, verb)
    async with p.db.write() as s:
        user = await s.get(User, user_id)
        if user is None or user.is_machine:
            raise NotFound(f"No user {user_id}; find one with users(search:)")
        if user.id == actor.user_id:
            raise Conflict(f"You cannot {yourself}; ask another admin")
        for name, value in values.items():
            setattr(user, name, value)
        hashes = list(await s.scalars(select(col(ApiToken.token_hash)).where(col(ApiToken.user_id) == user.id)))
    for digest in hashes:  # the actors cached for its tokens carry the old rights
        p.caches.tokens.pop(digest)
    return user


async def set_admin(p: Platform, actor: Actor, user_id: int, is_admin: bool) -> User:
    """Make an account an admin, or an admin an ordinary user (admins; not themself)."""
    return await _change(p, actor, user_id, "make or unmake admins", "change your own admin flag", is_admin=is_admin)


async def set_active(p: Platform, actor: Actor, user_id: int, active: bool) -> User:
    """Disable an account (its tokens stop signing anyone in; its examples, models and votes stay) or enable it
    again (admins; not themself)."""
    return await _change(
        p, actor, user_id, "disable or enable accounts", "disable or enable your own account", is_active=active
    )
