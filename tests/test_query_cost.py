"""The query cost limit (dynaforge.api.cost): how lists, ids and expensive fields are counted, that the sizes and
prices it declares name real fields, that every operation the web app and the Python client ship stays under the
default limit, and that a costly request is refused before anything runs, over HTTP and for subscriptions."""

from __future__ import annotations

import re
import time
from pathlib import Path

from graphql import (
    FragmentDefinitionNode,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    OperationDefinitionNode,
    get_named_type,
    is_composite_type,
    parse,
)
from support import gid

from dynaforge.api.cost import (
    CODE,
    COUNT_PRICE,
    DEFAULT_PAGE,
    LIST_SIZES,
    PRICES,
    cached_cost,
    is_connection,
    operation_cost,
)
from dynaforge.api.nodes import MAX_NODES
from dynaforge.api.schema import build_schema
from dynaforge.services import stats as stats_service
from dynaforge.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = build_schema()._schema
DEFAULT_LIMIT = Settings.model_fields["graphql_max_nodes"].default

# The finding of the security review: one anonymous request, 15 aliases of nodes(ids:) with 100 times one Task's
# id, each asking for the task's statistics, took 28 s.
STATS = "... on Task { stats { collected vmer } statsBySource { source stats { collected vmer } } }"
ATTACK = "query($ids: [ID!]!) { " + " ".join(f"a{i}: nodes(ids: $ids) {{ {STATS} }}" for i in range(15)) + " }"


def cost(document: str, variables: dict | None = None) -> int:
    parsed = parse(document)
    fragments = {d.name.value: d for d in parsed.definitions if isinstance(d, FragmentDefinitionNode)}
    [operation] = [d for d in parsed.definitions if isinstance(d, OperationDefinitionNode)]
    return operation_cost(SCHEMA, operation, fragments, variables)


def shipped_operations() -> dict[str, tuple[OperationDefinitionNode, dict[str, FragmentDefinitionNode]]]:
    """Every operation the web app (its graphql(`...`) documents) and the Python client (operations/*.graphql)
    ship, by "web:Name" or "python:Name", with the fragments each client defines."""
    sources = {
        "web": [
            m.group(1)
            for path in sorted((ROOT / "web" / "src").rglob("*.ts*"))
            if "gql" not in path.relative_to(ROOT / "web" / "src").parts  # codegen's output, not the sources
            for m in re.finditer(r"graphql\(\s*`([^`]*)`", path.read_text(encoding="utf-8"))
        ],
        "python": [
            p.read_text(encoding="utf-8") for p in sorted((ROOT / "clients/python/operations").glob("*.graphql"))
        ],
    }
    found = {}
    for client, texts in sources.items():
        definitions = [d for text in texts for d in parse(text).definitions]
        fragments = {d.name.value: d for d in definitions if isinstance(d, FragmentDefinitionNode)}
        for d in definitions:
            if isinstance(d, OperationDefinitionNode):
                found[f"{client}:{d.name.value}"] = (d, fragments)
    return found


def test_lists_are_counted_by_what_they_ask_for_and_ids_by_their_number():
    task = "{ id code }"
    # nodes(ids:): one object per id given, repeats included, as a literal or a variable; unknown: the most it takes
    assert cost(f'{{ nodes(ids: ["t", "t", "t"]) {task} }}') == 3
    assert cost(f"query($ids: [ID!]!) {{ nodes(ids: $ids) {task} }}", {"ids": ["t"] * 7}) == 7
    assert cost(f"query($ids: [ID!]!) {{ nodes(ids: $ids) {task} }}") == MAX_NODES
    # the attack: every id runs both statistics of its task
    per_task = 1 + (1 + PRICES["Task.stats"]) + PRICES["Task.statsBySource"] + 3 * (1 + 1)
    assert cost(ATTACK, {"ids": ["t"] * 100}) == 15 * 100 * per_task > DEFAULT_LIMIT
    # node(id:) aliases: one object each, and what each asks for
    nodes = " ".join(f'n{i}: node(id: "t") {{ {STATS} }}' for i in range(15))
    assert cost("{ " + nodes + " }") == 15 * per_task
    # pages multiply what is asked of each row, and an unpaged list counts its declared maximum
    votes = '{ examples(taskCode: "t", first: 100) { totalCount nodes { validations { validator { id } } } } }'
    assert cost(votes) == 100 + COUNT_PRICE + 100 * LIST_SIZES["Example.validations"] * (1 + 1)
    # a connection without first/last: its largest page; its edges and nodes are that page, counted once
    both = '{ models(taskCode: "t") { pageInfo { hasNextPage } edges { node { id task { code } } } nodes { id } } }'
    assert cost(both) == DEFAULT_PAGE + 1 + DEFAULT_PAGE * 1
    assert cost('query($n: Int = 7) { models(taskCode: "t", first: $n) { nodes { id } } }') == 7
    # plain lists: their declared maximum; scalars: nothing
    assert cost("{ tasks { code labels } }") == LIST_SIZES["Query.tasks"]


