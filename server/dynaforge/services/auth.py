"""Accounts and API tokens.

Passwords are hashed with Argon2id (memory-hard), off the event loop on bounded pools of their own, one for logins
and one for new passwords (``dynaforge.services.hashing``), so that neither can starve the other. API tokens are
random 256-bit secrets shown once; only their SHA-256 is stored (a fast hash is right for high-entropy secrets, and
lets a request be authenticated with one indexed lookup).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import false, func, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from dynaforge.db.models import ApiToken, TokenOrigin, User, as_utc, utcnow
from dynaforge.errors import (
    AlreadyExists,
    FieldError,
    Forbidden,
    InvalidCredentials,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    RateLimited,
)
from dynaforge.services import cursors
from dynaforge.services.actor import Actor, require_human, require_user
from dynaforge.services.platform import Platform
from dynaforge.services.ratelimit import client_key

if TYPE_CHECKING:
    from dynaforge.settings import Settings

TOKEN_PREFIX = "dfk_"
_USERNAME_RE = re.compile(r"^[A-Za-z0-9_.-]{3,40}$")
_EMAIL_RE = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$")
# Verified against when a username is unknown, so that the answer takes as long as for a wrong password.
# A constant for the default parameters: hashing it at import would cost every process 64 MiB and ~0.3 s.
_DUMMY_HASH = "$argon2id$v=19$m=65536,t=3,p=4$00BVbJOluhd0tu/51B6xzQ$jHJ5hO+N5epfN1h0kNZeA4eLYUzr07Dn6mk9JZW95w8"


@functools.lru_cache(maxsize=4)
def _hasher(time_cost: int, memory_kib: int) -> PasswordHasher:
    """argon2id with the library's recommended parallelism and salt and hash lengths."""
    return PasswordHasher(time_cost=time_cost, memory_cost=memory_kib)


@functools.lru_cache(maxsize=4)
def _dummy_hash(time_cost: int, memory_kib: int) -> str:
    if (time_cost, memory_kib) == (3, 65536):
        return _DUMMY_HASH
    return _hasher(time_cost, memory_kib).hash("no one's password")  # once per process, at the first unknown user


def password_hasher(settings: Settings) -> PasswordHasher:
    """The hasher for new passwords (``password_hash_*`` settings); a stored hash verifies with its own parameters."""
    return _hasher(settings.password_hash_time_cost, settings.password_hash_memory_kib)


_LAST_USED_GRANULARITY = timedelta(minutes=5)
_USERNAME_TAKEN = "That username is already registered; choose another, or sign in with login if it is yours"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def _check_account(username: str, email: str, password: str) -> None:
    errors = []
    if not isinstance(username, str) or not _USERNAME_RE.match(username):
        errors.append(FieldError("username", "format", "3 to 40 characters: letters, digits, '_', '.', '-'"))
    if not isinstance(email, str) or len(email) > 254 or not _EMAIL_RE.match(email):
        errors.append(FieldError("email", "format", "must be an email address such as name@example.org"))
    if not isinstance(password, str) or not 8 <= len(password) <= 256:
        errors.append(FieldError("password", "length", "must have 8 to 256 characters"))
    if errors:
        raise InvalidInput.from_errors(errors)


def _actor(user: User) -> Actor:
    return Actor(user_id=user.id, username=user.username, is_admin=user.is_admin)


async def create_user(
    p: Platform, actor: Actor, *, username: str, email: str, password: str, is_admin: bool = False
) -> User:
    """Create an account. Anyone may create a plain account; only an admin (or the operator) an admin one.

    A username is unique (in any case) and a taken one is reported: usernames are public. An email address is not
    unique and never reported as used: without verification it is only a contact the user gave, and refusing a
    used one would tell anyone whether an address has an account here (and let whoever types an address first
    lock its owner out). The password is hashed before anything is looked up, so every answer costs the same."""
    if is_admin and not actor.is_admin:
        raise Forbidden("Only an admin can create an admin account")
    _check_account(username, email, password)
    password_hash = await p.hashing.register.run(password_hasher(p.settings).hash, password)
    user = User(username=username, email=email.lower(), password_hash=password_hash, is_admin=is_admin)
    try:
        async with p.db.write() as s:
            taken = await s.scalar(
                select(func.count()).select_from(User).where(func.lower(col(User.username)) == username.lower())
            )
            if taken:
                raise AlreadyExists(_USERNAME_TAKEN)
            s.add(user)
    except IntegrityError as exc:  # a concurrent registration of the same username won the race
        raise AlreadyExists(_USERNAME_TAKEN) from exc
    return user


