"""Every part of the public schema is described: types, fields, arguments, input fields and enum values. A frontend
developer reads the contract in GraphiQL or a generated client; an undescribed field is a question they must ask."""

from __future__ import annotations

from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
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