def test_a_remembered_cost_is_the_count_for_the_variables_it_read():
    """The cost is remembered per document and the values of the variables its count read: the same values (any
    others changing) give the same cost without counting, other values are counted again."""
    document = """query($ids: [ID!]!, $n: Int = 7, $deep: Boolean!, $input: CreateExampleInput!) {
      a: nodes(ids: $ids) { id } models(taskCode: "t", first: $n) { nodes { id task @include(if: $deep) { code } } }
      b: task(code: "t") { code } }"""
    parsed = parse(document)
    [operation] = [d for d in parsed.definitions if isinstance(d, OperationDefinitionNode)]
    counted = []

    def fragments():
        counted.append(1)
        return {}

    cases = [
        {"ids": ["x"] * 3, "deep": True, "input": {"fields": {"text": "one"}}},
        {"ids": ["x"] * 3, "deep": True, "input": {"fields": {"text": "two"}}},  # not read: remembered
        {"ids": ["x"] * 4, "deep": True, "input": {}},
        {"ids": ["x"] * 3, "deep": False, "input": {}},
        {"ids": ["x"] * 3, "n": 2, "deep": True, "input": {}},
        {"ids": ["x"] * 3, "deep": True, "input": {"fields": {"text": "three"}}},  # the first again
    ]
    for variables in cases:
        assert cached_cost(SCHEMA, document, operation, fragments, variables, None) == operation_cost(
            SCHEMA, operation, {}, variables
        )
    assert len(counted) == 4  # the second and the last were remembered


def test_fields_are_counted_once_as_they_run():
    tasks = LIST_SIZES["Query.tasks"]
    # one response key, one resolver call, however many times the document names it
    assert cost("{ tasks { code } tasks { name } ...f } fragment f on Query { tasks { id } }") == tasks
    assert cost("{ tasks @skip(if: true) { code } a: tasks @include(if: true) { code } }") == tasks
    assert cost("query($on: Boolean!) { tasks @include(if: $on) { code } }", {"on": False}) == 0
    # an interface or union: what its costliest type asks for, not the sum of every fragment
    either = """{ node(id: "x") { ... on Task { stats { vmer } } ... on Round { statsBySource { source } } } }"""
    assert cost(either) == 1 + max(1 + PRICES["Task.stats"], PRICES["Round.statsBySource"] + 3)
    # a subscription's selection set is what each event asks for
    live = 'subscription { exampleCreated(taskCode: "t") { ... on Example { round { statsBySource { source } } } } }'
    assert cost(live) == 1 + 1 + PRICES["Round.statsBySource"] + 3
    # fragments spread twice in each other are counted once per distinct selection: no walk over 2^60 paths
    chain = "".join(
        f"fragment f{i} on Dataset {{ a: parent {{ ...f{i + 1} }} b: parent {{ ...f{i + 1} }} }} " for i in range(60)
    )
    started = time.perf_counter()
    deep = cost('{ datasets(taskCode: "t", first: 1) { nodes { ...f0 } } } ' + chain + "fragment f60 on Dataset { id }")
    assert deep == 1 + sum(2**i for i in range(1, 61)) and time.perf_counter() - started < 1


