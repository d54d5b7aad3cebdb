"""The GraphQL executor with a short path for plain leaf fields.

graphql-core resolves every field the same way: it makes a ``Path`` and a ``GraphQLResolveInfo``, looks for
arguments, calls the resolver, checks for an awaitable and completes the value through the type's wrappers. For most
fields of a page (an example's ``id``, ``status``, ``createdAt``, a probability's ``label`` and ``probability``) that
is all ceremony around reading one attribute: Strawberry resolves such a "basic" field (no resolver, no extension,
no argument) with ``getattr`` and never looks at the info. On a page of 50 examples those fields are about four in
five of the 900 the executor runs, and the ceremony was most of the page's CPU.

:class:`ExecutionContext` gives those fields a short path: read the attribute, coerce it with the scalar's or
enum's ``coerce_output_value``, done. Anything unusual (null in a non-null field, an exception, an awaitable, a
value the type refuses) goes through graphql-core's own ``execute_field``, which raises the error it always raised,
at the same place in the response. Fields with a resolver, arguments or extensions, lists, objects, ``__typename``
and every field under resolver middleware always take graphql-core's path. The response is the same either way,
field for field and in the same order; the tests of the whole API run through this executor.

``execute_fields`` follows graphql-core 3.3's own (the version is pinned in ``pyproject.toml``).
"""

from __future__ import annotations

from datetime import date, datetime
from enum import Enum
from typing import Any

from graphql import (
    GraphQLField,
    GraphQLLeafType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    Undefined,
    is_leaf_type,
)
from graphql.execution.executor import to_nodes
from graphql.pyutils import Path
from graphql.pyutils.gather_with_cancel import gather_with_cancel
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

BACKREF = "strawberry-definition"  # where Strawberry keeps a GraphQL field's own definition (its extensions key)

# Types whose values are never awaitable: the short path needs no is_awaitable check for them.
_PLAIN = frozenset({str, int, float, bool, dict, list, datetime, date})


class _Plan:
    """How one field of one type is resolved: the short path (``leaf`` set) or graphql-core's (``leaf`` None)."""

    __slots__ = (
        "attribute",
        "field",
        "field_type",
        "getter",
        "item_type",
        "leaf",
        "method",
        "non_null",
        "object",
        "objects",
    )

    def __init__(self, field: GraphQLField | None, info_class: Any = None):
        self.field = field  # kept so that a reused id() can never match another field (see _plans)
        self.method: Any = None  # a (self, info) resolver, called without Strawberry's argument machinery
        self.leaf: GraphQLLeafType | None = None
        self.object: GraphQLObjectType | None = None
        self.objects: GraphQLObjectType | None = None  # a list of these, each non-null
        self.item_type: Any = None
        self.non_null = False
        self.field_type: Any = None
        self.getter: Any = None
        self.attribute = ""
        definition = None if field is None else (field.extensions or {}).get(BACKREF)
        if field is not None and definition is not None and info_class is not None:
            self.method = _method(field, definition, info_class)
        if (
            field is None
            or definition is None
            or not getattr(definition, "is_basic_field", False)  # no resolver, no extension
            or not getattr(field.resolve, "_is_default", False)  # Strawberry's own resolver for it
            or field.args
        ):
            return
        self.field_type = field_type = field.type
        if isinstance(field_type, GraphQLNonNull):
            self.non_null, field_type = True, field_type.of_type
        # What Strawberry's basic resolver calls: the schema's default resolver (getattr) on the Python name.
        self.getter, self.attribute = definition.default_resolver, definition.python_name
        if is_leaf_type(field_type):
            self.leaf = field_type
        elif isinstance(field_type, GraphQLObjectType) and _plain_type_check(field_type):
            self.object = field_type
        elif isinstance(field_type, GraphQLList) and isinstance(field_type.of_type, GraphQLNonNull):
            item = field_type.of_type.of_type
            if isinstance(item, GraphQLObjectType) and _plain_type_check(item):
                self.objects, self.item_type = item, field_type.of_type


def _method(field: GraphQLField, definition: Any, info_class: Any) -> Any:
    """For a field resolved by a plain method ``(self, info)`` (sync, no argument, no field extension), a resolver
    that calls it as Strawberry's would, without parsing arguments or chaining extensions; None for other fields."""
    resolver = getattr(definition, "base_resolver", None)
    if resolver is None or definition.extensions or field.args or resolver.is_async:
        return None
    parameters = list(resolver.signature.parameters.values())
    if (
        len(parameters) != 2
        or resolver.self_parameter is not parameters[0]
        or resolver.info_parameter is not parameters[1]
        or getattr(field.resolve, "__name__", "") != "_resolver"  # Strawberry's sync resolver for it
    ):
        return None
    function = resolver.wrapped_func

    def call(source: Any, info: Any) -> Any:
        return function(source, info_class(_raw_info=info, _field=definition))

    return call


