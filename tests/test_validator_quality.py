"""Validator quality: agreement with decisions and owners, Krippendorff's alpha against the package's own figure,
and weighted quorums; services and GraphQL, on SQLite and PostgreSQL."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from support import make_user, register_user

from dynaforge.api.node import global_id, parse_id
from dynaforge.db.models import ExampleStatus as S
from dynaforge.errors import Forbidden, InvalidInput, NotFound
from dynaforge.services import examples, tasks, validation
from dynaforge.services import validator_quality as quality
from dynaforge.services.actor import Actor


async def _write(p, actor, n: int):
    """A fooling example of the toy task (its model says 'good' when the text has the word)."""
    outcome = await examples.submit(p, actor, task_code="toy", fields={"text": f"a good thing {n}", "label": "bad"})
    assert outcome.example.fooled is True
    return outcome.example


@pytest.fixture
async def people(platform):
    names = ["author", "v1", "v2", "v3", "v4", "owner", "outsider"]
    actors = {n: await make_user(platform, f"user_{n}") for n in names}
    await tasks.grant_ownership(platform, Actor.system(), "toy", actors["owner"].user_id)
    return actors


async def _votes(p, people, plan: dict[int, list[tuple[str, str]]]) -> dict[int, object]:
    """Write one example per key of ``plan`` and cast its (voter, label) votes in order."""
    written = {}
    for n, votes in plan.items():
        example = await _write(p, people["author"], n)
        for voter, label in votes:
            example = await validation.validate(p, people[voter], example.id, label)
        written[n] = example
    return written


def _matrix(plan: dict[int, list[tuple[str, str]]]) -> np.ndarray:
    """The reliability matrix of the plan's crowd votes, built apart from the service: validators by examples."""
    code = {"CORRECT": 0, "INCORRECT": 1, "FLAGGED": 2}
    units = [n for n, votes in plan.items() if len([v for v, _ in votes if v != "owner"]) >= 2]
    raters = sorted({v for votes in plan.values() for v, _ in votes if v != "owner"})
    matrix = np.full((len(raters), len(units)), np.nan)
    for j, n in enumerate(units):
        for voter, label in plan[n]:
            if voter != "owner":
                matrix[raters.index(voter), j] = code[label]
    return matrix


PLAN = {
    1: [("v1", "CORRECT"), ("v2", "CORRECT"), ("v3", "CORRECT")],  # accepted by the crowd
    2: [("v1", "CORRECT"), ("v2", "INCORRECT"), ("v3", "INCORRECT"), ("v4", "INCORRECT")],  # rejected by the crowd
    3: [("v1", "INCORRECT"), ("v2", "CORRECT"), ("owner", "CORRECT")],  # accepted by an owner's override
    4: [("v1", "CORRECT")],  # undecided
    5: [("v3", "FLAGGED"), ("v4", "INCORRECT")],  # undecided, two votes: paired for alpha
}


async def test_agreement_with_decisions_and_owners_and_alpha(platform, people):
    written = await _votes(platform, people, PLAN)
    assert [written[n].status for n in (1, 2, 3, 4, 5)] == [S.ACCEPTED, S.REJECTED, S.ACCEPTED, S.CREATED, S.CREATED]
    report = await quality.report(platform, people["owner"], "toy")
    standing = {v.user.username: v for v in report.validators}
    assert set(standing) == {"user_v1", "user_v2", "user_v3", "user_v4"}  # the owner's vote is no crowd vote
    figures = {
        name: (v.votes, v.decided, v.agreed, v.owner_decided, v.agreed_with_owner, v.weight)
        for name, v in standing.items()
    }
    assert figures == {
        "user_v1": (4, 3, 1, 1, 0, 1.0),
        "user_v2": (3, 3, 3, 1, 1, 1.0),
        "user_v3": (3, 2, 2, 0, 0, 1.0),
        "user_v4": (2, 1, 1, 0, 0, 1.0),
    }
    assert standing["user_v1"].agreement == pytest.approx(1 / 3) and standing["user_v1"].owner_agreement == 0.0
    assert standing["user_v3"].owner_agreement is None
    assert report.validators[0].user.username == "user_v1"  # lowest agreement first

    expected = krippendorff.alpha(reliability_data=_matrix(PLAN), level_of_measurement="nominal")
    assert report.alpha == pytest.approx(expected) and report.units == 4  # examples 1, 2, 3 and 5
    assert report.rounds[0].round_number == 1 and report.rounds[0].alpha == pytest.approx(expected)
    assert report.rounds[0].votes == 12  # every crowd vote; the owner's is not one


