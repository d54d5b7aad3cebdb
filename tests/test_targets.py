"""Target models: ensembles and their rules, owners setting a round's targets, and examples stored without a
prediction being predicted later and only then counted. On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from support import current_round, make_user
from toy_plugin import ToyTask

from dynaforge.db.models import Context, Example, ExampleStatus, RoundUserStats
from dynaforge.errors import Forbidden, InvalidInput, NotAuthenticated
from dynaforge.inference.backends import InferenceError
from dynaforge.inference.client import InferenceClient
from dynaforge.services import examples, tasks
from dynaforge.services.actor import Actor
from dynaforge.tasks import outputs
from dynaforge.tasks.base import ModelSpec

KEYWORD = {"name": "keyword", "backend": "python", "config": {"callable": "toy_plugin:keyword_model"}}
ALWAYS_GOOD = {"name": "always-good", "backend": "python", "config": {"callable": "test_targets:always_good"}}
ALWAYS_BAD = {"name": "always-bad", "backend": "python", "config": {"callable": "test_targets:always_bad"}}


def always_good(inputs):
    return [{"label": "good", "probabilities": {"good": 1.0, "bad": 0.0}} for _ in inputs]


def always_bad(inputs):
    return [{"label": "bad", "probabilities": {"good": 0.0, "bad": 1.0}} for _ in inputs]


# --------------------------------------------------------------------------- ensemble rules


def _members(*labels: str) -> list[dict]:
    return [{"model": f"m{i}", "prediction": {"label": label}} for i, label in enumerate(labels)]


@pytest.mark.parametrize(
    "rule, labels, fooled, shown",
    [
        ("majority", ("bad", "bad", "good"), True, "bad"),
        ("majority", ("good", "bad", "good"), False, "good"),
        ("majority", ("good", "bad"), False, "good"),  # a tie goes to the earliest member
        ("any_wrong", ("good", "good", "bad"), True, "bad"),
        ("any_wrong", ("good", "good", "good"), False, "good"),
        ("all_wrong", ("bad", "good", "bad"), False, "good"),
        ("all_wrong", ("bad", "bad", "bad"), True, "bad"),
    ],
)
def test_ensemble_rules(rule, labels, fooled, shown):
    members = _members(*labels)
    prediction, was_fooled = outputs.judge(ToyTask(), rule, members, {"text": "x", "label": "good"}, {})
    assert was_fooled is fooled
    assert prediction["label"] == shown
    assert prediction["ensemble"] == {"rule": rule, "members": len(labels), "fooledMembers": labels.count("bad")}
    assert [m["fooled"] for m in members] == [label == "bad" for label in labels]


def test_a_single_model_ignores_the_rule():
    members = _members("bad")
    prediction, fooled = outputs.judge(ToyTask(), "all_wrong", members, {"text": "x", "label": "good"}, {})
    assert fooled and prediction == {"label": "bad"} and members[0]["fooled"]


# --------------------------------------------------------------------------- setting targets


async def test_owners_set_an_ensemble_and_examples_store_every_member(platform):
    alice, owner = await make_user(platform), await make_user(platform, "olga")
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner.user_id)
    with pytest.raises(NotAuthenticated):
        await tasks.set_target_models(platform, Actor.anonymous(), "toy", [KEYWORD])
    with pytest.raises(Forbidden):
        await tasks.set_target_models(platform, alice, "toy", [KEYWORD])
    round_ = await tasks.set_target_models(platform, owner, "toy", [KEYWORD, ALWAYS_GOOD, ALWAYS_BAD], "any_wrong")
    assert [m["name"] for m in round_.target_models] == ["keyword", "always-good", "always-bad"]
    assert (await current_round(platform)).ensemble_rule == "any_wrong"

    outcome = await examples.submit(platform, alice, task_code="toy", fields={"text": "good day", "label": "good"})
    example = outcome.example
    assert example.fooled is True  # always-bad is wrong, and any wrong member counts
    assert example.prediction["label"] == "bad" and example.prediction["ensemble"]["fooledMembers"] == 1
    assert [(m["model"], m["prediction"]["label"], m["fooled"]) for m in example.model_predictions] == [
        ("keyword", "good", False),
        ("always-good", "good", False),
        ("always-bad", "bad", True),
    ]

    await tasks.set_target_models(platform, owner, "toy", [KEYWORD, ALWAYS_GOOD, ALWAYS_BAD], "all_wrong")
    outcome = await examples.submit(platform, alice, task_code="toy", fields={"text": "good day", "label": "good"})
    assert outcome.example.fooled is False and outcome.example.prediction["label"] == "good"


ENSEMBLE_EXAMPLE = """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename
  ... on ExampleCreated { fooled prediction { label ensemble { rule members fooledMembers } }
    example { id prediction { fields label probabilities { label probability } ensemble { rule members fooledMembers } }
      modelPredictions { model fooled latencyMs prediction { fields label probabilities { label probability } } } } }
  ... on Error { message } } }"""


async def test_an_ensemble_verdict_and_each_member_read_as_typed_predictions(gql, platform):
    """Over GraphQL: the ensemble's verdict (rule, members, fooled members) on the prediction, and each member's own
    answer, verdict and latency in the round's order."""
    from support import register_user

    owner = await make_user(platform, "olga")
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner.user_id)
    await tasks.set_target_models(platform, owner, "toy", [KEYWORD, ALWAYS_GOOD, ALWAYS_BAD], "any_wrong")
    gql.token, _ = await register_user(gql, "writer")
    fields = {"text": "good day", "label": "good"}
    created = (await gql(ENSEMBLE_EXAMPLE, {"input": {"taskCode": "toy", "fields": fields}}))["createExample"]
    assert created["__typename"] == "ExampleCreated", created
    verdict = {"rule": "ANY_WRONG", "members": 3, "fooledMembers": 1}
    assert created["fooled"] is True and created["prediction"] == {"label": "bad", "ensemble": verdict}
    example = created["example"]
    assert example["prediction"]["fields"] == {"label": "bad"} and example["prediction"]["ensemble"] == verdict
    members = example["modelPredictions"]
    assert [(m["model"], m["prediction"]["label"], m["fooled"]) for m in members] == [
        ("keyword", "good", False),
        ("always-good", "good", False),
        ("always-bad", "bad", True),
    ]
    assert all(m["prediction"]["fields"] == {"label": m["prediction"]["label"]} for m in members)
    assert all(m["latencyMs"] is not None and m["latencyMs"] >= 0 for m in members)
    # probabilities: a list, most likely first (the keyword model gives none)
    assert members[1]["prediction"]["probabilities"] == [
        {"label": "good", "probability": 1.0},
        {"label": "bad", "probability": 0.0},
    ]
    assert members[2]["prediction"]["probabilities"][0] == {"label": "bad", "probability": 1.0}
    assert members[0]["prediction"]["probabilities"] == []