async def issue_token(p: Platform, user_id: int, name: str, origin: str) -> tuple[ApiToken, str]:
    """A new token for the user, expiring after ``token_ttl_days``; the user's live tokens beyond
    ``tokens_per_user`` (the least recently used first) are revoked in the same transaction."""
    plaintext = _new_token()
    now = utcnow()
    ttl = p.settings.token_ttl_days
    row = ApiToken(
        user_id=user_id,
        name=name,
        origin=origin,
        prefix=plaintext[:12],
        token_hash=hash_token(plaintext),
        expires_at=now + timedelta(days=ttl) if ttl > 0 else None,
    )
    async with p.db.write() as s:
        live = list(
            await s.scalars(
                select(ApiToken)
                .where(
                    col(ApiToken.user_id) == user_id,
                    col(ApiToken.revoked_at).is_(None),
                    (col(ApiToken.expires_at).is_(None)) | (col(ApiToken.expires_at) > now),
                )
                .order_by(func.coalesce(col(ApiToken.last_used_at), col(ApiToken.created_at)), col(ApiToken.id))
            )
        )
        for old in live[: max(0, len(live) - p.settings.tokens_per_user + 1)]:
            old.revoked_at = now
            p.caches.tokens.pop(old.token_hash)
        s.add(row)
    return row, plaintext


async def register(
    p: Platform, *, username: str, email: str, password: str, client: str | None = None
) -> tuple[User, str]:
    """Create a plain account and its first API token (returned in plain text, once). At most
    ``registrations_per_hour_per_client`` per client address (an IPv6 one by its /64), counted before any
    hashing."""
    if client:
        await p.limiter.hit(
            f"register-client:{client_key(client)}",
            p.settings.registrations_per_hour_per_client,
            3600.0,
            "registrations from your address",
        )
    user = await create_user(p, Actor.anonymous(), username=username, email=email, password=password)
    _, token = await issue_token(p, user.id, "registration", TokenOrigin.REGISTRATION)
    return user, token


async def login(p: Platform, *, username: str, password: str, client: str | None = None) -> tuple[User, str]:
    """Check a password and issue a new API token. One message for an unknown user and a wrong password.

    Brute force: at most ``logins_per_minute`` failed attempts per account from one client address (guessing one
    password) and ``logins_per_minute_per_client`` attempts per client address (trying many accounts), both checked
    before the password is, so that a refused attempt costs no hashing; addresses are keyed by
    :func:`~dynaforge.services.ratelimit.client_key` (IPv6 by its /64). Failures are not counted per account alone:
    whoever could send them from many addresses would lock the owner out of an account, wherever they sign in
    from. The check runs on the login hashing pool; when that pool and its queue are full the answer is
    RateLimited at once."""
    address = client_key(client)
    # The address first: it holds no "|", so no username can make one pair's key another's.
    failures = f"login-failed:{address}|{str(username).lower()}"
    what = "failed login attempts for this account from your address"
    await p.limiter.check(failures, p.settings.logins_per_minute, 60.0, what)
    if client:
        await p.limiter.hit(
            f"login-client:{address}", p.settings.logins_per_minute_per_client, 60.0, "login attempts from your address"
        )
    async with p.db.session() as s:
        user = await s.scalar(select(User).where(func.lower(col(User.username)) == str(username).lower()))
    settings = p.settings
    stored = user.password_hash if user is not None else None

    def check() -> None:
        if stored is None:  # an unknown user costs the same as a wrong password
            against = _dummy_hash(settings.password_hash_time_cost, settings.password_hash_memory_kib)
        else:
            against = stored
        password_hasher(settings).verify(against, str(password))

    try:
        await p.hashing.login.run(check)
        ok = user is not None and user.is_active
    except (VerificationError, InvalidHashError):
        ok = False
    if not ok or user is None:
        with contextlib.suppress(RateLimited):  # the window filled meanwhile: this answer still says why it failed
            await p.limiter.hit(failures, p.settings.logins_per_minute, 60.0, what)
        raise InvalidCredentials("Unknown username or wrong password")
    _, token = await issue_token(p, user.id, "login", TokenOrigin.LOGIN)
    return user, token