def test_alpha_known_figures():
    # Perfect agreement with two labels in play: 1. One label only: undefined. Nothing pairable: undefined.
    assert quality.alpha([(1, 10, "CORRECT"), (2, 10, "CORRECT"), (1, 11, "FLAGGED"), (2, 11, "FLAGGED")]) == (1.0, 2)
    assert quality.alpha([(1, 10, "CORRECT"), (2, 10, "CORRECT")]) == (None, 1)
    assert quality.alpha([(1, 10, "CORRECT"), (2, 11, "INCORRECT")]) == (None, 0)
    # Two raters who always disagree on two binary items: the coincidence matrix gives alpha = 1 - 3 * 4/4 / 2 = -0.5.
    value, units = quality.alpha([(1, 10, "CORRECT"), (2, 10, "INCORRECT"), (1, 11, "INCORRECT"), (2, 11, "CORRECT")])
    assert units == 2 and value == pytest.approx(-0.5)


async def test_alpha_per_round_and_a_round_of_its_own(platform, people):
    await _votes(platform, people, {1: PLAN[1], 2: PLAN[2]})
    await tasks.open_next_round(platform, people["owner"], "toy")
    second = {7: [("v1", "CORRECT"), ("v2", "INCORRECT")], 8: [("v1", "INCORRECT"), ("v2", "CORRECT")]}
    await _votes(platform, people, second)
    report = await quality.report(platform, people["owner"], "toy", 2)
    assert report.round_number == 2 and report.alpha == pytest.approx(
        krippendorff.alpha(reliability_data=_matrix(second), level_of_measurement="nominal")
    )
    assert {v.user.username: v.votes for v in report.validators} == {"user_v1": 2, "user_v2": 2}
    assert [(r.round_number, r.units, r.votes) for r in report.rounds] == [(1, 2, 7), (2, 2, 4)]
    every = await quality.report(platform, people["owner"], "toy")
    assert every.round_number is None and every.units == 4
    with pytest.raises(NotFound, match="no round 9"):
        await quality.report(platform, people["owner"], "toy", 9)


async def test_only_owners_and_admins_read_and_weigh(platform, people):
    await _votes(platform, people, {1: [("v1", "CORRECT")]})
    for who in ("v1", "author"):
        with pytest.raises(Forbidden, match="Only owners"):
            await quality.report(platform, people[who], "toy")
        with pytest.raises(Forbidden):
            await quality.set_weights(platform, people[who], "toy", [(people["v1"].user_id, 0.0)])
    admin = await make_user(platform, "user_admin", admin=True)
    assert [v.user.username for v in (await quality.report(platform, admin, "toy")).validators] == ["user_v1"]


