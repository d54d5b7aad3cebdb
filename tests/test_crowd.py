"""Crowd studies on Prolific: joining through a study link, pseudonymous accounts, the completion code, pay per
verified fooling example and agreeing vote, and payouts through a fake Prolific API; services and GraphQL, on SQLite
and PostgreSQL."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from support import make_user, register_user, serve_in_loop
from toy_plugin import ToyPlugin

from dynaforge import Arrival, Bonus, CrowdPlatform, hookimpl
from dynaforge.api.node import parse_id
from dynaforge.db.models import CrowdPayment, CrowdPayout
from dynaforge.db.models import ExampleStatus as S
from dynaforge.defaults.crowd import API_TOKEN_VARIABLE, API_URL_VARIABLE
from dynaforge.errors import AlreadyExists, Forbidden, InvalidCredentials, InvalidInput, NotFound
from dynaforge.plugins import Plugins
from dynaforge.services import auth, examples, tasks, validation
from dynaforge.services import crowd as service
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform

STUDY = "5f1a2b3c4d5e6f7a8b9c0d1e"


def _link(pid: str, session: str = "sess1", study: str = STUDY) -> dict[str, str]:
    return {"PROLIFIC_PID": pid, "STUDY_ID": study, "SESSION_ID": session}


async def _participant(p, pid: str, session: str = "sess1"):
    joined = await service.join(p, "prolific", STUDY, _link(pid, session))
    return joined, await auth.authenticate(p, joined.token)


async def _write(p, actor, n: int, *, fools: bool = True):
    """The toy model says 'good' when the text has the word: labelled 'bad', such a text fools it."""
    text = f"a good thing {n}" if fools else f"a plain thing {n}"
    outcome = await examples.submit(p, actor, task_code="toy", fields={"text": text, "label": "bad"})
    assert outcome.example.fooled is fools
    return outcome.example


@pytest.fixture
async def owner(platform):
    owner = await make_user(platform, "user_owner")
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner.user_id)
    return owner


@pytest.fixture
async def study(platform, owner):
    return await service.create_study(
        platform,
        owner,
        "toy",
        platform="prolific",
        external_id=STUDY,
        name="Fool the toy model",
        completion_code="C1A2B3",
        pay_per_verified_fooling=50,
        pay_per_agreeing_validation=10,
        minimum_examples=2,
    )


async def test_a_study_link_signs_a_participant_into_a_pseudonymous_account(platform, study):
    joined, actor = await _participant(platform, "60aa11bb22cc33dd44ee55ff")
    assert joined.is_new and actor.user_id is not None
    username = joined.participation.participant.username
    assert username.startswith("prolific-") and len(username) == len("prolific-") + 8
    assert joined.participation.study.task_code == "toy"
    # No password opens it: the account has no usable hash.
    with pytest.raises(InvalidCredentials):
        await auth.login(platform, username=username, password="")
    # The same participant in the same session comes back to the same account, with a new token.
    again, same = await _participant(platform, "60aa11bb22cc33dd44ee55ff")
    assert not again.is_new and same.user_id == actor.user_id and again.token != joined.token
    # A participant id alone does not open it: another session is refused.
    with pytest.raises(Forbidden, match="another session"):
        await _participant(platform, "60aa11bb22cc33dd44ee55ff", session="sess2")
    # Another participant gets an account of their own.
    _, other = await _participant(platform, "70aa11bb22cc33dd44ee55ff")
    assert other.user_id != actor.user_id


async def test_links_that_are_refused(platform, study, owner):
    with pytest.raises(InvalidInput) as caught:
        await service.join(platform, "prolific", STUDY, {"PROLIFIC_PID": "60aa", "STUDY_ID": STUDY})
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("parameters", "arrival")]
    assert "SESSION_ID" in caught.value.field_errors[0].message
    with pytest.raises(InvalidInput) as caught:
        await service.join(platform, "prolific", STUDY, _link("60aa", study="0ther"))
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("parameters", "study")]
    with pytest.raises(InvalidInput) as caught:
        await service.join(platform, "prolific", STUDY, _link("60aa'; drop"))
    assert caught.value.field_errors[0].rule == "arrival"
    with pytest.raises(NotFound):
        await service.join(platform, "prolific", "nosuchstudy", _link("60aa", study="nosuchstudy"))
    with pytest.raises(InvalidInput) as caught:
        await service.join(platform, "mturk", STUDY, _link("60aa"))
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("platform", "choice")]
    # A closed study takes nobody new; those who joined may come back and finish.
    await _participant(platform, "60aa")
    await service.set_open(platform, owner, study.row.id, False)
    with pytest.raises(Forbidden, match="closed"):
        await _participant(platform, "61bb")
    await _participant(platform, "60aa")


async def test_only_owners_and_admins_run_studies(platform, study):
    stranger = await make_user(platform, "user_stranger")
    for call in (
        service.studies(platform, stranger, "toy"),
        service.set_open(platform, stranger, study.row.id, False),
        service.bonus_file(platform, stranger, study.row.id),
        service.pay(platform, stranger, study.row.id),
        service.create_study(
            platform, stranger, "toy", platform="prolific", external_id="x1", name="Mine", completion_code="C"
        ),
    ):
        with pytest.raises(Forbidden):
            await call
    admin = await make_user(platform, "user_admin", admin=True)
    assert [s.row.id for s in await service.studies(platform, admin, "toy")] == [study.row.id]
    with pytest.raises(NotFound):
        await service.set_open(platform, admin, study.row.id + 1000, False)


async def test_study_settings_that_are_refused(platform, owner, study):
    with pytest.raises(InvalidInput) as caught:
        await service.create_study(
            platform,
            owner,
            "toy",
            platform="prolific",
            external_id="has space",
            name=" ",
            completion_code="",
            currency="pounds",
            pay_per_verified_fooling=-1,
            pay_per_agreeing_validation=10_001,
            minimum_examples=1001,
        )
    assert sorted(e.field for e in caught.value.field_errors) == [
        "completionCode",
        "currency",
        "externalId",
        "minimumExamples",
        "name",
        "payPerAgreeingValidation",
        "payPerVerifiedFooling",
    ]
    with pytest.raises(AlreadyExists):
        await service.create_study(
            platform, owner, "toy", platform="prolific", external_id=STUDY, name="Again", completion_code="C"
        )


async def test_the_completion_code_waits_for_the_minimum_work(platform, study):
    joined, actor = await _participant(platform, "60aa")
    assert joined.participation.completion_code is None
    with pytest.raises(InvalidInput) as caught:
        await service.complete(platform, actor)
    assert [(e.field, e.rule, e.message) for e in caught.value.field_errors] == [
        ("minimumExamples", "minimum", "write 2 more example(s) first")
    ]
    await _write(platform, actor, 1)
    await _write(platform, actor, 2, fools=False)
    done = await service.complete(platform, actor)
    assert done.completion_code == "C1A2B3"
    assert done.completion_url == "https://app.prolific.com/submissions/complete?cc=C1A2B3"
    first = done.participant.row.completed_at
    again = await service.complete(platform, actor)
    assert again.completion_code == "C1A2B3" and again.participant.row.completed_at == first
    # An account that did not join through a study has nothing to complete.
    with pytest.raises(Forbidden):
        await service.complete(platform, await make_user(platform, "user_plain"))
    assert await service.participation(platform, await make_user(platform, "user_other")) is None


async def _work(platform, owner):
    """A writes three examples (two fool the model; the crowd accepts one and rejects one); B and two helpers vote."""
    _, writer = await _participant(platform, "aaaa")
    _, voter = await _participant(platform, "bbbb")
    helpers = [await make_user(platform, f"user_helper{i}") for i in range(3)]
    accepted = await _write(platform, writer, 1)
    rejected = await _write(platform, writer, 2)
    await _write(platform, writer, 3, fools=False)
    pending = await _write(platform, writer, 4)
    # accepted: B says CORRECT with the crowd (agrees); rejected: B says CORRECT against it (disagrees)
    for actor, label in ((voter, "CORRECT"), (helpers[0], "CORRECT"), (helpers[1], "CORRECT")):
        await validation.validate(platform, actor, accepted.id, label, time_taken_ms=2000)
    for actor, label in ((voter, "CORRECT"), (helpers[0], "INCORRECT"), (helpers[1], "INCORRECT")):
        await validation.validate(platform, actor, rejected.id, label, time_taken_ms=3000)
    example = await validation.validate(platform, helpers[2], rejected.id, "INCORRECT")
    assert example.status == S.REJECTED
    # pending: B's vote waits for the decision
    await validation.validate(platform, voter, pending.id, "INCORRECT", time_taken_ms=1000)
    return writer, voter


async def test_pay_counts_verified_fooling_examples_and_agreeing_votes(platform, owner, study):
    await _work(platform, owner)
    found = {x.row.external_id: x.work for x in (await service.studies(platform, owner, "toy"))[0].participants}
    writer, voter = found["aaaa"], found["bbbb"]
    assert (writer.examples, writer.fooled, writer.verified_fooling, writer.pending_examples) == (4, 3, 1, 1)
    assert writer.earned == 50 and writer.owed == 50
    assert (voter.validations, voter.agreeing_validations, voter.pending_validations) == (3, 1, 1)
    assert voter.time_taken_ms == 6000 and voter.earned == 10
    # The bonus file is what is owed, in pounds.
    _, csv = await service.bonus_file(platform, owner, study.row.id)
    assert csv == "aaaa,0.50\nbbbb,0.10\n"


class FakeProlific:
    """Prolific's two bulk-bonus endpoints, recording what they were sent; ``mode`` makes them refuse or fail."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str | None, dict | None]] = []
        self.mode = "ok"
        self.bulks = 0

    def app(self) -> Starlette:
        async def create(request: Request) -> JSONResponse:
            body = json.loads(await request.body())
            self.requests.append(("create", request.headers.get("authorization"), body))
            if self.mode == "refuse":
                return JSONResponse({"error": {"detail": "Insufficient balance"}}, status_code=400)
            self.bulks += 1
            return JSONResponse({"id": f"bulk{self.bulks}", "study": body["study_id"]}, status_code=201)

        async def pay(request: Request) -> JSONResponse:
            self.requests.append(("pay:" + request.path_params["id"], request.headers.get("authorization"), None))
            if self.mode == "fail":
                return JSONResponse({"error": "boom"}, status_code=502)
            return JSONResponse({}, status_code=202)

        return Starlette(
            routes=[
                Route("/api/v1/submissions/bonus-payments/", create, methods=["POST"]),
                Route("/api/v1/bulk-bonus-payments/{id}/pay/", pay, methods=["POST"]),
            ]
        )


