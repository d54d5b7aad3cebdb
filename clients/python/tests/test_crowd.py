"""Crowd studies through the client, against a real server (SQLite and PostgreSQL): an owner creates a study on
Prolific, a participant joins through its link (the web app's ``joinCrowdStudy``, sent raw) and writes an example,
the owner reads the participant's work, the bonus file and what paying says, closes the study and opens it again;
anyone else is refused. A payout the platform took is read from a canned answer (the test server has no Prolific
API token)."""

from __future__ import annotations

import httpx
import pytest

from dynaforge_client import AsyncClient, Client, errors, types

GRANT_OWNERSHIP = """mutation Grant($input: GrantTaskOwnershipInput!) {
  grantTaskOwnership(input: $input) { __typename ... on Error { message } }
}"""
JOIN = """mutation Join($input: JoinCrowdStudyInput!) {
  joinCrowdStudy(input: $input) {
    __typename
    ... on CrowdStudyJoined { isNew auth { token user { username } } participation { taskCode remainingExamples } }
    ... on Error { message }
  }
}"""


async def owner_of(server, task: str, name: str) -> AsyncClient:
    """A new user whom an admin made an owner of ``task``."""
    client = AsyncClient(server.url)
    await client.register(name, f"{name}@example.org", f"{name} password 123")
    async with AsyncClient(server.url, server.token) as admin:
        data = await admin.execute(GRANT_OWNERSHIP, {"input": {"taskCode": task, "username": name}})
    assert data["grantTaskOwnership"]["__typename"] == "TaskOwnershipChanged", data
    return client


async def join(server, study: str, pid: str, session: str = "s1") -> dict:
    """Follow the study's Prolific link as the web app's /crowd/prolific/<study> page does."""
    link = {"PROLIFIC_PID": pid, "STUDY_ID": study, "SESSION_ID": session}
    parameters = [{"name": k, "value": v} for k, v in link.items()]
    variables = {"platform": "prolific", "study": study, "parameters": parameters}
    async with AsyncClient(server.url) as anonymous:
        return (await anonymous.execute(JOIN, {"input": variables}))["joinCrowdStudy"]