@pytest.mark.parametrize(
    "models, rule, field, rule_id",
    [
        ([], "majority", "models", "count"),
        ([KEYWORD] * 8, "majority", "models", "count"),
        ([KEYWORD], "most", "ensembleRule", "choice"),
        ([KEYWORD, KEYWORD], "majority", "models[1].name", "unique"),
        ([{**KEYWORD, "backend": "onnx"}], "majority", "models[0].backend", "choice"),
        ([{**KEYWORD, "config": {}}], "majority", "models[0].config", "backend_config"),
        ([{**KEYWORD, "config": [1]}], "majority", "models[0].config", "type"),
        ([{**KEYWORD, "name": " "}], "majority", "models[0].name", "required"),
    ],
)
async def test_bad_targets_are_refused_and_nothing_changes(platform, models, rule, field, rule_id):
    admin = await make_user(platform, "root", admin=True)
    before = (await current_round(platform)).target_models
    with pytest.raises(InvalidInput) as caught:
        await tasks.set_target_models(platform, admin, "toy", models, rule)
    assert (field, rule_id) in {(e.field, e.rule) for e in caught.value.field_errors}
    assert (await current_round(platform)).target_models == before


SET_TARGETS = """
mutation($input: SetTargetModelsInput!) {
  setTargetModels(input: $input) {
    __typename
    ... on TargetModelsSet { round { number ensembleRule targetModels { name backend config } } }
    ... on InvalidInput { fieldErrors { field rule message } }
    ... on Error { message }
  }
}"""

CURRENT_TARGETS = 'query { task(code: "toy") { currentRound { ensembleRule targetModels { name backend config } } } }'