async def test_weighted_quorum(platform, people):
    await _votes(platform, people, {1: [("v1", "CORRECT"), ("v2", "CORRECT"), ("v3", "INCORRECT")]})
    ids = {n: people[n].user_id for n in ("v1", "v2", "v3", "v4")}
    assert await quality.set_weights(platform, people["owner"], "toy", [(ids["v1"], 2.0), (ids["v3"], 0.5)]) == {
        ids["v1"]: 2.0,
        ids["v3"]: 0.5,
    }
    # v1 weighs 2: with v2's 1 the CORRECT votes reach the quorum of 3 after two votes.
    example = await _write(platform, people["author"], 2)
    assert (await validation.validate(platform, people["v1"], example.id, "CORRECT")).status == S.CREATED
    decided = await validation.validate(platform, people["v2"], example.id, "CORRECT")
    assert decided.status == S.ACCEPTED and decided.validations_correct == 2
    # v3 weighs 0.5: three INCORRECT votes (0.5 + 1 + 1) fall short; v1's CORRECT does not tip it either.
    example = await _write(platform, people["author"], 3)
    for voter in ("v3", "v2", "v4"):
        example = await validation.validate(platform, people[voter], example.id, "INCORRECT")
    assert example.status == S.CREATED and example.validations_incorrect == 3
    # Back to 1: the next vote counts v3 in full (the weights are read at each vote).
    await quality.set_weights(platform, people["owner"], "toy", [(ids["v3"], 1.0)])
    owner_view = await quality.report(platform, people["owner"], "toy")
    assert {v.user.username: v.weight for v in owner_view.validators}["user_v3"] == 1.0
    example = await validation.validate(platform, people["v1"], example.id, "INCORRECT")
    assert example.status == S.REJECTED


async def test_weight_zero_excludes_a_validator(platform, people):
    await _votes(platform, people, {1: [("v4", "CORRECT")]})
    waiting = await _write(platform, people["author"], 2)
    assert await validation.queue_size(platform, people["v4"], "toy") == 1
    await quality.set_weights(platform, people["owner"], "toy", [(people["v4"].user_id, 0.0)])
    assert await validation.queue_size(platform, people["v4"], "toy") == 0
    with pytest.raises(Forbidden, match="no longer count your validations"):
        await validation.example_to_validate(platform, people["v4"], "toy")
    with pytest.raises(Forbidden, match="no longer count your validations"):
        await validation.validate(platform, people["v4"], waiting.id, "CORRECT")
    # Others validate as before, and an excluded validator's past votes still show on the owners' page.
    assert (await validation.example_to_validate(platform, people["v1"], "toy")).id in {waiting.id, waiting.id - 1}
    report = await quality.report(platform, people["owner"], "toy")
    assert [(v.user.username, v.weight) for v in report.validators] == [("user_v4", 0.0)]


async def test_weights_that_are_refused(platform, people):
    await _votes(platform, people, {1: [("v1", "CORRECT")]})
    v1 = people["v1"].user_id
    cases = [
        ([(v1, -0.5)], "weights[0].weight", "range"),
        ([(v1, 10.5)], "weights[0].weight", "range"),
        ([(v1, float("nan"))], "weights[0].weight", "range"),
        ([(v1, 1.0), (v1, 2.0)], "weights[1].userId", "unique"),
        ([(people["v2"].user_id, 2.0)], "weights[0].userId", "not_a_validator"),  # no crowd vote in the task
        ([(people["owner"].user_id, 2.0)], "weights[0].userId", "not_a_validator"),
        ([], "weights", "count"),
    ]
    for entries, field, rule in cases:
        with pytest.raises(InvalidInput) as caught:
            await quality.set_weights(platform, people["owner"], "toy", entries)
        assert [(e.field, e.rule) for e in caught.value.field_errors] == [(field, rule)], entries
    assert (await quality.report(platform, people["owner"], "toy")).validators[0].weight == 1.0  # nothing was set


QUALITY = """query ($c: String!, $r: Int) { task(code: $c) { validatorQuality(round: $r) {
  roundNumber alpha pairedExamples
  validators { user { id username } weight votes decidedVotes agreedVotes agreement ownerDecidedVotes
               agreedWithOwnerVotes ownerAgreement medianTimeTakenMs }
  rounds { roundNumber alpha pairedExamples votes } } } }"""
WEIGH = """mutation ($i: SetValidatorWeightsInput!) { setValidatorWeights(input: $i) {
  __typename
  ... on ValidatorWeightsSet { quality { validators { user { username } weight } } }
  ... on InvalidInput { fieldErrors { field code rule } } } }"""