@pytest.fixture
async def prolific(monkeypatch):
    fake = FakeProlific()
    async with serve_in_loop(fake.app()) as url:
        monkeypatch.setenv(API_URL_VARIABLE, url)
        monkeypatch.setenv(API_TOKEN_VARIABLE, "prolific-secret")
        yield fake


async def _payments(platform) -> list[tuple[int, str, str | None]]:
    async with platform.db.session() as s:
        rows = await s.scalars(select(CrowdPayment).order_by(CrowdPayment.id))
        return [(r.amount, r.status, r.reference) for r in rows]


async def test_payouts_through_the_prolific_api(platform, owner, study, prolific):
    writer, _ = await _work(platform, owner)
    paid = await service.pay(platform, owner, study.row.id)
    assert (paid.reference, paid.participants, paid.amount) == ("bulk1", 2, 60)
    assert prolific.requests == [
        ("create", "Token prolific-secret", {"study_id": STUDY, "csv_bonuses": "aaaa,0.50\nbbbb,0.10\n"}),
        ("pay:bulk1", "Token prolific-secret", None),
    ]
    assert await _payments(platform) == [(50, CrowdPayout.SENT, "bulk1"), (10, CrowdPayout.SENT, "bulk1")]
    # Nothing is owed now: paying again pays nobody twice.
    with pytest.raises(InvalidInput) as caught:
        await service.pay(platform, owner, study.row.id)
    assert caught.value.field_errors[0].rule == "nothing_owed"
    # New verified work is owed, and only it is paid next time.
    more = await _write(platform, writer, 9)
    await validation.validate(platform, owner, more.id, "CORRECT")
    prolific.requests.clear()
    assert (await service.pay(platform, owner, study.row.id)).amount == 50
    assert prolific.requests[0][2] == {"study_id": STUDY, "csv_bonuses": "aaaa,0.50\n"}