async def test_set_target_models_over_graphql(gql, platform):
    from support import register_user

    from dynaforge.api.node import parse_id

    token, user_id = await register_user(gql, "olga")
    other, _ = await register_user(gql, "bob")
    models = [KEYWORD, ALWAYS_BAD]
    data = await gql(
        SET_TARGETS, {"input": {"taskCode": "toy", "models": models, "ensembleRule": "MAJORITY"}}, token=token
    )
    assert data["setTargetModels"]["__typename"] == "Forbidden"
    await tasks.grant_ownership(platform, Actor.system(), "toy", parse_id(user_id, "id", "User"))
    data = await gql(
        SET_TARGETS, {"input": {"taskCode": "toy", "models": models, "ensembleRule": "ALL_WRONG"}}, token=token
    )
    payload = data["setTargetModels"]
    assert payload["__typename"] == "TargetModelsSet", payload
    assert payload["round"]["ensembleRule"] == "ALL_WRONG"
    assert [m["name"] for m in payload["round"]["targetModels"]] == ["keyword", "always-bad"]
    # Owners see the configurations (they may hold credentials); other users see names and backends only.
    shown = (await gql(CURRENT_TARGETS, token=token))["task"]["currentRound"]["targetModels"]
    assert shown[0] == {"name": "keyword", "backend": "python", "config": KEYWORD["config"]}
    hidden = (await gql(CURRENT_TARGETS, token=other))["task"]["currentRound"]["targetModels"]
    assert hidden[0] == {"name": "keyword", "backend": "python", "config": None}
    bad = await gql(
        SET_TARGETS, {"input": {"taskCode": "toy", "models": [{**KEYWORD, "backend": "nope"}]}}, token=token
    )
    assert bad["setTargetModels"]["fieldErrors"][0]["field"] == ["models", "0", "backend"]


# --------------------------------------------------------------------------- pending predictions


class Switchable(InferenceClient):
    """Wraps the platform's client; while ``down`` every prediction fails as if the worker were restarting."""

    def __init__(self, inner: InferenceClient):
        self.inner = inner
        self.down = False

    async def predict(self, spec: ModelSpec, inputs):
        if self.down:
            raise InferenceError("the model worker is restarting")
        return await self.inner.predict(spec, inputs)


async def test_pending_examples_are_predicted_later_and_then_counted(platform):
    switch = Switchable(platform.inference)
    platform.inference = switch
    alice = await make_user(platform)
    context_id = (await contexts_for(platform))[0]
    switch.down = True
    fooling = await examples.submit(
        platform, alice, task_code="toy", fields={"text": "a good one", "label": "bad"}, context_id=context_id
    )
    plain = await examples.submit(platform, alice, task_code="toy", fields={"text": "good", "label": "good"})
    retracted = await examples.submit(platform, alice, task_code="toy", fields={"text": "meh", "label": "bad"})
    for outcome in (fooling, plain, retracted):
        assert outcome.example.status == ExampleStatus.PENDING_PREDICTION and outcome.pending_reason
    await examples.retract(platform, alice, retracted.example.id)
    round_ = await current_round(platform)
    assert (round_.collected, round_.fooled, round_.pending, round_.retracted) == (0, 0, 2, 1)

    assert await examples.predict_pending(platform) == 0  # still down: nothing changes
    assert (await current_round(platform)).pending == 2

    fooled_events: list[str] = []
    platform.events.publish = _recording(platform.events.publish, fooled_events)
    switch.down = False
    assert await examples.predict_pending(platform) == 2
    assert await examples.predict_pending(platform) == 0  # each example is predicted once
    async with platform.db.session() as s:
        rows = {e.id: e for e in await s.scalars(select(Example))}
        stats = await s.scalar(select(RoundUserStats).where(RoundUserStats.user_id == alice.user_id))
        context = await s.get(Context, context_id)
    assert rows[fooling.example.id].status == ExampleStatus.CREATED and rows[fooling.example.id].fooled is True
    assert rows[fooling.example.id].prediction["label"] == "good"
    assert rows[plain.example.id].fooled is False
    assert (
        rows[retracted.example.id].status == ExampleStatus.RETRACTED and rows[retracted.example.id].prediction is None
    )
    round_ = await current_round(platform)
    assert (round_.collected, round_.fooled, round_.pending, round_.retracted) == (2, 1, 0, 1)
    assert (stats.collected, stats.fooled, stats.pending) == (2, 1, 0)
    assert (context.total_used, context.total_fooled) == (1, 1)
    # Both pending examples announce their prediction (the annotate screen's answer); the fooling one also fools.
    assert sorted(fooled_events) == sorted(
        [
            f"examplePredicted:toy:{fooling.example.id}:True",
            f"examplePredicted:toy:{plain.example.id}:False",
            f"modelFooled:toy:{fooling.example.id}:True",
        ]
    )


def _recording(publish, seen):
    async def wrapper(topic, payload):
        if topic.startswith(("modelFooled", "examplePredicted")):
            seen.append(f"{topic}:{payload['id']}:{payload['fooled']}")
        return await publish(topic, payload)

    return wrapper


async def contexts_for(platform) -> list[int]:
    async with platform.db.session() as s:
        return list(await s.scalars(select(Context.id).order_by(Context.id)))