VALIDATE = """mutation ($id: ID!, $l: ValidationLabel!, $t: Int) {
  validateExample(input: {id: $id, label: $l, timeTakenMs: $t}) { __typename } }"""


async def test_graphql_contract(gql, platform):
    author, _ = await register_user(gql, "writer")
    owner, owner_id = await register_user(gql, "boss")
    await tasks.grant_ownership(platform, Actor.system(), "toy", parse_id(owner_id, "id", "User"))
    voters = [await register_user(gql, f"judge{i}") for i in range(2)]
    created = await gql(
        'mutation { createExample(input: {taskCode: "toy", fields: {text: "good news", label: "bad"}}) { '
        "... on ExampleCreated { example { id } } } }",
        token=author,
    )
    example_id = created["createExample"]["example"]["id"]
    for (token, _), label, took in zip(voters, ("CORRECT", "INCORRECT"), (1200, 3400), strict=True):
        voted = await gql(VALIDATE, {"id": example_id, "l": label, "t": took}, token=token)
        assert voted["validateExample"]["__typename"] == "ValidationRecorded"

    seen = (await gql(QUALITY, {"c": "toy", "r": None}, token=owner))["task"]["validatorQuality"]
    one_disagreement = krippendorff.alpha(reliability_data=[[0], [1]], level_of_measurement="nominal")
    assert seen["roundNumber"] is None and seen["alpha"] == pytest.approx(one_disagreement)
    assert seen["pairedExamples"] == 1
    assert [v["user"]["username"] for v in seen["validators"]] == ["judge0", "judge1"]
    assert seen["validators"][0] | {"user": None} == {
        "user": None,
        "weight": 1.0,
        "votes": 1,
        "decidedVotes": 0,
        "agreedVotes": 0,
        "agreement": None,
        "ownerDecidedVotes": 0,
        "agreedWithOwnerVotes": 0,
        "ownerAgreement": None,
        "medianTimeTakenMs": 1200,
    }
    assert seen["rounds"] == [{"roundNumber": 1, "alpha": seen["alpha"], "pairedExamples": 1, "votes": 2}]

    refused = await gql(QUALITY, {"c": "toy", "r": None}, token=author, expect_errors=True)
    assert refused["data"]["task"] == {"validatorQuality": None}
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    missing = await gql(QUALITY, {"c": "toy", "r": 4}, token=owner, expect_errors=True)
    assert missing["errors"][0]["extensions"]["code"] == "NOT_FOUND"

    judge1 = voters[1][1]
    bad = {"taskCode": "toy", "weights": [{"userId": judge1, "weight": 11}, {"userId": owner_id, "weight": 2}]}
    invalid = (await gql(WEIGH, {"i": bad}, token=owner))["setValidatorWeights"]
    assert invalid["__typename"] == "InvalidInput"
    assert invalid["fieldErrors"] == [{"field": ["weights", "0", "weight"], "code": "RANGE", "rule": "range"}]
    wrong_kind = {"taskCode": "toy", "weights": [{"userId": global_id("Example", 1), "weight": 2}]}
    assert (await gql(WEIGH, {"i": wrong_kind}, token=owner))["setValidatorWeights"]["__typename"] == "InvalidInput"
    good = {"taskCode": "toy", "weights": [{"userId": judge1, "weight": 0}]}
    assert (await gql(WEIGH, {"i": good}, token=author))["setValidatorWeights"]["__typename"] == "Forbidden"
    done = (await gql(WEIGH, {"i": good}, token=owner))["setValidatorWeights"]
    assert done["quality"]["validators"] == [
        {"user": {"username": "judge0"}, "weight": 1.0},
        {"user": {"username": "judge1"}, "weight": 0.0},
    ]
    size = '{ task(code: "toy") { validationQueueSize } }'
    assert (await gql(size, token=voters[1][0]))["task"]["validationQueueSize"] == 0
