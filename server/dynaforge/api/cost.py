"""A query cost limit: how much work an operation may ask for, counted before anything runs.

Depth, alias and token limits bound a document's size, not its work: ``models(first: 100) { nodes {
evaluations(first: 100) { nodes { ... } } } }`` is short and asks for 10,000 objects, and ``nodes(ids: [100 times
one Task's id]) { ... on Task { statsBySource { ... } } }`` runs 100 counts over a task's examples. As GitHub's and
Shopify's GraphQL APIs do, :func:`operation_cost` adds up what the operation can ask for, multiplying list sizes down
each path:

* every object costs 1, for each object above it: a field of an object type (or an interface or union) is one
  object; a list of objects is as many as its size, and that size multiplies everything asked below it;
* a list's size is what it asks for, or else the most it can hold: a connection's ``first`` or ``last`` (a literal or
  a variable; without one ``DEFAULT_PAGE``, the largest page a connection serves by default), counted once at the
  connection (its ``edges`` and ``nodes`` are that page); ``nodes(ids:)``'s number of ids, repeats included
  (without a readable list ``MAX_NODES``); any other list's maximum in ``LIST_SIZES`` (the cap the services hold it
  to where there is one, else a conservative estimate);
* a field in ``PRICES`` (statistics, leaderboards, the round x model matrix: each call aggregates over many rows)
  costs its price each time it runs, on top of its objects, and so does a connection's ``totalCount``
  (``COUNT_PRICE``, one COUNT over the list). A price is about the time a call takes, in objects' worth: an object
  is some 20 us of work, an aggregate 2 ms or more, growing with the rows it reads.

Scalars cost nothing. Fields merge as they do when the operation runs (one response key, one resolver call; a
fragment is counted once where it is spread, ``@skip``/``@include`` are obeyed), and a field of an interface or union
type costs what its costliest possible type asks for. A subscription is counted like a query: its selection set is
what each event asks for.

:class:`QueryCost` refuses an operation that costs more than the limit (``graphql_max_nodes``) as validation refuses
a document, with one error, code ``QUERY_TOO_COSTLY``, that gives the cost and the limit: nothing runs, over HTTP
and websockets alike.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from graphql import (
    BooleanValueNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    GraphQLUnionType,
    InlineFragmentNode,
    IntValueNode,
    ListValueNode,
    OperationDefinitionNode,
    SelectionNode,
    SelectionSetNode,
    ValueNode,
    VariableNode,
    get_named_type,
    get_operation_ast,
    validate,
)
from strawberry.extensions import SchemaExtension

from dynaforge.api.enums import ExampleSource
from dynaforge.api.nodes import MAX_NODES
from dynaforge.services.examples import STUCK_LISTED
from dynaforge.services.tasks import MAX_ENSEMBLE, MAX_QUORUM
from dynaforge.services.training import MAX_DATASETS
from dynaforge.tasks.base import MAX_TUNING_TRIALS

CODE = "QUERY_TOO_COSTLY"
DEFAULT_PAGE = 100
# Lists bounded by the data, not by a rule: a generous estimate of what a deployment holds.
MANY = 100
# Lists bounded by what is installed or what a task declares (plugins, fields, labels, perturbations...).
DECLARED = 20
# An evaluation's or a board's metrics: the task's metrics with the figures every model gets (throughput, memory,
# robustness, fairness).
METRICS = 10
# The task's own metrics (a slice group's, a perturbed copy's, a slice's gaps): a few of those installed.
TASK_METRICS = 5

# The most objects each list that takes no page size can hold, per object above it. Every such list in the schema is
# named here (tests/test_query_cost.py checks both ways): a list added without a size fails that test (and would
# count as MANY).
LIST_SIZES: dict[str, int] = {
    "Query.tasks": 50,  # installed or approved by admins: tens at most
    "Query.plugins": DECLARED,
    "Query.backends": DECLARED,
    "Query.metrics": DECLARED,
    "Query.perturbations": DECLARED,
    "Query.exportFormats": DECLARED,
    "Query.adversaries": DECLARED,
    "Query.crowdPlatforms": DECLARED,
    "Task.crowdStudies": 20,  # an owner runs a few studies per task
    "CrowdStudy.participants": 1000,  # a study recruits hundreds at most
    "Query.webhooks": MANY,  # 10 per user and task, every user's for owners
    "Query.trainingRecipes": DECLARED,
    "Query.registeredModels": MANY,
    "Task.adversaries": DECLARED,
    "Task.webhooks": MANY,
    "Task.trainingRecipes": DECLARED,
    "Task.fields": DECLARED,
    "RegisteredModel.metrics": DECLARED,  # what its recipe reports
    "RegisteredModel.parameters": DECLARED,  # its recipe's hyper-parameters
    "TrainingJob.parameters": DECLARED,
    "TuningTrial.parameters": DECLARED,
    "Tuning.chosenParameters": DECLARED,
    "TrainingData.datasets": DECLARED,  # the data sets a training job was asked to read
    "Task.rounds": MANY,
    "Task.owners": DECLARED,
    "Task.statsBySource": len(ExampleSource),
    "Round.statsBySource": len(ExampleSource),
    "Round.targetModels": MAX_ENSEMBLE,
    "Round.stuckExamples": STUCK_LISTED,  # the oldest ones
    "RoundTargetsQueued.models": MAX_ENSEMBLE,
    "Example.modelPredictions": MAX_ENSEMBLE,
    "Example.validations": 3 * MAX_QUORUM,  # votes stop when one kind reaches the quorum
    "Prediction.probabilities": DECLARED,  # one per label
    "Suggestion.moves": DECLARED,  # one per label
    "EditsSuggested.suggestions": 10,  # suggestEdits' limit: at most 10
    "UserTaskStats.rounds": MANY,
    "Evaluation.metrics": METRICS,
    "Evaluation.privateMetrics": METRICS,
    "Evaluation.perturbations": DECLARED,  # the task's perturbations
    "PerturbationResult.metrics": TASK_METRICS,
    "Evaluation.slices": 5,  # the task's fairness slices
    "Evaluation.unusableReasons": 5,  # the runner keeps the five most frequent
    "SliceResult.groups": 10,  # the values of one field (a phenomenon, a gender...)
    "SliceResult.gaps": TASK_METRICS,
    "SliceGroup.metrics": TASK_METRICS,
    "Leaderboard.metrics": METRICS,
    "Leaderboard.metricWeights": METRICS,
    "Leaderboard.datasetWeights": DECLARED,
    "Leaderboard.rows": MANY,  # every published model
    "Leaderboard.adjacentTests": MANY,  # one per two neighbours
    "LeaderboardRow.metrics": METRICS,
    "LeaderboardRow.gaps": 10,  # one per scoring set the model lacks figures on
    "LeaderboardRow.datasets": DECLARED,  # one per scoring set
    "LeaderboardDatasetValues.values": METRICS,  # one per axis
    "LeaderboardFork.metricWeights": METRICS,
    "LeaderboardFork.datasetWeights": DECLARED,
    "LeaderboardSnapshot.metricWeights": METRICS,
    "LeaderboardSnapshot.datasetWeights": DECLARED,
    "LeaderboardSnapshot.rows": MANY,
    "SnapshotRow.metrics": METRICS,
    "RoundModelMatrix.rows": MANY,  # every evaluated registry entry
    "MatrixRow.cells": DECLARED,  # one per round with a test set
    "TrainingJob.datasets": MAX_DATASETS,
    "Tuning.trials": MAX_TUNING_TRIALS,
    "TrainingRecipe.tuning": DECLARED,
    "TrainingRecipe.parameters": DECLARED,
    "DatasetsCreated.datasets": DECLARED,
    "ExamplesImported.skipped": DECLARED,  # one per reason
    "InvalidInput.fieldErrors": MANY,
    "Round.nearDuplicates": MANY,
    "Tutorial.items": 50,  # services/tutorial.py MAX_ITEMS
    "RoundAnalytics.periods": MANY,  # the periods with something in them
    "RoundAnalytics.annotators": MANY,
    "RoundAnalytics.sources": len(ExampleSource),
    "NearDuplicateCluster.examples": MANY,
    "ValidatorQuality.validators": MANY,  # everyone who voted in the task's crowd
    "ValidatorQuality.rounds": MANY,
}

# What one call of an expensive resolver costs, on top of the objects it returns (see the module docstring). Every
# name is a field of the schema (tests/test_query_cost.py checks).
PRICES: dict[str, int] = {
    "Task.stats": 100,  # sums the counters of every round
    "Task.validatorQuality": 500,  # reads every vote of the task, and alpha per round
    "Task.crowdStudies": 100,  # per study: its participants' examples, votes and payments, grouped
    "Query.crowdParticipation": 20,  # one participant's examples and votes, grouped
    "Round.nearDuplicates": 100,  # reads the round's near-duplicate links
    "Round.analytics": 500,  # reads every example and vote of the round
    "ValidatorWeightsSet.quality": 500,
    "Task.statsBySource": 500,  # counts the examples of every round by source
    "Round.statsBySource": 200,  # counts the round's examples by source
    "Round.leaderboard": 200,  # ranks the round's annotators
    "Query.myStats": 200,  # the caller's counters per round
    "Task.viewerStats": 200,  # the caller's counters per round, per task listed
    "UserTaskStats.remainingToday": 100,  # counts the caller's examples today
    "Query.validationQueueSize": 200,  # counts the queue
    "Task.validationQueueSize": 200,  # counts the queue, per task listed
    "Query.exampleToValidate": 200,  # samples the queue
    "Query.leaderboard": 2000,  # a Dynascore over every published model's evaluations
    "Query.roundModelMatrix": 1000,  # every registry entry against each round's test set
    "Task.leaderboard": 2000,  # the same, per task listed
    "Task.roundModelMatrix": 1000,
    "Task.pairedTest": 3000,  # reads two evaluations' outputs item by item and bootstraps a metric
    "Leaderboard.adjacentTests": 3000,  # reads every ranked model's outputs item by item
}
COUNT_PRICE = 100


def is_connection(type_: Any) -> bool:
    """A Relay connection: its ``edges`` and ``nodes`` are one page."""
    return isinstance(type_, GraphQLObjectType) and "pageInfo" in type_.fields and "edges" in type_.fields


def is_edge(type_: GraphQLObjectType) -> bool:
    """A connection's edge: its ``node`` is a row of the page."""
    return type_.name.endswith("Edge") and "cursor" in type_.fields and "node" in type_.fields