async def test_payouts_that_fail(platform, owner, study, prolific, monkeypatch):
    writer, _ = await _work(platform, owner)
    # Refused at set-up: nothing paid, nothing recorded, the study is free for the next try.
    prolific.mode = "refuse"
    with pytest.raises(InvalidInput) as caught:
        await service.pay(platform, owner, study.row.id)
    assert caught.value.field_errors[0].rule == "payout"
    assert "Insufficient balance" in caught.value.field_errors[0].message
    assert await _payments(platform) == []
    # The pay request fails: it may have paid, so the amounts count as paid (uncertain) and are not sent again.
    prolific.mode = "fail"
    with pytest.raises(InvalidInput) as caught:
        await service.pay(platform, owner, study.row.id)
    assert caught.value.field_errors[0].rule == "payout_uncertain"
    assert "bulk1" in caught.value.field_errors[0].message
    assert await _payments(platform) == [(50, CrowdPayout.UNCERTAIN, "bulk1"), (10, CrowdPayout.UNCERTAIN, "bulk1")]
    works = {x.row.external_id: x.work for x in (await service.study(platform, owner, study.row.id)).participants}
    assert (works["aaaa"].paid, works["aaaa"].uncertain, works["aaaa"].owed) == (50, 50, 0)
    # Without the operator's token the server says how to pay by hand.
    more = await _write(platform, writer, 9)
    await validation.validate(platform, owner, more.id, "CORRECT")
    monkeypatch.delenv(API_TOKEN_VARIABLE)
    with pytest.raises(InvalidInput, match="bonus file"):
        await service.pay(platform, owner, study.row.id)


