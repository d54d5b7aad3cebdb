"""Gold targets of SCORING and HIDDEN data sets never leave the server except to the task's owners and admins.

The test walks every field of the Query type (so a new query is checked the day it is added), with every id it
knows for each argument and a selection of every field down to a few levels, as an anonymous caller and as a
signed-in user who owns nothing; then the HTTP export. Each scoring or hidden item carries a sentinel text; no
answer may hold a sentinel text next to a gold label. Owners, as a control, do see them.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from graphql import GraphQLEnumType, GraphQLList, GraphQLNonNull, GraphQLScalarType, GraphQLUnionType
from graphql.pyutils import Undefined
from support import gid, register_user

from dynaforge.api.schema import build_schema
from dynaforge.db.models import DatasetAccess
from dynaforge.services import auth, datasets, examples, submissions, tasks, validation
from dynaforge.services.actor import Actor

SENTINEL = "sentinel"
DEPTH = 4


def _unwrap(t):
    while isinstance(t, (GraphQLNonNull, GraphQLList)):
        t = t.of_type
    return t


def _selection(t, depth: int) -> str:
    t = _unwrap(t)
    if isinstance(t, (GraphQLScalarType, GraphQLEnumType)):
        return ""
    if depth == 0:
        return "{ __typename }"
    if isinstance(t, GraphQLUnionType):
        parts = [f"... on {member.name} {_selection(member, depth - 1) or ''}" for member in t.types]
        return "{ __typename " + " ".join(parts) + " }"
    fields = []
    for name, field in t.fields.items():
        if any(isinstance(a.type, GraphQLNonNull) and a.default_value is Undefined for a in field.args.values()):
            continue  # nested fields that need arguments (e.g. Task.round) are reached through their own query
        inner = _selection(field.type, depth - 1)
        fields.append(f"{name} {inner}")
    return "{ __typename " + " ".join(fields) + " }"


def _values(name: str, type_name: str, ids: dict[str, list[str]]) -> list[Any]:
    """Candidate values for a required argument; an argument nobody taught this test fails it."""
    if type_name == "String":
        return ["toy"] if name in ("taskCode", "code") else [SENTINEL]
    if type_name == "ID":
        return [i for group in ids.values() for i in group]
    if type_name == "Int":
        return [1]
    if type_name == "Boolean":
        return [False, True]
    raise AssertionError(f"teach this test a value for the required argument {name}: {type_name}")


def _leaks(value: Any) -> list[Any]:
    """Objects holding a sentinel text together with its gold label."""
    found = []
    if isinstance(value, dict):
        text = value.get("text")
        if isinstance(text, str) and text.startswith(SENTINEL) and "label" in value:
            found.append(value)
        for v in value.values():
            found.extend(_leaks(v))
    elif isinstance(value, list):
        for v in value:
            found.extend(_leaks(v))
    elif isinstance(value, str) and SENTINEL in value and value.lstrip().startswith(("{", "[")):
        with contextlib.suppress(ValueError):
            found.extend(_leaks(json.loads(value)))
    elif isinstance(value, str) and SENTINEL in value and "\n" in value:  # CSV and the like
        found.extend(line for line in value.splitlines() if SENTINEL in line and ("good" in line or "bad" in line))
    return found


@pytest.fixture
async def secrets_on_server(platform):
    platform.settings.examples_per_minute = 1000
    owner = await auth.create_user(
        platform, Actor.system(), username="owner9", email="o9@example.org", password="long enough pw"
    )
    owner = Actor(owner.id, owner.username)
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner.user_id)
    author = Actor(
        (
            await auth.create_user(
                platform, Actor.system(), username="author9", email="a9@example.org", password="long enough pw"
            )
        ).id,
        "author9",
    )
    example_ids = []
    for i in range(6):
        outcome = await examples.submit(
            platform, author, task_code="toy", fields={"text": f"{SENTINEL}-{i} good", "label": "bad"}
        )
        await validation.validate(platform, owner, outcome.example.id, "CORRECT")
        example_ids.append(gid("Example", outcome.example.id))
    made = await datasets.build_from_round(platform, owner, "toy", 1, splits=(("test", 1.0, DatasetAccess.SCORING),))
    made += await datasets.create_dataset(
        platform,
        owner,
        "toy",
        "held-back",
        [("row 1", {"text": f"{SENTINEL}-hidden good", "label": "good"})],
        access=DatasetAccess.HIDDEN,
    )
    builder = Actor(
        (
            await auth.create_user(
                platform, Actor.system(), username="builder9", email="b9@example.org", password="long enough pw"
            )
        ).id,
        "builder9",
    )
    model, _ = await submissions.submit_model(
        platform,
        builder,
        task_code="toy",
        name="m",
        backend="python",
        config={"callable": "toy_plugin:keyword_model"},
        published=True,
    )
    return {
        "ids": {
            "dataset": [gid("Dataset", d.id) for d in made],
            "example": example_ids,
            "model": [gid("Model", model.id)],
        },
        "owner": owner,
    }


async def _walk(gql, token, ids) -> list[Any]:
    schema = build_schema()._schema
    answers = []
    for name, field in schema.query_type.fields.items():
        required = {
            a: arg
            for a, arg in field.args.items()
            if isinstance(arg.type, GraphQLNonNull) and arg.default_value is Undefined
        }
        combos = [{}]
        for arg_name, arg in required.items():
            type_name = _unwrap(arg.type).name
            combos = [{**c, arg_name: v} for c in combos for v in _values(arg_name, type_name, ids)]
        declared = ", ".join(f"${a}: {str(arg.type)}" for a, arg in required.items())
        passed = ", ".join(f"{a}: ${a}" for a in required)
        selection = _selection(field.type, DEPTH)
        query = f"query{f'({declared})' if declared else ''} {{ {name}{f'({passed})' if passed else ''} {selection} }}"
        for variables in combos:
            body = await gql(query, variables, token=token, expect_errors=True)
            answers.append(body.get("data"))
    return answers


async def test_no_query_or_export_hands_out_scoring_or_hidden_gold(gql, client, platform, secrets_on_server):
    ids = secrets_on_server["ids"]
    stranger, _ = await register_user(gql, "stranger")
    for token in (None, stranger):
        leaks = [leak for answer in await _walk(gql, token, ids) for leak in _leaks(answer)]
        assert leaks == [], f"gold left the server: {leaks[:3]}"
    response = await client.get("/export/toy", headers={"Authorization": f"Bearer {stranger}"})
    assert response.status_code in (200, 404)
    assert SENTINEL not in response.text  # accepted, but frozen into a scoring set: withheld from non-owners

    # the control: the owners do get the gold (so the walk does reach the items)
    _, owner_token = await auth.create_token(platform, secrets_on_server["owner"], name="t")
    owner_leaks = [leak for answer in await _walk(gql, owner_token, ids) for leak in _leaks(answer)]
    assert owner_leaks, "the walk never reached a data set item; the test would prove nothing"
