"""Typed GraphQL errors: every expected failure is a member of a mutation's result union.

Resolvers raise the domain's errors (or let the services raise them) and say how they reach the client with one
decorator: :data:`errors_as_union` (mutations), :data:`errors_as_graphql` (queries: a GraphQL error with a code) or
:data:`errors_as_null` (look-ups that answer null for what you cannot see).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Annotated, Any, NoReturn, TypeVar, cast

import strawberry
from graphql import GraphQLError

from dynaforge import errors as domain
from dynaforge.api.node import related

Resolver = TypeVar("Resolver", bound=Callable[..., Awaitable[Any]])


@strawberry.interface(description="An expected failure: the message says what to do next.")
class Error:
    message: str = strawberry.field(description="What went wrong and what to do next, in a sentence for people.")


@strawberry.enum(description="What kind of rule a field broke: branch on it; `FieldError.rule` names the exact rule.")
class FieldErrorCode(Enum):
    REQUIRED = strawberry.enum_value("REQUIRED", description="A value must be given.")
    TYPE = strawberry.enum_value("TYPE", description="The value has the wrong type or shape.")
    CHOICE = strawberry.enum_value(
        "CHOICE", description="The value is not one of those allowed (listed in the message)."
    )
    RANGE = strawberry.enum_value("RANGE", description="A number or a count is out of its range.")
    LENGTH = strawberry.enum_value("LENGTH", description="A text or a list is too short or too long.")
    FORMAT = strawberry.enum_value("FORMAT", description="The text does not have the required form (a URL, a code).")
    EMPTY = strawberry.enum_value("EMPTY", description="The value is empty where something is needed.")
    UNIQUE = strawberry.enum_value("UNIQUE", description="The value is given twice, or is already taken.")
    UNKNOWN = strawberry.enum_value("UNKNOWN", description="The value names something the server does not have.")
    NOT_FOUND = strawberry.enum_value("NOT_FOUND", description="The value names something that is not there.")
    TOO_MANY = strawberry.enum_value("TOO_MANY", description="Too many items, or too many problems to list them all.")
    ID = strawberry.enum_value("ID", description="Not an id of the expected type: pass an `id` the API returned.")
    CURSOR = strawberry.enum_value("CURSOR", description="Not a cursor of this list: pass a pageInfo cursor unchanged.")
    EXCLUSIVE = strawberry.enum_value("EXCLUSIVE", description="The argument cannot be given with another one.")
    UNUSED = strawberry.enum_value("UNUSED", description="The value does not apply with the other arguments given.")
    NOT_ALLOWED = strawberry.enum_value("NOT_ALLOWED", description="The value is not allowed here or for you.")
    SPAN = strawberry.enum_value("SPAN", description="A span does not sit in the context text it selects from.")
    ROLE = strawberry.enum_value("ROLE", description="The field cannot be set here (its role is another).")
    FILE = strawberry.enum_value("FILE", description="An uploaded file cannot be read (encoding, JSON, columns).")
    CONFIG = strawberry.enum_value("CONFIG", description="A backend's configuration is wrong (the message says how).")
    OTHER = strawberry.enum_value(
        "OTHER", description="A rule a task plugin defines (`rule` names it; the message says what to do)."
    )


#: The platform's rules (FieldError.rule as the services raise them) by kind; a plugin's own rules are OTHER.
RULE_CODES: dict[str, FieldErrorCode] = {
    **dict.fromkeys(["required"], FieldErrorCode.REQUIRED),
    **dict.fromkeys(
        ["type", "integer", "not_a_number", "fooled", "prediction", "model_predictions", "fields"], FieldErrorCode.TYPE
    ),
    **dict.fromkeys(["choice", "access", "status", "unknown_direction"], FieldErrorCode.CHOICE),
    **dict.fromkeys(
        [
            "range",
            "minimum",
            "maximum",
            "count",
            "fractions",
            "negative",
            "not_finite",
            "not_positive",
            "all_zero",
            "votes",
            "time_taken_ms",
            "budget",
            "daily_budget",
            "min_size",
        ],
        FieldErrorCode.RANGE,
    ),
    **dict.fromkeys(
        ["length", "min_length", "max_length", "max_references", "tag", "flag_reason"], FieldErrorCode.LENGTH
    ),
    **dict.fromkeys(["format", "url", "pattern", "arrival"], FieldErrorCode.FORMAT),
    **dict.fromkeys(["empty", "empty_folder", "text"], FieldErrorCode.EMPTY),
    **dict.fromkeys(["unique", "duplicate", "repeated"], FieldErrorCode.UNIQUE),
    **dict.fromkeys(
        ["unknown", "unknown_column", "unknown_field", "unknown_metric", "importer", "plugin"], FieldErrorCode.UNKNOWN
    ),
    **dict.fromkeys(
        ["not_found", "original", "round", "dns", "not_in_pool", "not_a_validator", "media"], FieldErrorCode.NOT_FOUND
    ),
    **dict.fromkeys(
        [
            "max_items",
            "more",
            "more_errors",
            "too_many_errors",
            "max_rows",
            "max_bytes",
            "max_pixels",
            "limit",
            "quota",
        ],
        FieldErrorCode.TOO_MANY,
    ),
    **dict.fromkeys(["id"], FieldErrorCode.ID),
    **dict.fromkeys(["cursor"], FieldErrorCode.CURSOR),
    **dict.fromkeys(["exclusive"], FieldErrorCode.EXCLUSIVE),
    **dict.fromkeys(["unused", "label", "unsupported"], FieldErrorCode.UNUSED),
    **dict.fromkeys(
        [
            "not_allowed",
            "unavailable",
            "no_context_fields",
            "no_correction",
            "scoring",
            "changed",
            "task",
            "credentials",
            "internal",
            "submission_kind",
            "pool",
            "use",
            "unsuitable",
            "nothing_to_tune",
            "no_adversary",
            "context",
            "copy",
            "study",
            "nothing_owed",
            "payout",
            "payout_uncertain",
        ],
        FieldErrorCode.NOT_ALLOWED,
    ),
    **dict.fromkeys(["span_context", "span_in_context"], FieldErrorCode.SPAN),
    **dict.fromkeys(["role"], FieldErrorCode.ROLE),
    **dict.fromkeys(["columns", "json", "nul", "upload", "csv", "encoding", "header", "decode"], FieldErrorCode.FILE),
    **dict.fromkeys(["backend_config"], FieldErrorCode.CONFIG),
    # model archives (uploadModel, dynaforge.model_archive)
    **dict.fromkeys(["pickle", "code", "file_type", "link", "path", "remote_code"], FieldErrorCode.NOT_ALLOWED),
    **dict.fromkeys(["archive", "safetensors"], FieldErrorCode.FILE),
}


def field_path(field: str) -> list[str]:
    """``'contexts[0].passage'`` -> ``['contexts', '0', 'passage']``; ``'line 7.label'`` -> ``['line 7', 'label']``."""
    path: list[str] = []
    for part in field.split("."):
        name, _, rest = part.partition("[")
        if name:
            path.append(name)
        while rest:
            index, _, rest = rest.partition("]")
            path.append(index)
            rest = rest.removeprefix("[")
    return path or [field]


@strawberry.type(description="One broken rule on one field.")
class FieldError:
    field: list[str] = strawberry.field(
        description="The path to the input value at fault, by GraphQL names and list indexes: ['name'], "
        "['models', '1', 'backend'], ['contexts', '0', 'passage'], or a line of an uploaded file ['line 7', 'passage']."
    )
    code: FieldErrorCode = strawberry.field(description="What kind of rule it broke: branch on it.")
    rule: str = strawberry.field(
        description="The exact rule, stable and machine-readable ('length', 'range', 'choice', ..., or one a task "
        "plugin defines): finer than `code`."
    )
    message: str = strawberry.field(description="What is wrong with the field and what it must be, for people.")

    @classmethod
    def of(cls, error: domain.FieldError) -> FieldError:
        return cls(
            field=field_path(error.field),
            code=RULE_CODES.get(error.rule, FieldErrorCode.OTHER),
            rule=error.rule,
            message=error.message,
        )


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


@strawberry.enum(description="A counted allowance that QuotaExceeded says is used up.")
class Quota(Enum):
    EXAMPLES_PER_DAY = strawberry.enum_value("EXAMPLES_PER_DAY", description=domain.QUOTAS["EXAMPLES_PER_DAY"])
    SUBMISSIONS_PER_DAY = strawberry.enum_value("SUBMISSIONS_PER_DAY", description=domain.QUOTAS["SUBMISSIONS_PER_DAY"])
    TRAINING_JOBS_PER_DAY = strawberry.enum_value(
        "TRAINING_JOBS_PER_DAY", description=domain.QUOTAS["TRAINING_JOBS_PER_DAY"]
    )
    GENERATION_QUERIES_PER_DAY = strawberry.enum_value(
        "GENERATION_QUERIES_PER_DAY", description=domain.QUOTAS["GENERATION_QUERIES_PER_DAY"]
    )
    WEBHOOKS_PER_TASK = strawberry.enum_value("WEBHOOKS_PER_TASK", description=domain.QUOTAS["WEBHOOKS_PER_TASK"])


@strawberry.type(
    description="An allowance is used up (examples a day, submissions in 24 hours, training jobs a day, generation "
    "queries a day, webhooks per task). Unlike RateLimited, asking again soon does not help."
)
class QuotaExceeded(Error):
    quota: Quota = strawberry.field(description="Which allowance.")
    limit: int = strawberry.field(description="Its size.")
    resets_in_seconds: float | None = strawberry.field(
        description="Seconds until the allowance frees up again (millisecond precision); null when only removing "
        "something frees it (delete a webhook to register another)."
    )


@strawberry.type(description="The task or round is not collecting examples now.")
class RoundClosed(Error):
    pass


@strawberry.type(
    description="The new example fooled the model but is this close to an earlier fooling example of its round (the "
    "task's nearDuplicateThreshold): nothing was stored. Change it, or send it again with allowNearDuplicate; it is "
    "then stored with the earlier example and the similarity beside it."
)
class NearDuplicate(Error):
    similarity: float = strawberry.field(
        description="The estimated Jaccard similarity of the two texts' shingles (MinHash), 0 to 1."
    )
    threshold: float = strawberry.field(description="The task's threshold it reached.")
    example_key: strawberry.Private[int | None]

    @strawberry.field(
        description="The earlier example when it is your own; null when it is another person's (it stays theirs)."
    )
    async def your_example(
        self, info: strawberry.Info
    ) -> Annotated["Example", strawberry.lazy("dynaforge.api.types.example")] | None:  # type: ignore[name-defined]  # noqa: F821, UP037
        if self.example_key is None:
            return None
        found: Any = await related(info, "Example", self.example_key)
        return cast(Any, found)


@strawberry.type(
    description="It changed state meanwhile (for example, other validators decided it); refetch and "
    "retry with something else."
)
class Conflict(Error):
    pass


@strawberry.type(
    description="Something the request needs (a target model, an adversary, the event bus) cannot answer now; "
    "retrying later may succeed. Nothing was stored."
)
class ServiceUnavailable(Error):
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
            field_errors=[FieldError.of(e) for e in exc.field_errors],
        )
    if isinstance(exc, domain.RateLimited):
        return RateLimited(message=exc.message, retry_after_seconds=round(exc.retry_after_s, 3))
    if isinstance(exc, domain.QuotaExceeded):
        retry = None if exc.retry_after_s is None else round(exc.retry_after_s, 3)
        return QuotaExceeded(message=exc.message, quota=Quota[exc.quota], limit=exc.limit, resets_in_seconds=retry)
    if isinstance(exc, domain.NearDuplicate):
        return NearDuplicate(
            message=exc.message,
            similarity=round(exc.similarity, 4),
            threshold=exc.threshold,
            example_key=exc.example_id,
        )
    for domain_type, graphql_type in _SIMPLE.items():
        if isinstance(exc, domain_type):
            return graphql_type(message=exc.message)
    raise exc


def query_error(exc: domain.DynaforgeError) -> GraphQLError:
    """For queries (which return objects, not unions): a GraphQL error carrying the domain code."""
    extensions: dict[str, Any] = {"code": exc.code}
    if isinstance(exc, domain.RateLimited):
        extensions["retryAfterSeconds"] = round(exc.retry_after_s, 3)
    if isinstance(exc, domain.QuotaExceeded):
        retry = exc.retry_after_s
        extensions.update(quota=exc.quota, limit=exc.limit, resetsInSeconds=None if retry is None else round(retry, 3))
    if isinstance(exc, domain.InvalidInput):
        extensions["fieldErrors"] = [
            {
                "field": field_path(e.field),
                "code": RULE_CODES.get(e.rule, FieldErrorCode.OTHER).name,
                "rule": e.rule,
                "message": e.message,
            }
            for e in exc.field_errors
        ]
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

        resolve.raises_errors = translate is _raise_query_error  # type: ignore[attr-defined]  # read by the tests
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
    QuotaExceeded,
    RoundClosed,
    NearDuplicate,
    Conflict,
    ServiceUnavailable,
]