def is_list(type_: GraphQLOutputType) -> bool:
    return isinstance(type_.of_type if isinstance(type_, GraphQLNonNull) else type_, GraphQLList)


class _Counter:
    """The cost of one operation under given variables; each (type, selection sets, page) is counted once."""

    def __init__(
        self,
        schema: GraphQLSchema,
        operation: OperationDefinitionNode,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
    ):
        self.schema = schema
        self.fragments = fragments
        self.variables = variables  # with the operation's defaults (_with_defaults)
        self.memo: dict[tuple[str, tuple[int, ...], int | None], int] = {}

    def value(self, node: ValueNode) -> Any:
        return _literal(node, self.variables)

    def included(self, node: SelectionNode) -> bool:
        """Whether ``@skip``/``@include`` keep the selection (a condition unknown here keeps it)."""
        for directive in node.directives or ():
            name = directive.name.value
            if name not in ("skip", "include"):
                continue
            condition = next((a.value for a in directive.arguments or () if a.name.value == "if"), None)
            value = None if condition is None else self.value(condition)
            if isinstance(value, bool) and value == (name == "skip"):
                return False
        return True

    def applies(self, condition: str | None, runtime: GraphQLObjectType) -> bool:
        if condition is None or condition == runtime.name:
            return True
        target = self.schema.get_type(condition)
        if isinstance(target, GraphQLInterfaceType | GraphQLUnionType):
            return self.schema.is_sub_type(target, runtime)
        return False

    def collect(
        self, runtime: GraphQLObjectType, selection_sets: Iterable[SelectionSetNode]
    ) -> dict[str, list[FieldNode]]:
        """The fields asked of an object of type ``runtime``, by response key, as execution merges them."""
        fields: dict[str, list[FieldNode]] = {}
        visited: set[str] = set()

        def visit(selection_set: SelectionSetNode) -> None:
            for selection in selection_set.selections:
                if not self.included(selection):
                    continue
                if isinstance(selection, FieldNode):
                    key = selection.alias.value if selection.alias else selection.name.value
                    fields.setdefault(key, []).append(selection)
                elif isinstance(selection, InlineFragmentNode):
                    condition = selection.type_condition
                    if self.applies(None if condition is None else condition.name.value, runtime):
                        visit(selection.selection_set)
                elif isinstance(selection, FragmentSpreadNode):
                    name = selection.name.value
                    fragment = self.fragments.get(name)
                    if fragment is None or name in visited:
                        continue
                    visited.add(name)
                    if self.applies(fragment.type_condition.name.value, runtime):
                        visit(fragment.selection_set)

        for selection_set in selection_sets:
            visit(selection_set)
        return fields

    def each(self, type_: Any, selection_sets: list[SelectionSetNode], page: int | None = None) -> int:
        """What the selections ask of one object of ``type_`` (its costliest possible type, if abstract)."""
        if isinstance(type_, GraphQLInterfaceType | GraphQLUnionType):
            return max((self.each(t, selection_sets, page) for t in self.schema.get_possible_types(type_)), default=0)
        if not isinstance(type_, GraphQLObjectType) or not selection_sets:
            return 0
        key = (type_.name, tuple(id(s) for s in selection_sets), page)
        found = self.memo.get(key)
        if found is None:
            found = 0
            for nodes in self.collect(type_, selection_sets).values():
                found += self.field(type_, nodes, page)
            self.memo[key] = found
        return found

    def field(self, parent: GraphQLObjectType, nodes: list[FieldNode], page: int | None) -> int:
        """What one field asks for, for one object of ``parent``: its price, then its objects and theirs."""
        name = nodes[0].name.value
        definition = parent.fields.get(name)
        if definition is None:  # __typename, or a field validation refuses
            return 0
        price = PRICES.get(f"{parent.name}.{name}", 0)
        if name == "totalCount" and is_connection(parent):
            price += COUNT_PRICE
        named = get_named_type(definition.type)
        below = [n.selection_set for n in nodes if n.selection_set is not None]
        if not below:
            return price
        if is_connection(named):
            size = self.page_size(nodes[0])
            return price + size + self.each(named, below, size)
        if page is not None and is_connection(parent) and name in ("edges", "nodes"):
            return price + page * self.each(named, below)  # the page, counted at the connection
        if name == "node" and is_edge(parent):
            return price + self.each(named, below)  # the edge's row, counted at the connection
        if not is_list(definition.type):
            return price + 1 + self.each(named, below)
        size = self.list_size(parent, nodes[0])
        return price + size * (1 + self.each(named, below))

    def page_size(self, node: FieldNode) -> int:
        sizes = [
            value
            for argument in node.arguments or ()
            if argument.name.value in ("first", "last")
            for value in [self.value(argument.value)]
            if isinstance(value, int) and not isinstance(value, bool)
        ]
        return max(0, *sizes) if sizes else DEFAULT_PAGE

    def list_size(self, parent: GraphQLObjectType, node: FieldNode) -> int:
        if parent is self.schema.query_type and node.name.value == "nodes":
            ids = next((a.value for a in node.arguments or () if a.name.value == "ids"), None)
            given = None if ids is None else self.value(ids)
            if isinstance(given, list):
                return len(given)
            return 1 if isinstance(given, str) else MAX_NODES  # one id stands for a list of one
        return LIST_SIZES.get(f"{parent.name}.{node.name.value}", MANY)


