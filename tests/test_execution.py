"""The executor's short paths (dynaforge.api.execution) answer exactly as Strawberry's stock executor does: the same
data, in the same order, and the same errors at the same paths, for plain fields, objects, lists, methods, nulls,
exceptions, awaitables, fragments, aliases and directives."""

from __future__ import annotations

import asyncio
import enum
import json
from typing import Any

import pytest
import strawberry

from dynaforge.api.execution import ExecutionContext


@strawberry.enum
class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@strawberry.type
class Leaf:
    name: str
    score: float
    maybe: int | None = None

    @strawberry.field
    def doubled(self, info: strawberry.Info) -> float:
        return self.score * 2

    @strawberry.field
    def waits(self, info: strawberry.Info) -> str:
        async def later() -> str:
            await asyncio.sleep(0)
            return self.name.upper()

        return later()  # type: ignore[return-value]  # an awaitable from a sync method, as the API's resolvers do

    @strawberry.field
    def fails(self, info: strawberry.Info) -> str | None:
        raise ValueError(f"no luck for {self.name}")

    @strawberry.field
    async def fails_later(self) -> str:
        raise ValueError(f"not now, {self.name}")


class Broken:
    """Reading ``name`` raises: a plain field whose attribute fails."""

    score = 1.0
    maybe = None

    @property
    def name(self) -> str:
        raise RuntimeError("the attribute broke")


@strawberry.type
class Holder:
    title: str
    colour: Colour
    leaf: Leaf | None
    required_leaf: Leaf
    leaves: list[Leaf]
    optional_leaves: list[Leaf] | None
    nullable_items: list[Leaf | None]
    required_title: str

    @strawberry.field
    def context_name(self, info: strawberry.Info) -> str:
        return info.context["name"]

    @strawberry.field
    def greeting(self, info: strawberry.Info, who: str = "you") -> str:
        return f"hello {who}"


def holder(**changes: Any) -> Holder:
    values: dict[str, Any] = {
        "title": "first",
        "colour": Colour.BLUE,
        "leaf": Leaf(name="a", score=0.5),
        "required_leaf": Leaf(name="b", score=1.5, maybe=3),
        "leaves": [Leaf(name="c", score=0.25), Leaf(name="d", score=0.75)],
        "optional_leaves": None,
        "nullable_items": [Leaf(name="e", score=1.0), None],
        "required_title": "needed",
    }
    values.update(changes)
    return Holder(**values)


CASES: dict[str, Any] = {
    "plain": holder(),
    "null_object": holder(leaf=None),
    "null_required_leaf": holder(required_title=None),  # null in a non-null leaf: an error at its path
    "broken_attribute": holder(leaf=Broken()),
    "broken_in_list": holder(leaves=[Leaf(name="f", score=1.0), Broken()]),
    "null_in_list": holder(leaves=[Leaf(name="g", score=1.0), None]),
    "wrong_type": holder(colour="green"),
    "empty_list": holder(leaves=[], optional_leaves=[Leaf(name="h", score=2.0)]),
}


@strawberry.type
class Query:
    @strawberry.field
    def holder(self, case: str) -> Holder | None:
        return CASES[case]

    @strawberry.field
    def holders(self) -> list[Holder]:
        return [CASES["plain"], CASES["null_object"]]


DOCUMENTS = [
    """query($case: String!) { holder(case: $case) { title colour requiredTitle contextName greeting
       greeting2: greeting(who: "there")
       leaf { name score maybe doubled waits }
       requiredLeaf { name maybe doubled }
       leaves { name score doubled waits }
       optionalLeaves { name }
       nullableItems { name } } }""",
    """query($case: String!) { holder(case: $case) { leaves { fails name } leaf { failsLater } } }""",
    """query($case: String!) { holder(case: $case) { leaves { failsLater } } }""",
    """query($case: String!, $yes: Boolean!) { holder(case: $case) {
       ... on Holder { t: title, ...more }
       leaf @include(if: $yes) { name }
       leaves @skip(if: $yes) { name } __typename } }
       fragment more on Holder { requiredLeaf { __typename name } colour }""",
    """{ holders { title leaf { name } leaves { name score } } }""",
]


def run(schema: strawberry.Schema, document: str, case: str) -> Any:
    result = asyncio.run(
        schema.execute(document, variable_values={"case": case, "yes": True}, context_value={"name": "ctx"})
    )
    errors = sorted((e.message, tuple(e.path or ())) for e in result.errors or ())
    return json.dumps(result.data), errors  # the text: key order is part of the answer


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("document", range(len(DOCUMENTS)))
def test_the_short_paths_answer_as_strawberry_does(case: str, document: int) -> None:
    stock = strawberry.Schema(query=Query)
    short = strawberry.Schema(query=Query, execution_context_class=ExecutionContext)
    assert run(short, DOCUMENTS[document], case) == run(stock, DOCUMENTS[document], case)


def test_the_cases_reach_errors_and_nulls() -> None:
    """The comparison above is only worth something if the cases make errors: check that they do."""
    short = strawberry.Schema(query=Query, execution_context_class=ExecutionContext)
    data, errors = run(short, DOCUMENTS[0], "broken_in_list")
    assert json.loads(data) == {"holder": None}  # a non-null list item failed: the error reaches the nullable root
    assert errors == [("the attribute broke", ("holder", "leaves", 1, "name"))]
    data, errors = run(short, DOCUMENTS[1], "plain")
    assert {path for _, path in errors} == {
        ("holder", "leaf", "failsLater"),
        ("holder", "leaves", 0, "fails"),
        ("holder", "leaves", 1, "fails"),
    }
    assert json.loads(data)["holder"]["leaves"] == [{"fails": None, "name": "c"}, {"fails": None, "name": "d"}]


def test_the_api_schema_runs_on_the_short_path_executor() -> None:
    from dynaforge.api.schema import build_schema

    assert build_schema().execution_context_class is ExecutionContext
