"""Every part of the public schema is described: types, fields, arguments, input fields and enum values. A frontend
developer reads the contract in GraphiQL or a generated client; an undescribed field is a question they must ask."""

from __future__ import annotations

from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
)

from dynaforge.api.schema import build_schema


def undescribed(schema: GraphQLSchema) -> list[str]:
    """Every schema coordinate (``Type``, ``Type.field``, ``Type.field(arg:)``, ``Enum.VALUE``) with no description."""
    missing = []
    for name, kind in sorted(schema.type_map.items()):
        if name.startswith("__"):
            continue
        if not (kind.description or "").strip():
            missing.append(name)
        if isinstance(kind, GraphQLObjectType | GraphQLInterfaceType | GraphQLInputObjectType):
            for field_name, field in kind.fields.items():
                if not (field.description or "").strip():
                    missing.append(f"{name}.{field_name}")
                for arg_name, arg in getattr(field, "args", {}).items():
                    if not (arg.description or "").strip():
                        missing.append(f"{name}.{field_name}({arg_name}:)")
        if isinstance(kind, GraphQLEnumType):
            missing.extend(f"{name}.{v}" for v, value in kind.values.items() if not (value.description or "").strip())
    return missing


def test_every_type_field_argument_and_enum_value_is_described():
    missing = undescribed(build_schema()._schema)
    assert not missing, f"{len(missing)} schema coordinates lack a description: {', '.join(missing)}"


def test_descriptions_are_sentences_not_placeholders():
    schema = build_schema()._schema
    short = []
    for name, kind in schema.type_map.items():
        if name.startswith("__"):
            continue
        texts = [(name, kind.description or "")]
        if isinstance(kind, GraphQLObjectType | GraphQLInterfaceType | GraphQLInputObjectType):
            texts += [(f"{name}.{f}", field.description or "") for f, field in kind.fields.items()]
        short += [where for where, text in texts if text and (len(text.split()) < 2 or text.strip().upper() == "TODO")]
    assert not short, f"descriptions too short to say anything: {short}"


def test_no_root_field_that_can_fail_is_non_null():
    """A root query field whose resolver raises a GraphQL error (``errors_as_graphql``: not found, forbidden...) is
    nullable: the error then nulls that field alone, not the whole response (and the screen built on it)."""
    schema = build_schema()
    query = schema.get_type_by_name("Query")
    assert query is not None
    failing_non_null = []
    graphql_fields = schema._schema.query_type.fields  # type: ignore[union-attr]
    for field in query.fields:  # type: ignore[union-attr]
        resolver = field.base_resolver.wrapped_func if field.base_resolver else None
        name = schema.config.name_converter.get_graphql_name(field)
        if getattr(resolver, "raises_errors", False) and isinstance(graphql_fields[name].type, GraphQLNonNull):
            failing_non_null.append(name)
    assert failing_non_null == [], f"non-null root fields that raise errors: {failing_non_null}"