async def create_token(p: Platform, actor: Actor, *, name: str, username: str | None = None) -> tuple[ApiToken, str]:
    """A new API token for the actor (or, for an admin or the operator, for ``username``)."""
    actor = require_user(actor)
    name = (name or "").strip()
    if not 1 <= len(name) <= 100:
        raise InvalidInput.from_errors([FieldError("name", "length", "must have 1 to 100 characters")])
    if username is not None and username != actor.username:
        if not actor.is_admin:
            raise Forbidden("Only an admin can create a token for another user")
        async with p.db.session() as s:
            user = await s.scalar(select(User).where(col(User.username) == username))
        if user is None:
            raise NotFound(f"No user named {username!r}")
        return await issue_token(p, user.id, name, TokenOrigin.OPERATOR)
    return await issue_token(p, require_human(actor).person_id, name, TokenOrigin.API)


async def list_tokens(p: Platform, actor: Actor) -> list[ApiToken]:
    actor = require_human(actor)
    async with p.db.session() as s:
        rows = await s.scalars(
            select(ApiToken).where(col(ApiToken.user_id) == actor.user_id).order_by(col(ApiToken.id))
        )
        return list(rows)


async def tokens_of(p: Platform, actor: Actor, user_id: int) -> list[ApiToken]:
    """A user's API tokens (never their secrets, which are stored hashed), for the user themself and admins; anyone
    else sees none."""
    if actor.user_id is None or (actor.user_id != user_id and not actor.is_admin):
        return []
    async with p.db.session() as s:
        rows = await s.scalars(select(ApiToken).where(col(ApiToken.user_id) == user_id).order_by(col(ApiToken.id)))
        return list(rows)


async def token_listing(p: Platform, actor: Actor, user_id: int, page: cursors.WorkPage) -> cursors.Listing:
    """A page of a user's API tokens (:func:`tokens_of`'s rules: the user themself and admins; anyone else sees
    none), newest first unless ``page.oldest_first``, revoked ones included."""
    statement = select(ApiToken).where(col(ApiToken.user_id) == user_id)
    if actor.user_id is None or (actor.user_id != user_id and not actor.is_admin):
        statement = statement.where(false())
    return await cursors.id_listing(p, statement, ApiToken, "apiToken", page)


def visible_email(actor: Actor, user: User) -> str | None:
    """A user's email address, for the user themself and admins; None for everyone else."""
    return user.email if actor.user_id == user.id or actor.is_admin else None


async def revoke_token(p: Platform, actor: Actor, token_id: int) -> ApiToken:
    """Revoke one of the actor's tokens (admins: anyone's). Revoking twice is harmless."""
    actor = require_user(actor)
    async with p.db.write() as s:
        row = await s.get(ApiToken, token_id)
        if row is None or (row.user_id != actor.user_id and not actor.is_admin):
            raise NotFound(f"No token {token_id} of yours; list them with me {{ apiTokens {{ id }} }}")
        if row.revoked_at is None:
            row.revoked_at = utcnow()
    p.caches.tokens.pop(row.token_hash)
    return row


async def revoke_all_tokens(p: Platform, actor: Actor) -> int:
    """Revoke every live token of the actor, the one in use included (sign out everywhere); returns how many."""
    actor = require_human(actor)
    now = utcnow()
    async with p.db.write() as s:
        rows = list(
            await s.scalars(
                select(ApiToken).where(col(ApiToken.user_id) == actor.user_id, col(ApiToken.revoked_at).is_(None))
            )
        )
        for row in rows:
            row.revoked_at = now
    for row in rows:
        p.caches.tokens.pop(row.token_hash)
    return len(rows)