async def test_one_payout_at_a_time(platform, owner, study, prolific):
    await _work(platform, owner)
    from dynaforge.db.models import CrowdStudy, utcnow  # noqa: PLC0415

    async with platform.db.write() as s:
        row = await s.get(CrowdStudy, study.row.id)
        row.paying_since = utcnow()
    with pytest.raises(AlreadyExists, match="under way"):
        await service.pay(platform, owner, study.row.id)
    assert prolific.requests == []


CREATE = """mutation($i: CreateCrowdStudyInput!) { createCrowdStudy(input: $i) { __typename
  ... on CrowdStudyCreated { study { id linkPath completionCode isOpen } }
  ... on InvalidInput { fieldErrors { field rule } } } }"""
JOIN = """mutation($i: JoinCrowdStudyInput!) { joinCrowdStudy(input: $i) { __typename
  ... on CrowdStudyJoined { isNew auth { token user { username } apiToken { origin } }
    participation { studyName taskCode platformTitle remainingExamples completionCode } }
  ... on Error { message } ... on InvalidInput { fieldErrors { field rule } } } }"""
COMPLETE = """mutation { completeCrowdStudy { __typename
  ... on CrowdStudyCompleted { participation { completionCode completionUrl work { examples } } }
  ... on InvalidInput { fieldErrors { field rule message } } } }"""
STUDIES = """query { task(code: "toy") { crowdStudies { name owed bonusFile participants {
  username externalId completedAt work { examples fooled verifiedFooling earned owed timeTakenMs } } } } }"""