_UNKNOWN = object()


def _literal(node: ValueNode, variables: Mapping[str, Any]) -> Any:
    """What a literal or a variable holds, as far as counting needs it: ints, booleans, strings and lists of them
    (null, objects and variables not sent: ``_UNKNOWN``)."""
    if isinstance(node, VariableNode):
        return variables.get(node.name.value, _UNKNOWN)
    if isinstance(node, IntValueNode):
        return int(node.value)
    if isinstance(node, BooleanValueNode):
        return node.value
    if isinstance(node, ListValueNode):
        return [_literal(v, variables) for v in node.values]
    if hasattr(node, "value"):
        return node.value  # strings and enums
    return _UNKNOWN


def operation_cost(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: Mapping[str, FragmentDefinitionNode],
    variables: Mapping[str, Any] | None = None,
) -> int:
    """What ``operation`` can cost under ``variables`` (see the module docstring)."""
    return _count(schema, operation, fragments, _with_defaults(operation, variables or {}))


def _count(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: Mapping[str, FragmentDefinitionNode],
    variables: Mapping[str, Any],
) -> int:
    """The count itself, under ``variables`` that hold the operation's defaults already."""
    root = {
        "query": schema.query_type,
        "mutation": schema.mutation_type,
        "subscription": schema.subscription_type,
    }[operation.operation.value]
    return _Counter(schema, operation, fragments, variables).each(root, [operation.selection_set])


