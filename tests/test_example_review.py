"""What the people in charge of an example read about it: its author (the author themself and the task's owners and
admins), why it was flagged, and each vote with its validator, reason and correction (owners and admins only)."""

from __future__ import annotations

import pytest
from support import gid, make_user

from dynaforge.services import auth, examples, tasks, validation
from dynaforge.services.actor import Actor

REVIEW = """query($id: ID!) { example(id: $id) { id author { username } flagReason
  validations { label reason correctedTarget byOwner validator { username } } } }"""
QUEUE = """query { exampleToValidate(taskCode: "toy") { id author { username } flagReason validations { label } } }"""


@pytest.fixture
async def people(platform):
    actors = {n: await make_user(platform, f"rv_{n}") for n in ("author", "v1", "v2", "owner")}
    actors["admin"] = await make_user(platform, "rv_admin", admin=True)
    await tasks.grant_ownership(platform, Actor.system(), "toy", actors["owner"].user_id)
    return actors


async def _token(platform, actor) -> str:
    return (await auth.create_token(platform, actor, name="review"))[1]


async def test_owners_read_every_vote_with_its_validator_and_correction(gql, platform, people):
    made = await examples.submit(
        platform, people["author"], task_code="toy", fields={"text": "a good film", "label": "bad"}
    )
    example_id = made.example.id
    await validation.validate(
        platform, people["v1"], example_id, "INCORRECT", corrected_target={"label": "good"}, reason="it is praise"
    )
    await validation.validate(platform, people["v2"], example_id, "CORRECT")
    asked = {"id": gid("Example", example_id)}

    owner = (await gql(REVIEW, asked, token=await _token(platform, people["owner"])))["example"]
    assert owner["author"] == {"username": "rv_author"} and owner["flagReason"] is None
    assert owner["validations"] == [
        {
            "label": "INCORRECT",
            "reason": "it is praise",
            "correctedTarget": {"label": "good"},
            "byOwner": False,
            "validator": {"username": "rv_v1"},
        },
        {
            "label": "CORRECT",
            "reason": None,
            "correctedTarget": None,
            "byOwner": False,
            "validator": {"username": "rv_v2"},
        },
    ]
    admin = (await gql(REVIEW, asked, token=await _token(platform, people["admin"])))["example"]
    assert admin["validations"] == owner["validations"]
    author = (await gql(REVIEW, asked, token=await _token(platform, people["author"])))["example"]
    assert author["author"] == {"username": "rv_author"} and author["validations"] is None  # counts only, in votes


async def test_validators_see_neither_the_author_nor_the_others_votes(gql, platform, people):
    made = await examples.submit(
        platform, people["author"], task_code="toy", fields={"text": "a good song", "label": "bad"}
    )
    await validation.validate(platform, people["v2"], made.example.id, "CORRECT", reason="fine")
    served = (await gql(QUEUE, token=await _token(platform, people["v1"])))["exampleToValidate"]
    assert served == {"id": gid("Example", made.example.id), "author": None, "flagReason": None, "validations": None}


async def test_the_flag_reason_reaches_the_author_and_the_owners(gql, platform, people):
    made = await examples.submit(
        platform, people["author"], task_code="toy", fields={"text": "a good name", "label": "bad"}
    )
    await validation.flag(platform, people["v1"], made.example.id, "it names a real person")
    asked = {"id": gid("Example", made.example.id)}
    for who, sees_votes in (("author", False), ("owner", True)):
        seen = (await gql(REVIEW, asked, token=await _token(platform, people[who])))["example"]
        assert seen["flagReason"] == "it names a real person"
        assert (seen["validations"] is not None) is sees_votes
    reviews = await examples.reviews(platform, Actor.anonymous(), [made.example.id])
    assert reviews == {}


APPLY = """mutation($v: ID!) { applyCorrection(input: {id: $v}) { __typename
  ... on CorrectionApplied { example { id fields correctedTarget correction { reason validator { username } } } }
  ... on InvalidInput { fieldErrors { field rule } } ... on Error { message } } }"""
