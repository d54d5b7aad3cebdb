"""Typed GraphQL errors: every expected failure is a member of a mutation's result union."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import strawberry
from graphql import GraphQLError

from dynaforge import errors as domain


@strawberry.interface(description="An expected failure: the message says what to do next.")
class Error:
    message: str


@strawberry.type(description="One broken rule on one field.")
class FieldError:
    field: str
    rule: str
    message: str


@strawberry.type(description="The input broke the task's or the API's rules; nothing was stored.")
class InvalidInput(Error):
    field_errors: list[FieldError]


@strawberry.type(
    description="No valid API token was sent: register, login, or create a token, then send it as "
    "'Authorization: Bearer <token>'."
)
class NotAuthenticated(Error):
    pass


@strawberry.type(description="You are signed in but may not do this.")
class Forbidden(Error):
    pass


@strawberry.type(description="The thing named does not exist or you cannot see it.")
class NotFound(Error):
    pass


@strawberry.type(description="A unique name or address is already taken.")
class AlreadyExists(Error):
    pass


@strawberry.type(description="Unknown username or wrong password.")
class InvalidCredentials(Error):
    pass


@strawberry.type(description="Too many requests of this kind; retry after the given number of seconds.")
class RateLimited(Error):
    retry_after_seconds: float


@strawberry.type(description="The task or round is not collecting examples now.")
class RoundClosed(Error):
    pass


@strawberry.type(
    description="It changed state meanwhile (for example, other validators decided it); refetch and "
    "retry with something else."
)
class Conflict(Error):
    pass


_SIMPLE: dict[type, type] = {
    domain.Conflict: Conflict,
    domain.NotAuthenticated: NotAuthenticated,
    domain.Forbidden: Forbidden,
    domain.NotFound: NotFound,
    domain.AlreadyExists: AlreadyExists,
    domain.InvalidCredentials: InvalidCredentials,
    domain.RoundClosed: RoundClosed,
}


def to_graphql(exc: domain.DynaforgeError) -> Any:
    """The GraphQL error type for a domain error."""
    if isinstance(exc, domain.InvalidInput):
        return InvalidInput(
            message=exc.message,
            field_errors=[FieldError(field=e.field, rule=e.rule, message=e.message) for e in exc.field_errors],
        )
    if isinstance(exc, domain.RateLimited):
        return RateLimited(message=exc.message, retry_after_seconds=round(exc.retry_after_s, 3))
    for domain_type, graphql_type in _SIMPLE.items():
        if isinstance(exc, domain_type):
            return graphql_type(message=exc.message)
    raise exc


async def as_result(call: Callable[[], Any]) -> Any:
    """Run a service call; a domain error becomes its typed GraphQL member instead of an exception."""
    try:
        return await call()
    except domain.DynaforgeError as exc:
        return to_graphql(exc)


def query_error(exc: domain.DynaforgeError) -> GraphQLError:
    """For queries (which return objects, not unions): a GraphQL error carrying the domain code."""
    extensions: dict[str, Any] = {"code": exc.code}
    if isinstance(exc, domain.InvalidInput):
        extensions["fieldErrors"] = [e.__dict__ for e in exc.field_errors]
    return GraphQLError(exc.message, extensions=extensions, original_error=exc)


def parse_id(value: Any, field: str) -> int:
    try:
        text = str(value)
        if not (text.isascii() and text.isdigit()):  # int() would also take "+1", " 1", "1_0" and other scripts' digits
            raise ValueError
        number = int(text)
        if not 0 < number <= domain.MAX_ID:  # beyond the id columns' range no row can have it
            raise ValueError
        return number
    except ValueError as exc:
        raise domain.InvalidInput.from_errors([domain.FieldError(field, "id", f"{value!r} is not an id")]) from exc


ERROR_TYPES = [
    InvalidInput,
    NotAuthenticated,
    Forbidden,
    NotFound,
    AlreadyExists,
    InvalidCredentials,
    RateLimited,
    RoundClosed,
    Conflict,
]