def _with_defaults(operation: OperationDefinitionNode, variables: Mapping[str, Any]) -> dict[str, Any]:
    """The variables sent, and the operation's defaults where nothing was sent."""
    merged = dict(variables)
    for definition in operation.variable_definitions or ():
        name = definition.variable.name.value
        if name not in merged and definition.default_value is not None:
            merged[name] = _literal(definition.default_value, {})
    return merged


class _Reads(dict):
    """Variables that record which of them the count read, and what it found (its ``get`` is all it uses)."""

    def __init__(self, values: Mapping[str, Any]):
        super().__init__(values)
        self.read: dict[str, str] = {}

    def get(self, key: str, default: Any = None) -> Any:
        value = super().get(key, default)
        self.read[key] = repr(value)
        return value


#: Costs counted before, per (schema, document text, operation name): each with the variables its count read and
#: their values. A count reads only those, so the same values give the same cost (a page size, ids, a @skip flag);
#: createExample's fields, say, are never read, and one entry serves every call of the document.
_COSTS: OrderedDict[tuple[int, str, str | None], list[tuple[tuple[tuple[str, str], ...], int]]] = OrderedDict()
_COSTS_KEPT = 1024  # documents
_COSTS_PER_DOCUMENT = 16  # sets of values read


def cached_cost(
    schema: GraphQLSchema,
    text: str,
    operation: OperationDefinitionNode,
    fragments: Callable[[], Mapping[str, FragmentDefinitionNode]],
    variables: Mapping[str, Any],
    operation_name: str | None,
) -> int:
    """:func:`operation_cost`, remembered for the document and the values of the variables its count reads."""
    key = (id(schema), text, operation_name)
    merged = _with_defaults(operation, variables)
    known = _COSTS.get(key)
    if known is not None:
        _COSTS.move_to_end(key)
        for read, cost in known:
            if all(repr(merged.get(name, _UNKNOWN)) == value for name, value in read):
                return cost
    reads = _Reads(merged)
    cost = _count(schema, operation, fragments(), reads)
    entries = _COSTS.setdefault(key, [])
    entries.insert(0, (tuple(reads.read.items()), cost))
    del entries[_COSTS_PER_DOCUMENT:]
    while len(_COSTS) > _COSTS_KEPT:
        _COSTS.popitem(last=False)
    return cost