VOTES = """query($id: ID!) { example(id: $id) { validations { id label correctedTarget } } }"""


async def test_owners_apply_a_validators_correction_and_the_example_keeps_both(gql, platform, people):
    made = await examples.submit(
        platform, people["author"], task_code="toy", fields={"text": "a good film", "label": "bad"}
    )
    await validation.validate(
        platform, people["v1"], made.example.id, "INCORRECT", corrected_target={"label": "good"}, reason="praise"
    )
    await validation.validate(platform, people["v2"], made.example.id, "CORRECT")
    owner = await _token(platform, people["owner"])
    votes = (await gql(VOTES, {"id": gid("Example", made.example.id)}, token=owner))["example"]["validations"]
    corrected = next(v for v in votes if v["label"] == "INCORRECT")
    plain = next(v for v in votes if v["label"] == "CORRECT")

    refused = await gql(APPLY, {"v": corrected["id"]}, token=await _token(platform, people["author"]))
    assert refused["applyCorrection"]["__typename"] == "Forbidden"
    no_correction = (await gql(APPLY, {"v": plain["id"]}, token=owner))["applyCorrection"]
    assert no_correction["__typename"] == "InvalidInput"
    assert no_correction["fieldErrors"] == [{"field": ["id"], "rule": "no_correction"}]

    applied = (await gql(APPLY, {"v": corrected["id"]}, token=owner))["applyCorrection"]
    assert applied["__typename"] == "CorrectionApplied"
    example = applied["example"]
    assert example["fields"] == {"text": "a good film", "label": "bad"}  # the author's fields stay as written
    assert example["correctedTarget"] == {"label": "good"}
    assert example["correction"] == {"reason": "praise", "validator": {"username": "rv_v1"}}
    author_view = (
        await gql(
            "query($id: ID!) { example(id: $id) { correctedTarget correction { id } } }",
            {"id": gid("Example", made.example.id)},
            token=await _token(platform, people["author"]),
        )
    )["example"]
    assert author_view == {"correctedTarget": {"label": "good"}, "correction": None}  # the vote is the owners'


VOTE = """mutation($input: ValidateExampleInput!) { validateExample(input: $input) {
  __typename ... on ValidationRecorded { example { id } }
  ... on InvalidInput { fieldErrors { field code } } } }"""
TIMES = """query($id: ID!) { example(id: $id) { validations { timeTakenMs validator { username } } } }"""


async def test_a_vote_records_the_time_its_validator_took_within_bounds(gql, platform, people):
    made = await examples.submit(
        platform, people["author"], task_code="toy", fields={"text": "a good walk", "label": "bad"}
    )
    asked = {"id": gid("Example", made.example.id)}
    v1, v2 = await _token(platform, people["v1"]), await _token(platform, people["v2"])
    for wrong in (-1, 24 * 3600 * 1000 + 1):  # refused, saying which field, and no vote is stored
        refused = (await gql(VOTE, {"input": {**asked, "label": "CORRECT", "timeTakenMs": wrong}}, token=v1))[
            "validateExample"
        ]
        assert refused == {"__typename": "InvalidInput", "fieldErrors": [{"field": ["timeTakenMs"], "code": "RANGE"}]}
    owner = await _token(platform, people["owner"])
    assert (await gql(TIMES, asked, token=owner))["example"]["validations"] == []

    recorded = await gql(VOTE, {"input": {**asked, "label": "CORRECT", "timeTakenMs": 4200}}, token=v1)
    assert recorded["validateExample"]["__typename"] == "ValidationRecorded"
    await gql(VOTE, {"input": {**asked, "label": "CORRECT"}}, token=v2)  # a client that sends no time
    assert (await gql(TIMES, asked, token=owner))["example"]["validations"] == [
        {"timeTakenMs": 4200, "validator": {"username": "rv_v1"}},
        {"timeTakenMs": None, "validator": {"username": "rv_v2"}},
    ]
