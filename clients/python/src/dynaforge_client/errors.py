"""Errors as exceptions that carry the server's typed error.

Every failure the server reports (a mutation's error member such as ``InvalidInput``, or a query's GraphQL error with
an ``extensions.code``) is raised as a :class:`DynaforgeError` subclass chosen by that code, with the server's message
and, for :class:`InvalidInput`, one :class:`FieldError` per problem::

    try:
        client.create_example("nli", {"hypothesis": ""})
    except InvalidInput as exc:
        for problem in exc.field_errors:
            print(problem.path, problem.rule, problem.message)

Problems on the way to the server (refused connections, timeouts, a proxy's 502) are :class:`TransportError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldError:
    """One problem with one field of the input: ``field`` is its path within the input (``["hypothesis"]``, or
    ``["card", "license"]``), ``code`` its kind (REQUIRED, CHOICE, LENGTH, ...), ``rule`` the exact rule broken."""

    field: tuple[str, ...]
    code: str
    rule: str
    message: str

    @property
    def path(self) -> str:
        """The field's path, dotted (``card.license``)."""
        return ".".join(self.field)


class DynaforgeError(Exception):
    """A failure the server reported, with its code (``NOT_FOUND``, ``INVALID_INPUT``, ...) and message."""

    code = "ERROR"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        field_errors: Iterable[FieldError] = (),
        retry_after: float | None = None,
    ):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.field_errors: tuple[FieldError, ...] = tuple(field_errors)
        self.retry_after = retry_after

    def __str__(self) -> str:
        untold = [e for e in self.field_errors if e.message not in self.message]  # the server often lists them
        if not untold:
            return f"{self.code}: {self.message}"
        details = "; ".join(f"{e.path}: {e.message} ({e.rule})" for e in untold)
        return f"{self.code}: {self.message} [{details}]"


class InvalidInput(DynaforgeError):
    """The input was refused; ``field_errors`` names each problem. Nothing was stored."""

    code = "INVALID_INPUT"


class NotAuthenticated(DynaforgeError):
    """Sign in first (``client.login``, or a token in ``Client(token=...)``), or the token was revoked or expired."""

    code = "NOT_AUTHENTICATED"


class InvalidCredentials(DynaforgeError):
    """The username or password is wrong."""

    code = "INVALID_CREDENTIALS"


class Forbidden(DynaforgeError):
    """Signed in, but not allowed to do this."""

    code = "FORBIDDEN"


class NotFound(DynaforgeError):
    """No such thing that you can see (a task, round, model, example, data set)."""

    code = "NOT_FOUND"


class AlreadyExists(DynaforgeError):
    """It exists already (a username, a vote on this example)."""

    code = "ALREADY_EXISTS"


class Conflict(DynaforgeError):
    """The thing changed under you (an example decided meanwhile); read it again."""

    code = "CONFLICT"


class RoundClosed(DynaforgeError):
    """The task has no open round to write in."""

    code = "ROUND_CLOSED"


class RateLimited(DynaforgeError):
    """Too many requests; ``retry_after`` says how many seconds to wait."""

    code = "RATE_LIMITED"