async def test_graphql_contract(gql, platform):
    owner, owner_id = await register_user(gql, "boss")
    await tasks.grant_ownership(platform, Actor.system(), "toy", parse_id(owner_id, "id", "User"))
    platforms = await gql("{ crowdPlatforms { name title parameters pays } }", token=None)
    assert platforms["crowdPlatforms"] == [
        {
            "name": "prolific",
            "title": "Prolific",
            "parameters": ["PROLIFIC_PID", "STUDY_ID", "SESSION_ID"],
            "pays": True,
        }
    ]
    study = {
        "taskCode": "toy",
        "platform": "prolific",
        "externalId": STUDY,
        "name": "Fool it",
        "completionCode": "DONE42",
        "payPerVerifiedFooling": 75,
        "minimumExamples": 1,
    }
    created = (await gql(CREATE, {"i": study}, token=owner))["createCrowdStudy"]
    assert created["__typename"] == "CrowdStudyCreated"
    assert created["study"]["linkPath"] == (
        f"/crowd/prolific/{STUDY}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}"
        "&SESSION_ID={{%SESSION_ID%}}"
    )
    refused = (await gql(CREATE, {"i": {**study, "platform": "nowhere"}}, token=owner))["createCrowdStudy"]
    assert refused == {"__typename": "InvalidInput", "fieldErrors": [{"field": ["platform"], "rule": "choice"}]}

    parameters = [{"name": k, "value": v} for k, v in _link("60aa11").items()]
    joined = (await gql(JOIN, {"i": {"platform": "prolific", "study": STUDY, "parameters": parameters}}, token=None))[
        "joinCrowdStudy"
    ]
    assert joined["__typename"] == "CrowdStudyJoined" and joined["isNew"]
    assert joined["auth"]["apiToken"]["origin"] == "CROWD"
    assert joined["participation"] == {
        "studyName": "Fool it",
        "taskCode": "toy",
        "platformTitle": "Prolific",
        "remainingExamples": 1,
        "completionCode": None,
    }
    token = joined["auth"]["token"]
    mine = await gql("{ crowdParticipation { username minimumExamples } }", token=token)
    assert mine["crowdParticipation"] == {"username": joined["auth"]["user"]["username"], "minimumExamples": 1}
    assert (await gql("{ crowdParticipation { username } }", token=owner))["crowdParticipation"] is None
    assert (await gql("{ crowdParticipation { username } }", token=None))["crowdParticipation"] is None

    early = (await gql(COMPLETE, token=token))["completeCrowdStudy"]
    assert early["__typename"] == "InvalidInput" and early["fieldErrors"][0]["rule"] == "minimum"
    written = await gql(
        'mutation { createExample(input: {taskCode: "toy", fields: {text: "good news", label: "bad"}, '
        "timeTakenMs: 4000}) { __typename } }",
        token=token,
    )
    assert written["createExample"]["__typename"] == "ExampleCreated"
    done = (await gql(COMPLETE, token=token))["completeCrowdStudy"]
    assert done["participation"] == {
        "completionCode": "DONE42",
        "completionUrl": "https://app.prolific.com/submissions/complete?cc=DONE42",
        "work": {"examples": 1},
    }
    assert (await gql(COMPLETE, token=owner))["completeCrowdStudy"]["__typename"] == "Forbidden"

    seen = (await gql(STUDIES, token=owner))["task"]["crowdStudies"]
    assert seen[0]["owed"] == 0 and seen[0]["bonusFile"] == ""
    [participant] = seen[0]["participants"]
    assert participant["externalId"] == "60aa11" and participant["completedAt"] is not None
    assert participant["work"] == {
        "examples": 1,
        "fooled": 1,
        "verifiedFooling": 0,
        "earned": 0,
        "owed": 0,
        "timeTakenMs": 4000,
    }
    hidden = await gql(STUDIES, token=token, expect_errors=True)
    assert hidden["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    # Another session of the same participant is refused, with a message that says what to do.
    other = [{"name": k, "value": v} for k, v in _link("60aa11", session="x2").items()]
    again = (await gql(JOIN, {"i": {"platform": "prolific", "study": STUDY, "parameters": other}}, token=None))[
        "joinCrowdStudy"
    ]
    assert again["__typename"] == "Forbidden" and "session" in again["message"]


class LabPool(CrowdPlatform):
    """The plugin guide's example platform: a lab's pool whose links carry ?pid=...&visit=..."""

    name = "labpool"
    title = "Lab pool"
    parameters = ("pid", "visit")

    def arrival(self, parameters):
        pid, visit = parameters.get("pid", ""), parameters.get("visit", "")
        if not (pid.isalnum() and visit.isalnum()):
            raise ValueError("the link has no pid or visit: open the study from the pool's page")
        return Arrival(participant=pid, session=visit, study=None)


class PoolPlugin:
    def __init__(self, *platforms):
        self.platforms = platforms

    @hookimpl
    def register_crowd_platforms(self, register):
        for platform in self.platforms:
            register(platform)


def test_register_crowd_platforms_adds_platforms_and_refuses_bad_ones():
    plugins = Plugins(allowlist=set(), extra=[PoolPlugin(LabPool())])
    assert sorted(plugins.registry.crowd_platforms) == ["labpool", "prolific"]
    bad = LabPool()
    bad.name = "Lab Pool"
    broken = Plugins(allowlist=set(), extra=[PoolPlugin(bad)])
    assert "labpool" not in broken.registry.crowd_platforms
    assert any("lowercase letters" in error for error in broken.errors.values())
    twice = Plugins(allowlist=set(), extra=[PoolPlugin(type("Again", (LabPool,), {"name": "prolific"})())])
    assert any("already registered" in error for error in twice.errors.values())


async def test_register_crowd_platforms_a_plugin_platform_signs_participants_in(db, settings):
    plugins = Plugins(allowlist=set(), extra=[ToyPlugin(), PoolPlugin(LabPool())])
    p = Platform.create(settings, db=db, plugins=plugins)
    await tasks.sync_registered_tasks(p)
    owner = await make_user(p, "user_owner")
    await tasks.grant_ownership(p, Actor.system(), "toy", owner.user_id)
    await service.create_study(p, owner, "toy", platform="labpool", external_id="spring", name="S", completion_code="K")
    joined = await service.join(p, "labpool", "spring", {"pid": "p1", "visit": "v1"})
    assert joined.participation.participant.username.startswith("labpool-")
    assert joined.participation.study.link_path == "/crowd/labpool/spring"
    assert joined.participation.completion_url is None  # the pool takes the code typed
    with pytest.raises(InvalidInput, match="pool's page"):
        await service.join(p, "labpool", "spring", {"pid": "p1"})


async def test_bonuses_paid_by_hand_are_recorded_and_not_owed_again(platform, owner, study, prolific):
    await _work(platform, owner)
    _, csv = await service.bonus_file(platform, owner, study.row.id)
    rows = [Bonus(pid, round(float(amount) * 100)) for pid, amount in (line.split(",") for line in csv.splitlines())]
    with pytest.raises(InvalidInput) as caught:
        await service.record_payout(
            platform,
            owner,
            study.row.id,
            "bulk-by-hand",
            [*rows, Bonus("aaaa", 1), Bonus("zzzz", 5), Bonus("bbbb", 11)],
        )
    assert sorted((e.field, e.rule) for e in caught.value.field_errors) == [
        ("bonuses[2].participant", "repeated"),
        ("bonuses[3].participant", "not_found"),
        ("bonuses[4].participant", "repeated"),
    ]
    with pytest.raises(InvalidInput) as caught:
        await service.record_payout(platform, owner, study.row.id, "bulk-by-hand", [Bonus("aaaa", 51)])
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("bonuses[0].amount", "range")]
    assert await _payments(platform) == []  # all or nothing
    recorded = await service.record_payout(platform, owner, study.row.id, " bulk-by-hand ", rows)
    assert (recorded.reference, recorded.participants, recorded.amount) == ("bulk-by-hand", 2, 60)
    assert await _payments(platform) == [
        (50, CrowdPayout.MANUAL, "bulk-by-hand"),
        (10, CrowdPayout.MANUAL, "bulk-by-hand"),
    ]
    # Nothing is owed now: the API pays nobody, and the file is empty.
    with pytest.raises(InvalidInput, match="nobody is owed"):
        await service.pay(platform, owner, study.row.id)
    assert (await service.bonus_file(platform, owner, study.row.id))[1] == ""
    assert prolific.requests == []
    with pytest.raises(Forbidden):
        await service.record_payout(platform, await make_user(platform, "user_nosy"), study.row.id, "x", rows)