async def test_an_owner_runs_a_crowd_study(server, unique):
    owner = await owner_of(server, "sentiment", f"own{unique}")
    async with owner, AsyncClient(server.url, server.token) as operator, AsyncClient(server.url) as anonymous:
        prolific = next(p for p in await anonymous.crowd_platforms() if p.name == "prolific")
        assert prolific.title == "Prolific" and prolific.pays
        assert prolific.parameters == ["PROLIFIC_PID", "STUDY_ID", "SESSION_ID"]

        external = f"st{unique}"
        study = await owner.create_crowd_study(
            "sentiment",
            platform="prolific",
            external_id=external,
            name="Fool the sentiment model",
            completion_code=f"CC{unique}",
            pay_per_verified_fooling=50,
            pay_per_agreeing_validation=10,
            minimum_examples=1,
        )
        assert (study.task_code, study.external_id, study.currency, study.is_open) == (
            "sentiment",
            external,
            "GBP",
            True,
        )
        pay = (study.pay_per_verified_fooling, study.pay_per_agreeing_validation, study.minimum_examples)
        assert pay == (50, 10, 1)
        assert study.link_path is not None and study.link_path.startswith(f"/crowd/prolific/{external}?PROLIFIC_PID=")
        assert study.participants == [] and study.owed == 0 and study.bonus_file == ""
        listed = await owner.crowd_studies("sentiment")
        assert listed[0].id == study.id  # newest first
        with pytest.raises(errors.AlreadyExists):
            await owner.create_crowd_study(
                "sentiment", platform="prolific", external_id=external, name="Again", completion_code="C2"
            )
        with pytest.raises(errors.InvalidInput) as caught:
            await owner.create_crowd_study(
                "sentiment",
                platform="prolific",
                external_id=f"other{unique}",
                name="Bad pay",
                completion_code="C3",
                currency="pounds",
                pay_per_verified_fooling=-1,
            )
        assert {e.path for e in caught.value.field_errors} == {"currency", "payPerVerifiedFooling"}

        # A participant follows the link, signs in to their pseudonymous account and writes a fooling example.
        pid = f"pid{unique}"
        joined = await join(server, external, pid)
        assert joined["__typename"] == "CrowdStudyJoined" and joined["isNew"], joined
        assert joined["participation"] == {"taskCode": "sentiment", "remainingExamples": 1}
        async with AsyncClient(server.url, joined["auth"]["token"]) as participant:
            written = await participant.create_example(
                "sentiment",
                {"statement": f"I loved every minute of this wonderful, moving film ({unique}).", "label": "negative"},
                time_taken_ms=2500,
            )
            assert written.fooled is True
            with pytest.raises(errors.Forbidden):
                await participant.crowd_studies("sentiment")

        # The owner sees who joined and their work; a fooling example still awaiting validators earns nothing yet.
        [seen] = [s for s in await owner.crowd_studies("sentiment") if s.id == study.id]
        [who] = seen.participants
        assert (who.external_id, who.username) == (pid, joined["auth"]["user"]["username"])
        assert who.completed_at is None and who.joined_at is not None
        work = who.work
        assert (work.examples, work.fooled, work.verified_fooling, work.pending_examples) == (1, 1, 0, 1)
        assert (work.time_taken_ms, work.earned, work.paid, work.owed) == (2500, 0, 0, 0)
        with pytest.raises(errors.InvalidInput) as caught:
            await owner.pay_crowd_bonuses(study)
        assert [(e.path, e.rule) for e in caught.value.field_errors] == [("studyId", "nothing_owed")]

        # Accepted (an admin's vote decides), it is owed: in the bonus file, in pounds. Paying through Prolific's API
        # needs the operator's token, which this server has not: the refusal says to upload the file instead.
        decided = await operator.validate(written, "CORRECT")
        assert decided.status.value == "ACCEPTED"
        again = await owner.crowd_study(study.id)
        assert again.participants[0].work.verified_fooling == 1 and again.owed == 50
        assert await owner.crowd_bonus_file(study) == f"{pid},0.50\n"
        with Client(server.url, owner.token) as blocking:  # the blocking client, the same surface
            assert blocking.crowd_bonus_file(study.id) == f"{pid},0.50\n"
        with pytest.raises(errors.InvalidInput, match="bonus file") as caught:
            await owner.pay_crowd_bonuses(study.id)
        assert caught.value.field_errors[0].rule == "payout"
        assert (await owner.crowd_study(study)).owed == 50  # nothing was paid
        # Paid on Prolific by hand with the file: recorded, it is owed no more.
        with pytest.raises(errors.InvalidInput) as caught:
            await owner.record_crowd_bonuses(study, "bulk-1", {pid: 51})
        assert caught.value.field_errors[0].rule == "range"
        recorded = await owner.record_crowd_bonuses(study, "bulk-1", await owner.crowd_bonus_file(study))
        assert (recorded.participants, recorded.amount, recorded.study.owed) == (1, 50, 0)
        assert recorded.study.participants[0].work.paid == 50
        assert await owner.crowd_bonus_file(study) == ""

        # Closed: nobody new joins; the participant may still come back from their session.
        closed = await owner.set_crowd_study_open(study, False)
        assert closed.is_open is False and closed.id == study.id
        refused = await join(server, external, f"new{unique}")
        assert refused["__typename"] == "Forbidden" and "closed" in refused["message"]
        back = await join(server, external, pid)
        assert back["__typename"] == "CrowdStudyJoined" and not back["isNew"]
        assert (await owner.set_crowd_study_open(study.id, True)).is_open is True