class QueryCost(SchemaExtension):
    """Refuse operations that cost more than ``max_nodes`` (see the module docstring), as validation refuses them.

    The check runs in the validation step, after the document is validated (a document validation refuses is
    refused for that, and never counted), so that refused subscriptions start nothing either. It must come after
    ``ValidationByText`` in the schema's extensions, which validates earlier in the same step; without it, it
    validates the document itself, as strawberry would have.
    """

    def __init__(self, max_nodes: int):
        self.max_nodes = max_nodes

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        if document is not None and self.max_nodes > 0:
            if context.pre_execution_errors is None:
                context.pre_execution_errors = validate(context.schema._schema, document, context.validation_rules)
            operation = get_operation_ast(document, context.operation_name)
            if not context.pre_execution_errors and operation is not None:
                fragments = lambda: {  # noqa: E731 - read only when the cost is not known yet
                    d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
                }
                variables = context.variables or {}
                cost = (
                    operation_cost(context.schema._schema, operation, fragments(), variables)
                    if context.query is None
                    else cached_cost(
                        context.schema._schema, context.query, operation, fragments, variables, context.operation_name
                    )
                )
                if cost > self.max_nodes:
                    # a new list: the validation cache holds the one it replaces
                    context.pre_execution_errors = [
                        GraphQLError(
                            f"This operation costs {cost}, more than the {self.max_nodes} one request may: ask for "
                            "smaller pages (first/last), fewer ids or nested lists, or fewer statistics and counts "
                            "(totalCount) at once",
                            extensions={"code": CODE, "cost": cost, "limit": self.max_nodes},
                        )
                    ]
        yield
