"""Tutorials and qualification: owners' items, practice answers with feedback, the pass mark that gates writing and
validating, and practice never counted; services and GraphQL, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from support import make_user, register_user

from dynaforge.api.node import global_id, parse_id
from dynaforge.db.models import ExampleStatus as S
from dynaforge.db.models import Validation
from dynaforge.errors import AlreadyExists, Forbidden, InvalidInput, NotFound
from dynaforge.services import examples, stats, tasks, validation
from dynaforge.services import tutorial as tut
from dynaforge.services.actor import Actor


async def _write(p, actor, n: int):
    """The toy model says 'good' when the text has the word: labelled 'bad', such a text fools it."""
    fields = {"text": f"a good day number {n}", "label": "bad"}
    return (await examples.submit(p, actor, task_code="toy", fields=fields)).example


@pytest.fixture
async def world(platform):
    people = {n: await make_user(platform, f"user_{n}") for n in ("author", "trainee", "owner")}
    await tasks.grant_ownership(platform, Actor.system(), "toy", people["owner"].user_id)
    accepted = await _write(platform, people["author"], 1)
    await validation.validate(platform, people["owner"], accepted.id, "CORRECT")
    rejected = await _write(platform, people["author"], 2)
    await validation.validate(platform, people["owner"], rejected.id, "INCORRECT")
    waiting = await _write(platform, people["author"], 3)
    return people, accepted, rejected, waiting


async def test_owners_build_the_tutorial(platform, world):
    people, accepted, rejected, waiting = world
    first = await tut.add_item(platform, people["owner"], accepted.id, None, "  The label is what a reader says. ")
    assert (first.expected, first.explanation) == ("CORRECT", "The label is what a reader says.")
    assert (await tut.add_item(platform, people["owner"], rejected.id, None, "")).expected == "INCORRECT"
    with pytest.raises(InvalidInput) as caught:
        await tut.add_item(platform, people["owner"], waiting.id, "CORRECT", "")
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("exampleId", "status")]
    with pytest.raises(InvalidInput):
        await tut.add_item(platform, people["owner"], accepted.id, "FLAGGED", "")
    with pytest.raises(Forbidden):
        await tut.add_item(platform, people["trainee"], accepted.id, None, "")
    # Again: the verdict and explanation are replaced, not duplicated.
    await tut.add_item(platform, people["owner"], accepted.id, "CORRECT", "Read it as a careful reader would.")
    listed = await tut.items(platform, people["owner"], "toy")
    assert [(i.example.id, i.explanation) for i in listed] == [
        (accepted.id, "Read it as a careful reader would."),
        (rejected.id, ""),
    ]
    assert await tut.remove_item(platform, people["owner"], rejected.id) == rejected.id
    with pytest.raises(NotFound):
        await tut.remove_item(platform, people["owner"], rejected.id)


async def test_the_pass_mark_gates_work_until_passed(platform, world):
    people, accepted, rejected, waiting = world
    trainee, owner = people["trainee"], people["owner"]
    await tut.add_item(platform, owner, accepted.id, None, "The praise is real.")
    await tut.add_item(platform, owner, rejected.id, None, "The label misreads it.")
    # A pass mark without items gates nothing; with items, the trainee waits and the owners do not.
    await tasks.update_settings(platform, owner, "toy", {"qualification_pass_mark": 1.0})
    start = await tut.standing(platform, trainee, "toy")
    assert (start.required, start.total, start.passed, start.score) == (True, 2, False, None)
    assert not (await tut.standing(platform, owner, "toy")).required
    with pytest.raises(Forbidden, match="Pass the tutorial"):
        await _write(platform, trainee, 9)
    with pytest.raises(Forbidden, match="Pass the tutorial"):
        await validation.example_to_validate(platform, trainee, "toy")
    with pytest.raises(Forbidden, match="Pass the tutorial"):
        await validation.validate(platform, trainee, waiting.id, "CORRECT")
    assert (await validation.validate(platform, owner, waiting.id, "CORRECT")).status == S.ACCEPTED

    # The first attempt: one right, one wrong; each answer says why at once.
    item, now = await tut.answer(platform, trainee, accepted.id, "CORRECT")
    assert (item.expected, item.explanation, now.answered, now.score) == ("CORRECT", "The praise is real.", 1, None)
    with pytest.raises(AlreadyExists):
        await tut.answer(platform, trainee, accepted.id, "INCORRECT")
    item, now = await tut.answer(platform, trainee, rejected.id, "CORRECT")
    assert item.answer != item.expected and (now.score, now.passed, now.attempts, now.required) == (0.5, False, 1, True)
    with pytest.raises(Forbidden):
        await _write(platform, trainee, 9)
    with pytest.raises(InvalidInput):
        await tut.answer(platform, trainee, accepted.id, "FLAGGED")
    with pytest.raises(NotFound):
        await tut.answer(platform, trainee, waiting.id, "CORRECT")  # not an item

    # Unanswered items keep their verdict from the trainee; a new attempt clears the answers.
    again = await tut.restart(platform, trainee, "toy")
    assert (again.answered, again.attempts) == (0, 1)
    assert all(i.answer is None for i in await tut.items(platform, trainee, "toy"))
    await tut.answer(platform, trainee, accepted.id, "CORRECT")
    _, done = await tut.answer(platform, trainee, rejected.id, "INCORRECT")
    assert (done.score, done.passed, done.required, done.attempts) == (1.0, True, False, 2)
    assert (await _write(platform, trainee, 9)).fooled is True  # qualified: the work counts
    # A pass stays through a new attempt.
    assert (await tut.restart(platform, trainee, "toy")).passed

    # Practice is never a vote, and no counter moved for it.
    async with platform.db.session() as s:
        votes = await s.scalar(
            select(func.count()).select_from(Validation).where(Validation.user_id == trainee.user_id)
        )
    assert votes == 0
    view = await tasks.get_task(platform, Actor.anonymous(), "toy")
    round_ = await tasks.get_round(platform, view.row.id)
    assert stats.Stats.of(round_).collected == 4  # the author's three and the trainee's one


async def test_the_pass_mark_setting(platform, world):
    people, *_ = world
    for bad in (0.3, 1.2, float("nan")):
        with pytest.raises(InvalidInput) as caught:
            await tasks.update_settings(platform, people["owner"], "toy", {"qualification_pass_mark": bad})
        assert [(e.field, e.rule) for e in caught.value.field_errors] == [("qualificationPassMark", "range")]
    await tasks.update_settings(platform, people["owner"], "toy", {"qualification_pass_mark": 0.8})
    await tasks.update_settings(platform, people["owner"], "toy", {"qualification_pass_mark": 0})
    assert (await tasks.get_task(platform, Actor.anonymous(), "toy")).settings.qualification_pass_mark is None


TUTORIAL = """{ task(code: "toy") { tutorial { passMark required passed total answered correct score attempts
  items { exampleId fields modelAnswer { label } yourAnswer expected explanation correct } } } }"""
ANSWER = """mutation ($id: ID!, $l: ValidationLabel!) { answerTutorial(input: {exampleId: $id, label: $l}) {
  __typename ... on TutorialAnswered { item { correct expected explanation } tutorial { answered score passed } } } }"""
ADD = """mutation ($id: ID!) { addTutorialItem(input: {exampleId: $id, explanation: "Because."}) {
  __typename ... on TutorialItemAdded { item { exampleId expected explanation } } } }"""


async def test_graphql_contract(gql, platform):
    author, _ = await register_user(gql, "writer")
    trainee, _ = await register_user(gql, "learner")
    owner, owner_id = await register_user(gql, "boss")
    owner_actor = Actor(parse_id(owner_id, "id", "User"), "boss", False)
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner_actor.user_id)
    created = await gql(
        'mutation { createExample(input: {taskCode: "toy", fields: {text: "good news", label: "bad"}}) { '
        "... on ExampleCreated { example { id } } } }",
        token=author,
    )
    example_id = created["createExample"]["example"]["id"]
    await validation.validate(platform, owner_actor, parse_id(example_id, "id", "Example"), "CORRECT")

    assert (await gql(ADD, {"id": example_id}, token=trainee))["addTutorialItem"]["__typename"] == "Forbidden"
    added = (await gql(ADD, {"id": example_id}, token=owner))["addTutorialItem"]
    assert added["item"] == {"exampleId": example_id, "expected": "CORRECT", "explanation": "Because."}
    settings = await gql(
        'mutation { updateTaskSettings(input: {taskCode: "toy", qualificationPassMark: 1}) { '
        "... on TaskSettingsUpdated { task { settings { qualificationPassMark } } } } }",
        token=owner,
    )
    assert settings["updateTaskSettings"]["task"]["settings"] == {"qualificationPassMark": 1.0}

    seen = (await gql(TUTORIAL, token=trainee))["task"]["tutorial"]
    assert (seen["required"], seen["passed"], seen["total"], seen["answered"], seen["passMark"]) == (
        True,
        False,
        1,
        0,
        1.0,
    )
    item = seen["items"][0]
    assert item["fields"]["text"] == "good news" and item["modelAnswer"] == {"label": "good"}
    assert (item["yourAnswer"], item["expected"], item["explanation"], item["correct"]) == (None, None, None, None)
    blocked = await gql(
        'mutation { createExample(input: {taskCode: "toy", fields: {text: "good", label: "bad"}}) { __typename } }',
        token=trainee,
    )
    assert blocked["createExample"]["__typename"] == "Forbidden"

    answered = (await gql(ANSWER, {"id": example_id, "l": "CORRECT"}, token=trainee))["answerTutorial"]
    assert answered["item"] == {"correct": True, "expected": "CORRECT", "explanation": "Because."}
    assert answered["tutorial"] == {"answered": 1, "score": 1.0, "passed": True}
    again = (await gql(ANSWER, {"id": example_id, "l": "CORRECT"}, token=trainee))["answerTutorial"]
    assert again["__typename"] == "AlreadyExists"
    restarted = await gql(
        'mutation { restartTutorial(input: {taskCode: "toy"}) { ... on TutorialRestarted { tutorial { answered '
        "passed } } } }",
        token=trainee,
    )
    assert restarted["restartTutorial"]["tutorial"] == {"answered": 0, "passed": True}
    anonymous = await gql(TUTORIAL, token=None, expect_errors=True)
    assert anonymous["errors"][0]["extensions"]["code"] == "NOT_AUTHENTICATED"
    removed = await gql(
        "mutation ($id: ID!) { removeTutorialItem(input: {exampleId: $id}) { __typename } }",
        {"id": global_id("Example", parse_id(example_id, "id", "Example"))},
        token=owner,
    )
    assert removed["removeTutorialItem"]["__typename"] == "TutorialItemRemoved"
