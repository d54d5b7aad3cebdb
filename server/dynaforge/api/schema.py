"""The strawberry schema with its protective extensions, and the SDL printer behind schema.graphql."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import strawberry
from graphql import (
    ExecutionResult as GraphQLExecutionResult,
)
from graphql import (
    GraphQLError,
    NoSchemaIntrospectionCustomRule,
    StringValueNode,
    Visitor,
    visit,
)
from strawberry.extensions import (
    AddValidationRules,
    MaskErrors,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    SchemaExtension,
)
from strawberry.schema.schema import validate_document
from strawberry.tools import merge_types
from strawberry.types.graphql import OperationType

from dynaforge.aio import loop_semaphore
from dynaforge.api.adversaries import AdversaryMutation, AdversaryQuery
from dynaforge.api.collection import CollectionMutation, CollectionQuery
from dynaforge.api.contexts import ContextMutation
from dynaforge.api.cost import QueryCost
from dynaforge.api.crowd import CrowdMutation, CrowdQuery
from dynaforge.api.datasets import DatasetMutation, DatasetQuery
from dynaforge.api.documents import OnlyTrustedDocuments, registered_documents
from dynaforge.api.errors import ERROR_TYPES
from dynaforge.api.execution import ExecutionContext
from dynaforge.api.imports import ImportMutation
from dynaforge.api.leaderboards import LeaderboardMutation, LeaderboardQuery
from dynaforge.api.media_uploads import MediaMutation
from dynaforge.api.model_uploads import ModelUploadMutation
from dynaforge.api.models import ModelMutation, ModelQuery
from dynaforge.api.mutations import Mutation as CoreMutation
from dynaforge.api.nodes import NODE_CLASSES, NodeQuery
from dynaforge.api.queries import Query as CoreQuery
from dynaforge.api.registry import RegistryQuery
from dynaforge.api.subscriptions import Subscription
from dynaforge.api.training import TrainingMutation, TrainingQuery
from dynaforge.api.tutorial import TutorialMutation
from dynaforge.api.users import UserMutation, UserQuery
from dynaforge.api.validators import ValidatorMutation
from dynaforge.api.webhooks import WebhookMutation, WebhookQuery
from dynaforge.errors import DynaforgeError, ServiceUnavailable, database_unreachable, text_problem
from dynaforge.settings import Settings


def _should_mask(error: GraphQLError) -> bool:
    """Mask everything unexpected; keep GraphQL's own errors (syntax, validation) and domain errors."""
    original = error.original_error
    if original is None:
        return False
    if isinstance(original, GraphQLError):
        original = original.original_error
        if original is None:
            return False
    return not isinstance(original, DynaforgeError)


class DatabaseUnavailable(SchemaExtension):
    """An error caused by a lost or refused database connection becomes SERVICE_UNAVAILABLE with a message that
    says to retry, instead of the masked 'Unexpected error' (the server reconnects by itself)."""

    MESSAGE = (
        "The database is unreachable right now; retry in a few seconds. A write that got this answer may or "
        "may not have been stored: check (e.g. with your examples) before sending it again."
    )

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is None or not result.errors:
            return
        replaced = []
        for error in result.errors:
            if not isinstance(error.original_error, DynaforgeError) and database_unreachable(error.original_error):
                cause = ServiceUnavailable(self.MESSAGE)
                error = GraphQLError(
                    cause.message,
                    nodes=error.nodes,
                    path=error.path,
                    original_error=cause,
                    extensions={"code": cause.code},
                )
            replaced.append(error)
        result.errors = replaced


class InputHygiene(SchemaExtension):
    """Refuse, before any resolver runs, variables or string literals that no store can hold: NUL characters,
    unpaired surrogates, NaN and infinities (see :func:`dynaforge.errors.text_problem`). One INVALID_INPUT error
    naming the variable; nothing runs, so nothing is half-written."""

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        problem, where = None, None
        for name, value in (context.variables or {}).items():
            problem = text_problem(value)
            if problem:
                where = f"variable ${name}"
                break
        if problem is None and context.graphql_document is not None and _may_hold_bad_literals(context.query):
            for node in _string_literals(context.graphql_document):
                problem = text_problem(node.value)
                if problem:
                    where = "a string in the query"
                    break
        if problem is not None:
            context.result = GraphQLExecutionResult(
                data=None,
                errors=[GraphQLError(f"Invalid input: {where} {problem}", extensions={"code": "INVALID_INPUT"})],
            )
        yield


def _may_hold_bad_literals(query: str | None) -> bool:
    """A string literal can only hold NUL or a surrogate if the query text has a ``\\u`` escape, a NUL or non-ASCII
    characters: the common query skips the walk over its syntax tree (about 0.3 ms)."""
    return query is None or "\\u" in query or "\x00" in query or not query.isascii()