def _plain_type_check(object_type: GraphQLObjectType) -> bool:
    """Whether a type's ``is_type_of`` can be called without a resolve info: none at all, or the one Strawberry
    generates for the implementers of an interface (an ``isinstance`` check that ignores the info)."""
    check = object_type.is_type_of
    return check is None or getattr(check, "__qualname__", "").endswith("_get_is_type_of.<locals>.is_type_of")


_PLANS: dict[int, tuple[GraphQLObjectType, dict[str, _Plan]]] = {}


def _info_class(schema: Any) -> Any:
    """The Strawberry schema's ``Info`` class, or None where resolvers must go through Strawberry (a schema with
    exception handlers that turn errors into results)."""
    strawberry_schema = (schema.extensions or {}).get(BACKREF)
    if strawberry_schema is None or bool(getattr(strawberry_schema.schema_converter, "_exception_handler_specs", None)):
        return None
    return strawberry_schema.config.info_class


def _plans(parent_type: GraphQLObjectType) -> dict[str, _Plan]:
    """The plans of a type's fields, by field name, filled as fields are asked for."""
    entry = _PLANS.get(id(parent_type))
    if entry is None or entry[0] is not parent_type:
        entry = _PLANS[id(parent_type)] = (parent_type, {})
    return entry[1]