class QuotaExceeded(DynaforgeError):
    """An allowance is used up (``quota``: EXAMPLES_PER_DAY, SUBMISSIONS_PER_DAY, TRAINING_JOBS_PER_DAY,
    GENERATION_QUERIES_PER_DAY, WEBHOOKS_PER_TASK; ``limit``: its size). Unlike :class:`RateLimited`, trying again
    soon does not help: ``retry_after`` is when it frees up, or None when only removing something frees it."""

    code = "QUOTA_EXCEEDED"

    def __init__(self, message: str, *, quota: str | None = None, limit: int | None = None, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.quota, self.limit = quota, limit


class NearDuplicate(DynaforgeError):
    """The example fooled the model but is this close to an earlier fooling example of its round (the task's
    ``nearDuplicateThreshold``); nothing was stored. Change it, or send it again with
    ``create_example(..., allow_near_duplicate=True)``. ``similarity`` and ``threshold`` are 0 to 1;
    ``your_example_id`` names the earlier example when it is your own (None when it is someone else's)."""

    code = "NEAR_DUPLICATE"

    def __init__(
        self,
        message: str,
        *,
        similarity: float | None = None,
        threshold: float | None = None,
        your_example_id: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(message, **kwargs)
        self.similarity, self.threshold, self.your_example_id = similarity, threshold, your_example_id


class ServiceUnavailable(DynaforgeError):
    """The server cannot do it now (a service it needs is down); try again later."""

    code = "SERVICE_UNAVAILABLE"


class EmptyExport(UserWarning):
    """An export held no example; the message is the server's reason (say, none of the task's rounds is published
    yet, and you do not own it). Warned, not raised: an empty export is an answer."""


class TransportError(DynaforgeError):
    """The request did not get a GraphQL answer: the connection failed, timed out, or the HTTP status was an error."""

    code = "TRANSPORT"

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(message, retry_after=retry_after)
        self.status = status


_BY_CODE: dict[str, type[DynaforgeError]] = {
    cls.code: cls
    for cls in (
        InvalidInput,
        NotAuthenticated,
        InvalidCredentials,
        Forbidden,
        NotFound,
        AlreadyExists,
        Conflict,
        RoundClosed,
        RateLimited,
        QuotaExceeded,
        NearDuplicate,
        ServiceUnavailable,
    )
}
# A mutation's error member is named after the error (InvalidInput, NotFound, ...)
_BY_TYPENAME: dict[str, type[DynaforgeError]] = {cls.__name__: cls for cls in _BY_CODE.values()}


def _field_errors(items: Iterable[Any]) -> list[FieldError]:
    problems = []
    for item in items:
        data = item if isinstance(item, Mapping) else item.model_dump()
        field = data.get("field") or []
        problems.append(
            FieldError(
                field=tuple(str(part) for part in field),
                code=str(getattr(data.get("code"), "value", data.get("code"))),
                rule=str(data.get("rule", "")),
                message=str(data.get("message", "")),
            )
        )
    return problems


def from_member(member: Any) -> DynaforgeError:
    """The exception for a result union's error member (a generated model with ``typename__``)."""
    typename = getattr(member, "typename__", "Error")
    cls = _BY_TYPENAME.get(typename, DynaforgeError)
    common: dict[str, Any] = {
        "code": None if cls is not DynaforgeError else typename,
        "field_errors": _field_errors(getattr(member, "field_errors", None) or ()),
        "retry_after": getattr(member, "retry_after_seconds", getattr(member, "resets_in_seconds", None)),
    }
    if cls is QuotaExceeded:
        quota = getattr(member, "quota", None)
        return QuotaExceeded(
            getattr(member, "message", typename),
            quota=None if quota is None else str(getattr(quota, "value", quota)),
            limit=getattr(member, "limit", None),
            **common,
        )
    if cls is NearDuplicate:
        yours = getattr(member, "your_example", None)
        return NearDuplicate(
            getattr(member, "message", typename),
            similarity=getattr(member, "similarity", None),
            threshold=getattr(member, "threshold", None),
            your_example_id=None if yours is None else yours.id,
            **common,
        )
    return cls(getattr(member, "message", typename), **common)


def from_graphql_error(error: Mapping[str, Any]) -> DynaforgeError:
    """The exception for one error of a GraphQL response's ``errors`` (its ``extensions.code`` picks the class)."""
    extensions = error.get("extensions") or {}
    code = str(extensions.get("code") or "ERROR")
    cls = _BY_CODE.get(code, DynaforgeError)
    return cls(
        str(error.get("message", code)),
        code=code if cls is DynaforgeError else None,
        field_errors=_field_errors(extensions.get("fieldErrors") or ()),
        retry_after=extensions.get("retryAfterSeconds", extensions.get("resetsInSeconds")),
        **({"quota": extensions.get("quota"), "limit": extensions.get("limit")} if cls is QuotaExceeded else {}),
    )
