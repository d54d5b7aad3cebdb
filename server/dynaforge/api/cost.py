"""A query cost limit: how many objects an operation may ask for, counted before anything runs.

Depth, alias and token limits bound a document's size, not its work: ``models(first: 100) { nodes {
evaluations(first: 100) { nodes { ... } } } }`` is short and asks for 10,000 objects. As GitHub's GraphQL API does,
:func:`node_count` multiplies the page sizes down each path and adds them up: a field with a ``first`` or ``last``
argument (a literal or a variable) asks for that many objects for each object above it; a connection asked for
without one, for ``DEFAULT_PAGE`` (the largest page a connection serves, 100). Other lists (a prediction's
probabilities, an example's model predictions) are bounded by the data, not the caller, and count as one.

:class:`QueryCost` refuses an operation over the limit (``graphql_max_nodes``) with one error, code
``QUERY_TOO_COSTLY``, that gives the count and the limit; nothing runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
    get_named_type,
)
from graphql.execution import ExecutionResult as GraphQLExecutionResult
from strawberry.extensions import SchemaExtension

CODE = "QUERY_TOO_COSTLY"
DEFAULT_PAGE = 100


def _size(node: FieldNode, variables: Mapping[str, Any]) -> int | None:
    """The page size a field asks for (``first`` or ``last``), or None when it names none."""
    for argument in node.arguments or ():
        if argument.name.value not in ("first", "last"):
            continue
        value = argument.value
        if isinstance(value, IntValueNode):
            return max(0, int(value.value))
        if isinstance(value, VariableNode):
            given = variables.get(value.name.value)
            if isinstance(given, int) and not isinstance(given, bool):
                return max(0, given)
    return None


def node_count(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: Mapping[str, FragmentDefinitionNode],
    variables: Mapping[str, Any] | None = None,
) -> int:
    """The most objects ``operation`` can ask for (see the module docstring)."""
    root = {
        "query": schema.query_type,
        "mutation": schema.mutation_type,
        "subscription": schema.subscription_type,
    }[operation.operation.value]
    values = variables or {}

    def walk(selection_set: SelectionSetNode, parent: Any, multiplier: int, spread: frozenset[str]) -> int:
        total = 0
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                fields = (
                    getattr(parent, "fields", None)
                    if isinstance(parent, GraphQLObjectType | GraphQLInterfaceType)
                    else None
                )
                field = fields.get(selection.name.value) if fields else None
                if field is None or selection.selection_set is None:
                    continue
                named = get_named_type(field.type)
                size = _size(selection, values)
                if size is None and named.name.endswith("Connection"):
                    size = DEFAULT_PAGE
                below = multiplier
                if size is not None:
                    below = multiplier * size
                    total += below
                total += walk(selection.selection_set, named, below, spread)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                target = schema.get_type(condition.name.value) if condition is not None else parent
                total += walk(selection.selection_set, target, multiplier, spread)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = fragments.get(name)
                if fragment is None or name in spread:  # validation refuses cycles; never loop here
                    continue
                target = schema.get_type(fragment.type_condition.name.value)
                total += walk(fragment.selection_set, target, multiplier, spread | {name})
        return total

    return walk(operation.selection_set, root, 1, frozenset())


class QueryCost(SchemaExtension):
    """Refuse operations that ask for more than ``max_nodes`` objects (see the module docstring)."""

    def __init__(self, max_nodes: int):
        self.max_nodes = max_nodes

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        if document is not None and self.max_nodes > 0:
            fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
            operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
            chosen = [
                o
                for o in operations
                if context.operation_name is None or (o.name is not None and o.name.value == context.operation_name)
            ]
            schema = context.schema._schema
            for operation in chosen[:1]:
                count = node_count(schema, operation, fragments, context.variables)
                if count > self.max_nodes:
                    context.result = GraphQLExecutionResult(
                        data=None,
                        errors=[
                            GraphQLError(
                                f"This operation can ask for {count} objects, more than the {self.max_nodes} one "
                                "request may: ask for smaller pages (first/last) or fewer nested lists",
                                extensions={"code": CODE, "cost": count, "limit": self.max_nodes},
                            )
                        ],
                    )
        yield