class ExecutionContext(StrawberryGraphQLCoreExecutionContext):
    """Strawberry's execution context, with the short path for plain leaf fields (see the module docstring)."""

    def execute_fields(
        self,
        parent_type: GraphQLObjectType,
        source_value: Any,
        path: Path | None,
        grouped_field_set: Any,
        position_context: Any,
    ) -> Any:
        middleware = self.middleware_manager
        if middleware is not None and middleware.middlewares:  # Strawberry passes an empty manager
            return super().execute_fields(parent_type, source_value, path, grouped_field_set, position_context)
        plans = _plans(parent_type)
        results: dict[str, Any] = {}
        is_awaitable = self.is_awaitable
        awaitable_fields: list[str] = []
        try:
            for response_name, field_details_list in grouped_field_set.items():
                node = field_details_list[0].node
                plan = plans.get(node.name.value)
                if plan is None:
                    field = self.schema.get_field(parent_type, node.name.value)
                    plan = plans[node.name.value] = _Plan(field, _info_class(self.schema))
                leaf = plan.leaf
                if leaf is not None and not node.arguments:
                    try:
                        value = plan.getter(source_value, plan.attribute)
                        if value is None:
                            if not plan.non_null:
                                results[response_name] = None
                                continue
                        elif type(value) in _PLAIN or isinstance(value, Enum) or not is_awaitable(value):
                            coerced = leaf.coerce_output_value(value)
                            if coerced is not None and coerced is not Undefined:
                                results[response_name] = coerced
                                continue
                    except Exception:  # noqa: S110 - graphql-core's path below raises it, in place
                        pass
                elif (plan.object is not None or plan.objects is not None) and not node.arguments:
                    short = self._object_field if plan.object is not None else self._list_field
                    done, result = short(
                        plan, source_value, field_details_list, path, response_name, parent_type, position_context
                    )
                    if done:
                        if result is not None and is_awaitable(result):
                            awaitable_fields.append(response_name)
                        results[response_name] = result
                        continue
                if plan.method is not None and not node.arguments:
                    result = self._method_field(
                        plan,
                        parent_type,
                        source_value,
                        field_details_list,
                        Path(path, response_name, parent_type.name),
                        position_context,
                    )
                else:
                    result = self.execute_field(
                        parent_type,
                        source_value,
                        field_details_list,
                        Path(path, response_name, parent_type.name),
                        position_context,
                    )
                if result is not Undefined:
                    results[response_name] = result
                    if is_awaitable(result):
                        awaitable_fields.append(response_name)
        except Exception:
            if awaitable_fields:  # settle the awaitables of other fields, as graphql-core does
                self.settle_in_background([results[field] for field in awaitable_fields])
            raise
        if not awaitable_fields:
            return results

        async def get_results() -> dict[str, Any]:  # as graphql-core's
            if len(awaitable_fields) == 1:
                field = awaitable_fields[0]
                results[field] = await results[field]
            else:
                awaited = await gather_with_cancel(*(results[field] for field in awaitable_fields))
                results.update(zip(awaitable_fields, awaited, strict=True))
            return results

        return get_results()

    def _object_field(
        self,
        plan: _Plan,
        source: Any,
        field_details_list: Any,
        path: Path | None,
        response_name: str,
        parent_type: GraphQLObjectType,
        position_context: Any,
    ) -> tuple[bool, Any]:
        """A plain field whose value is an object: its sub-selection executed straight away. ``(False, None)`` when
        the value is anything unusual (an exception reading it, null in a non-null field, an awaitable, the wrong
        type), for graphql-core's path to handle; errors in the sub-selection are handled as graphql-core does."""
        try:
            value = plan.getter(source, plan.attribute)
        except Exception:
            return False, None
        if value is None:
            return (True, None) if not plan.non_null else (False, None)
        object_type = plan.object
        assert object_type is not None
        check: Any = (
            object_type.is_type_of
        )  # Strawberry's own check, which never reads the info (see _plain_type_check)
        if self.is_awaitable(value) or (check is not None and not check(value, None)):
            return False, None
        field_path = Path(path, response_name, parent_type.name)
        try:
            completed = self.collect_and_execute_subfields(
                object_type, field_details_list, field_path, value, position_context
            )
        except Exception as raw_error:
            self.handle_field_error(raw_error, plan.field_type, field_details_list, field_path)
            return True, None
        if not self.is_awaitable(completed):
            return True, completed
        return True, self._guarded(completed, plan.field_type, field_details_list, field_path)

    def _list_field(
        self,
        plan: _Plan,
        source: Any,
        field_details_list: Any,
        path: Path | None,
        response_name: str,
        parent_type: GraphQLObjectType,
        position_context: Any,
    ) -> tuple[bool, Any]:
        """A plain field whose value is a list of objects: each item's sub-selection executed straight away, as
        graphql-core's ``complete_iterable_value`` does. ``(False, None)`` for graphql-core's path when the value is
        unusual (not a list, a null or awaitable item, an item of the wrong type) or the field asks for ``@stream``."""
        if field_details_list[0].node.directives:
            return False, None
        try:
            value = plan.getter(source, plan.attribute)
        except Exception:
            return False, None
        if value is None:
            return (True, None) if not plan.non_null else (False, None)
        object_type = plan.objects
        assert object_type is not None
        check: Any = object_type.is_type_of  # as in _object_field
        is_awaitable = self.is_awaitable
        if not isinstance(value, (list, tuple)) or any(
            item is None or is_awaitable(item) or (check is not None and not check(item, None)) for item in value
        ):
            return False, None
        field_path = Path(path, response_name, parent_type.name)
        completed: list[Any] = []
        awaitable_indices: list[int] = []
        try:
            for index, item in enumerate(value):
                item_path = field_path.add_key(index, None)
                try:
                    done = self.collect_and_execute_subfields(
                        object_type, field_details_list, item_path, item, position_context
                    )
                except Exception as raw_error:
                    self.handle_field_error(raw_error, plan.item_type, field_details_list, item_path)
                    done = None
                if done is not None and is_awaitable(done):
                    done = self._guarded(done, plan.item_type, field_details_list, item_path)
                    awaitable_indices.append(index)
                completed.append(done)
        except Exception as raw_error:
            if awaitable_indices:
                self.settle_in_background([completed[index] for index in awaitable_indices])
            self.handle_field_error(raw_error, plan.field_type, field_details_list, field_path)
            return True, None
        if not awaitable_indices:
            return True, completed

        async def get_completed() -> Any:
            try:
                awaited = await gather_with_cancel(*(completed[index] for index in awaitable_indices))
            except Exception as raw_error:
                self.handle_field_error(raw_error, plan.field_type, field_details_list, field_path)
                return None
            for index, item_result in zip(awaitable_indices, awaited, strict=True):
                completed[index] = item_result
            return completed

        return True, get_completed()

    def _guarded(self, awaitable: Any, return_type: Any, field_details_list: Any, path: Path) -> Any:
        """``awaitable``'s value; an error in it handled as the error of the field at ``path`` (graphql-core's
        ``await_completed``)."""

        async def await_completed() -> Any:
            try:
                return await awaitable
            except Exception as raw_error:
                self.handle_field_error(raw_error, return_type, field_details_list, path)
                return None

        return await_completed()

    def _method_field(
        self,
        plan: _Plan,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: Any,
        path: Path,
        position_context: Any,
    ) -> Any:
        """graphql-core's ``execute_field`` for a field resolved by a plain method (see ``_method``)."""
        field = plan.field
        assert field is not None
        return_type = field.type
        info = self.build_resolve_info(field, to_nodes(field_details_list), parent_type, path)
        try:
            result = plan.method(source, info)
            if self.is_awaitable(result):
                return self.complete_awaitable_value(
                    return_type, field_details_list, info, path, result, position_context
                )
            completed = self.complete_value(return_type, field_details_list, info, path, result, position_context)
            if self.is_awaitable(completed):
                return self._guarded(completed, return_type, field_details_list, path)
        except Exception as raw_error:
            self.handle_field_error(raw_error, return_type, field_details_list, path)
            return None
        return completed
