"""Typed GraphQL errors: every expected failure is a member of a mutation's result union.

Resolvers raise the domain's errors (or let the services raise them) and say how they reach the client with one
decorator: :data:`errors_as_union` (mutations), :data:`errors_as_graphql` (queries: a GraphQL error with a code) or
:data:`errors_as_null` (look-ups that answer null for what you cannot see).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar, cast

import strawberry
from graphql import GraphQLError

from dynaforge import errors as domain

Resolver = TypeVar("Resolver", bound=Callable[..., Awaitable[Any]])


@strawberry.interface(description="An expected failure: the message says what to do next.")
class Error:
    message: str = strawberry.field(description="What went wrong and what to do next, in a sentence for people.")


@strawberry.type(description="One broken rule on one field.")
class FieldError:
    field: str = strawberry.field(
        description="The input field at fault, by its GraphQL name; a path for nested or listed values "
        "('models[1].backend', 'contexts[0].passage') or a line of an uploaded file ('line 7.passage')."
    )
    rule: str = strawberry.field(
        description="A stable, machine-readable name of the rule broken (for example 'length', 'range', 'choice', "
        "'format', 'cursor'): branch on it, not on the message."
    )
    message: str = strawberry.field(description="What is wrong with the field and what it must be, for people.")


@strawberry.type(description="The input broke the task's or the API's rules; nothing was stored.")
class InvalidInput(Error):
    field_errors: list[FieldError] = strawberry.field(
        description="The broken rules found, one per field and rule (a long list of file problems ends with one "
        "entry counting those not listed). May be empty: then the message alone says what is wrong."
    )


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
    retry_after_seconds: float = strawberry.field(
        description="Seconds to wait before the same action can succeed (millisecond precision); 0 when waiting "
        "does not help, as with the limit on webhooks per task (delete one first)."
    )


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


def query_error(exc: domain.DynaforgeError) -> GraphQLError:
    """For queries (which return objects, not unions): a GraphQL error carrying the domain code."""
    extensions: dict[str, Any] = {"code": exc.code}
    if isinstance(exc, domain.InvalidInput):
        extensions["fieldErrors"] = [e.__dict__ for e in exc.field_errors]
    return GraphQLError(exc.message, extensions=extensions, original_error=exc)


def _raise_query_error(exc: domain.DynaforgeError) -> NoReturn:
    raise query_error(exc) from exc


def _null(exc: domain.DynaforgeError) -> None:
    return None


def _translating(translate: Callable[[domain.DynaforgeError], Any]) -> Callable[[Resolver], Resolver]:
    """A decorator for async resolvers: a domain error raised by the body becomes ``translate(error)``.

    ``functools.wraps`` keeps the resolver's signature and module, which strawberry reads once to build the schema;
    each call costs the wrapper's frame and nothing else (no closure, no signature inspection).
    """

    def decorate(resolver: Resolver) -> Resolver:
        @functools.wraps(resolver)
        async def resolve(*args: Any, **kwargs: Any) -> Any:
            try:
                return await resolver(*args, **kwargs)
            except domain.DynaforgeError as exc:
                return translate(exc)

        return cast(Resolver, resolve)

    return decorate


#: Mutations: an expected failure is returned as its member of the result union (``NotFound``, ``RateLimited``...).
errors_as_union = _translating(to_graphql)
#: Queries and fields: an expected failure is a GraphQL error whose ``extensions.code`` names it.
errors_as_graphql = _translating(_raise_query_error)
#: Look-ups documented as "null when there is none you can see": an expected failure answers null.
errors_as_null = _translating(_null)


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