def test_declared_sizes_and_prices_name_real_fields():
    """Every price and every list size names a field of the schema, and every list of objects that takes no page size
    has a declared size: a renamed or added field cannot fall out of the count."""
    fields = {
        f"{name}.{field_name}": field
        for name, type_ in SCHEMA.type_map.items()
        if isinstance(type_, GraphQLObjectType) and not name.startswith("__")
        for field_name, field in type_.fields.items()
    }
    assert sorted(set(PRICES) - set(fields)) == []
    assert sorted(set(LIST_SIZES) - set(fields)) == []

    def is_object_list(field) -> bool:
        type_ = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
        return isinstance(type_, GraphQLList) and is_composite_type(get_named_type(type_))

    unpaged = {
        key
        for key, field in fields.items()
        if is_object_list(field)
        and not is_connection(SCHEMA.type_map[key.split(".")[0]])  # a connection's edges and nodes are its page
        and key != "Query.nodes"  # sized by its ids
    }
    assert sorted(unpaged - set(LIST_SIZES)) == [], "lists without a size in dynaforge.api.cost.LIST_SIZES"
    assert sorted(set(LIST_SIZES) - unpaged) == [], "sizes declared for fields that are not unpaged lists"
    assert all(size > 0 for size in LIST_SIZES.values()) and all(price > 1 for price in PRICES.values())


def test_every_shipped_operation_costs_at_most_the_default_limit():
    """The screens of the web app and the Python client's operations, with the largest pages they may ask for (a
    page size left to a variable counts as the largest page), stay under the default limit."""
    operations = shipped_operations()
    assert sum(k.startswith("web:") for k in operations) >= 50  # found: the test would pass on nothing otherwise
    assert sum(k.startswith("python:") for k in operations) >= 20
    costs = {name: operation_cost(SCHEMA, op, fragments, {}) for name, (op, fragments) in operations.items()}
    assert {name: c for name, c in costs.items() if c > DEFAULT_LIMIT} == {}


async def test_many_ids_asking_for_statistics_are_refused_before_anything_runs(gql, platform, monkeypatch):
    """The review's request, sent anonymously over HTTP: refused with the cost and the limit, before any statistic
    is computed; a screen's query that asks for statistics, and a few ids, still run."""
    calls = []
    for name in ("task_stats", "by_source"):
        real = getattr(stats_service, name)

        async def counted(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return await _real(*args, **kwargs)

        monkeypatch.setattr(stats_service, name, counted)
    assert platform.settings.graphql_max_nodes == DEFAULT_LIMIT
    ids = [gid("Task", "toy")] * 100
    started = time.perf_counter()
    body = await gql(ATTACK, {"ids": ids}, token=None, expect_errors=True)
    assert time.perf_counter() - started < 2
    [error] = body["errors"]
    assert body.get("data") is None and error["extensions"]["code"] == CODE, body
    assert error["extensions"]["cost"] > error["extensions"]["limit"] == DEFAULT_LIMIT
    assert "fewer ids" in error["message"]
    assert calls == []

    few = await gql(ATTACK, {"ids": ids[:2]}, token=None)  # 15 aliases x 2 ids: under the limit, and it runs
    assert few["a0"][0]["stats"]["collected"] == 0 and calls.count("task_stats") == 30
    screen = next(
        m.group(1)
        for path in (ROOT / "web" / "src" / "screens").rglob("*.tsx")
        for m in re.finditer(r"graphql\(\s*`([^`]*)`", path.read_text(encoding="utf-8"))
        if "query RoundLeaderboard" in m.group(1)
    )
    board = await gql(screen, {"code": "toy", "first": 100}, token=None)
    assert [s["source"] for s in board["round"]["statsBySource"]] == ["HUMAN", "ASSISTED", "MACHINE"]


async def test_a_costly_subscription_is_refused_before_it_starts():
    schema = build_schema(Settings(load_plugins="", graphql_max_nodes=100))
    live = 'subscription { exampleCreated(taskCode: "toy") { ... on Example { round { statsBySource { source } } } } }'
    stream = await schema.subscribe(live)
    first = await anext(aiter(stream))
    await stream.aclose()
    [error] = first.errors
    assert first.data is None and error.extensions == {"code": CODE, "cost": 205, "limit": 100}