async def test_only_owners_and_admins_run_crowd_studies(server, unique):
    owner = await owner_of(server, "sentiment", f"boss{unique}")
    async with owner, AsyncClient(server.url) as stranger, AsyncClient(server.url, server.token) as admin:
        await stranger.register(f"nosy{unique}", f"nosy{unique}@example.org", "nosy's long password")
        study = await owner.create_crowd_study(
            "sentiment", platform="prolific", external_id=f"mine{unique}", name="Mine", completion_code="K1"
        )
        for attempt in (
            lambda: stranger.crowd_studies("sentiment"),
            lambda: stranger.set_crowd_study_open(study, False),
            lambda: stranger.pay_crowd_bonuses(study),
            lambda: stranger.create_crowd_study(
                "sentiment", platform="prolific", external_id=f"theirs{unique}", name="Theirs", completion_code="K2"
            ),
        ):
            with pytest.raises(errors.Forbidden):
                await attempt()
        # By its id, a study someone may not see is not there for them (``node`` answers null).
        for attempt in (lambda: stranger.crowd_study(study), lambda: stranger.crowd_bonus_file(study.id)):
            with pytest.raises(errors.NotFound):
                await attempt()
        assert study.id in {s.id for s in await admin.crowd_studies("sentiment")}  # admins see every study
        assert (await admin.set_crowd_study_open(study, False)).is_open is False
        with pytest.raises(errors.NotFound):
            await owner.create_crowd_study(
                "no-such-task", platform="prolific", external_id=f"x{unique}", name="X", completion_code="K3"
            )
        with pytest.raises(errors.InvalidInput) as caught:
            await owner.create_crowd_study(
                "sentiment", platform="nowhere", external_id=f"y{unique}", name="Y", completion_code="K4"
            )
        assert [(e.path, e.rule) for e in caught.value.field_errors] == [("platform", "choice")]


WORK = {
    "examples": 3,
    "fooled": 2,
    "verifiedFooling": 1,
    "pendingExamples": 0,
    "validations": 4,
    "agreeingValidations": 3,
    "pendingValidations": 0,
    "timeTakenMs": 9000,
    "earned": 80,
    "paid": 80,
    "uncertain": 0,
    "owed": 0,
}
STUDY = {
    "id": "Q3Jvd2RTdHVkeTox",
    "taskCode": "sentiment",
    "platform": "prolific",
    "externalId": "st1",
    "name": "A study",
    "linkPath": "/crowd/prolific/st1?PROLIFIC_PID={{%PROLIFIC_PID%}}",
    "completionCode": "C1",
    "currency": "GBP",
    "payPerVerifiedFooling": 50,
    "payPerAgreeingValidation": 10,
    "minimumExamples": 1,
    "minimumValidations": 0,
    "isOpen": True,
    "createdAt": "2026-11-30T10:00:00+00:00",
    "earned": 80,
    "owed": 0,
    "bonusFile": "",
    "participants": [
        {
            "username": "prolific-0a1b2c3d",
            "externalId": "pid1",
            "joinedAt": "2026-11-30T10:05:00+00:00",
            "completedAt": "2026-11-30T10:35:00+00:00",
            "work": WORK,
        }
    ],
}


async def test_a_payout_the_platform_took():
    """What payCrowdBonuses answers when the platform paid: the reference, how many, how much, the study after."""
    sent: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        paid = {"__typename": "CrowdBonusesPaid", "reference": "bulk7", "participants": 1, "amount": 80}
        return httpx.Response(200, json={"data": {"payCrowdBonuses": {**paid, "study": STUDY}}})

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with AsyncClient("http://dynaforge.test", "token", http_client=http) as client:
        payout: types.CrowdBonusesPaid = await client.pay_crowd_bonuses(STUDY["id"])
    assert (payout.reference, payout.participants, payout.amount) == ("bulk7", 1, 80)
    study: types.CrowdStudy = payout.study
    work: types.CrowdWork = study.participants[0].work
    assert (study.owed, work.paid, work.owed, work.agreeing_validations) == (0, 80, 0, 3)
    assert b'"studyId":"Q3Jvd2RTdHVkeTox"' in sent[0].replace(b" ", b"")