async def token_by_secret(p: Platform, plaintext: str) -> ApiToken | None:
    """The row of a token given in plain text (as just issued, or as sent in a request), or None."""
    async with p.db.session() as s:
        return await s.scalar(select(ApiToken).where(col(ApiToken.token_hash) == hash_token(plaintext)))


async def logout(p: Platform, actor: Actor, bearer: str | None) -> ApiToken:
    """Revoke the token the actor signed this request with; it stops working at once (the user's other tokens
    stay valid). Without a valid token: NotAuthenticated."""
    actor = require_user(actor)
    row = await token_by_secret(p, bearer) if bearer else None
    if row is None or row.user_id != actor.user_id:
        raise NotAuthenticated("log out with the token to revoke in 'Authorization: Bearer <token>'")
    return await revoke_token(p, actor, row.id)


async def authenticate(p: Platform, bearer: str | None) -> Actor:
    """Resolve ``Authorization: Bearer <token>``. No header: anonymous. A bad or revoked token: anonymous, with
    the reason in :attr:`Actor.sign_in_error`."""
    if not bearer:
        return Actor.anonymous()
    digest = hash_token(bearer)
    cached = p.caches.tokens.get(digest)
    if cached is not None:
        return cached
    async with p.db.session() as s:
        row = (
            await s.execute(
                select(ApiToken, User)
                .join(User, col(User.id) == col(ApiToken.user_id))
                .where(col(ApiToken.token_hash) == digest)
            )
        ).first()
    if row is None:
        return Actor.anonymous("The API token is not valid; create one with login or createApiToken")
    token, user = row
    expires = as_utc(token.expires_at)
    if token.revoked_at is not None:
        result = Actor.anonymous("The API token was revoked; sign in again with login")
    elif expires is not None and expires <= utcnow():
        result = Actor.anonymous(f"The API token expired on {expires:%Y-%m-%d}; sign in again with login")
    elif not user.is_active:
        result = Actor.anonymous("This account is disabled")
    else:
        result = _actor(user)
        now = utcnow()
        last = as_utc(token.last_used_at)
        if last is None or now - last > _LAST_USED_GRANULARITY:
            async with p.db.write() as s:
                stored = await s.get(ApiToken, token.id)
                if stored is not None:
                    stored.last_used_at = now
    p.caches.tokens.put(digest, result)
    return result


async def current_user(p: Platform, actor: Actor) -> User | None:
    """The signed-in user's account; None for anonymous actors and the operator, who have none."""
    return None if actor.user_id is None else await get_user(p, actor.user_id)


async def get_user(p: Platform, user_id: int) -> User | None:
    async with p.db.session() as s:
        return await s.get(User, user_id)


async def find_user(p: Platform, username: str) -> User | None:
    async with p.db.session() as s:
        return await s.scalar(select(User).where(col(User.username) == username))


async def get_token(p: Platform, actor: Actor, token_id: int) -> ApiToken:
    """One of the signed-in user's own API tokens; NotFound for anyone else's."""
    actor = require_user(actor)
    async with p.db.session() as s:
        row = await s.get(ApiToken, token_id)
    if row is None or row.user_id != actor.user_id:
        raise NotFound(f"No API token {token_id} of yours")
    return row


async def visible_user(p: Platform, actor: Actor, user_id: int) -> User:
    """A user by id. Usernames are public (round leaderboards show them); the email stays behind visible_email."""
    row = await get_user(p, user_id)
    if row is None:
        raise NotFound(f"No user {user_id}")
    return row


async def lookup_user(p: Platform, actor: Actor, username: str) -> User:
    """A user by username (case as registered, compared without case), for signed-in users: owners look people up
    to grant ownership. Usernames are public (round leaderboards show them); the email stays behind visible_email."""
    require_user(actor)
    name = (username or "").strip()
    if not 1 <= len(name) <= 100:
        raise NotFound(f"No user {username[:100]!r}")
    async with p.db.session() as s:
        row = await s.scalar(select(User).where(func.lower(col(User.username)) == name.lower()))
    if row is None:
        raise NotFound(f"No user {name!r}")
    return row