class _Strings(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[StringValueNode] = []

    def enter_string_value(self, node: StringValueNode, *_) -> None:
        self.found.append(node)


def _string_literals(document) -> list[StringValueNode]:
    strings = _Strings()
    visit(document, strings)
    return strings.found


class ValidationByText(SchemaExtension):
    """strawberry's ``ValidationCache``, keyed by the query's text instead of its syntax tree.

    ``ValidationCache`` keys its LRU on the parsed document, and graphql-core hashes a document by walking all of its
    nodes, on every request. Validation depends only on the schema, the document (one per text, from the parser
    cache) and the rules, so the text stands for the document; the cache is bounded like the original.
    """

    MAXSIZE = 256
    _cache: OrderedDict[tuple[int, str, tuple[Any, ...]], list[GraphQLError]] = OrderedDict()

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        if context.graphql_document is None or context.query is None or context.pre_execution_errors is not None:
            yield  # nothing to validate, or an earlier extension has decided (OnlyTrustedDocuments)
            return
        key = (id(context.schema._schema), context.query, tuple(context.validation_rules))
        errors = self._cache.get(key)
        if errors is None:
            errors = validate_document(context.schema._schema, context.graphql_document, context.validation_rules)
            self._cache[key] = errors
            if len(self._cache) > self.MAXSIZE:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        context.pre_execution_errors = errors
        yield


class ReadAdmission(SchemaExtension):
    """At most ``limit`` queries execute at once in this process; mutations never wait.

    When reads saturate the server, an annotator's createExample would otherwise queue behind every read in the
    event loop. Reads beyond the limit wait (costing no CPU) until one finishes, so writes keep their share.
    """

    def __init__(self, limit: int):
        self.limit = limit

    async def on_execute(self) -> AsyncIterator[None]:
        if self.limit <= 0 or self.execution_context.operation_type != OperationType.QUERY:
            yield
            return
        async with loop_semaphore("graphql-reads", self.limit):
            yield


# Each feature module owns its resolvers; the roots merge them (field names must not repeat across modules).
QUERY_TYPES: tuple[type, ...] = (
    CoreQuery,
    NodeQuery,
    CollectionQuery,
    LeaderboardQuery,
    ModelQuery,
    DatasetQuery,
    WebhookQuery,
    RegistryQuery,
    TrainingQuery,
    AdversaryQuery,
    UserQuery,
    CrowdQuery,
)
MUTATION_TYPES: tuple[type, ...] = (
    CoreMutation,
    ImportMutation,
    CollectionMutation,
    LeaderboardMutation,
    ModelMutation,
    DatasetMutation,
    ContextMutation,
    ModelUploadMutation,
    MediaMutation,
    WebhookMutation,
    ValidatorMutation,
    TutorialMutation,
    TrainingMutation,
    AdversaryMutation,
    UserMutation,
    CrowdMutation,
)
Query = merge_types("Query", QUERY_TYPES)
Mutation = merge_types("Mutation", MUTATION_TYPES)
# merge_types takes no description; the merged definitions carry one like every other type.
cast(Any, Query).__strawberry_definition__.description = (
    "What anyone may read: tasks, rounds, examples, validation queues, models, leaderboards, data sets, webhooks. "
    "Each field says who sees what; a look-up answers null for what you may not see."
)
cast(Any, Mutation).__strawberry_definition__.description = (
    "Every write. Each answers a union of its success type and the typed failures it can meet (`InvalidInput`, "
    "`NotAuthenticated`, `Forbidden`, `NotFound`, ...): nothing is written when it fails."
)


def build_schema(settings: Settings | None = None) -> strawberry.Schema:
    settings = settings or Settings()
    # The limiters' validation rules are built once: each limiter instance would create new rule classes, and the
    # rules are part of the validation cache's key, so per-request rules would never hit the cache.
    rules = [
        *QueryDepthLimiter(max_depth=settings.graphql_max_depth).validation_rules,
        *MaxAliasesLimiter(max_alias_count=settings.graphql_max_aliases).validation_rules,
    ]
    if not settings.introspection_enabled:  # production: the schema is published as schema.graphql instead
        rules.append(NoSchemaIntrospectionCustomRule)
    documents = registered_documents(settings)
    only_trusted = [lambda: OnlyTrustedDocuments(documents)] if settings.trusted_documents_only else []
    return strawberry.Schema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        types=[*ERROR_TYPES, *NODE_CLASSES],
        execution_context_class=ExecutionContext,
        extensions=[
            lambda: MaskErrors(should_mask_error=_should_mask, error_message="Unexpected error; it has been logged."),
            DatabaseUnavailable,  # inside MaskErrors: its errors are typed before masking looks at them
            *only_trusted,  # before the parser cache: a refused document is never parsed
            InputHygiene,
            lambda: AddValidationRules(rules),
            lambda: ReadAdmission(settings.graphql_max_concurrent_reads),
            lambda: MaxTokensLimiter(max_token_count=settings.graphql_max_tokens),
            # Built per request; their LRU caches live at module level, shared by every request.
            lambda: ParserCache(maxsize=256),
            ValidationByText,
            lambda: QueryCost(settings.graphql_max_nodes),  # after ValidationByText: it counts valid documents only
        ],
    )


def sdl() -> str:
    """The schema in SDL, as committed in schema.graphql."""
    return build_schema().as_str() + "\n"
