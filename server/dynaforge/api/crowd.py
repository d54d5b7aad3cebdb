"""Crowd study resolvers (dynaforge.services.crowd): the platforms, a task's studies for its owners
(Task.crowdStudies), a participant's own view (crowdParticipation), joining, completing and paying."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from dynaforge.api.context import Info, TaskCode
from dynaforge.api.errors import (
    AlreadyExists,
    Forbidden,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    RateLimited,
    errors_as_graphql,
    errors_as_union,
)
from dynaforge.api.mutations import AuthPayload, client_address, signed_in
from dynaforge.api.node import Node, global_id, parse_id
from dynaforge.api.task_lists import task_list
from dynaforge.crowd import Bonus
from dynaforge.db.models import as_utc
from dynaforge.errors import FieldError
from dynaforge.errors import InvalidInput as InvalidInputError
from dynaforge.services import auth as auth_service
from dynaforge.services import crowd as service


@strawberry.type(name="CrowdPlatform", description="A crowd platform this server can run studies on.")
class CrowdPlatformType:
    name: str = strawberry.field(description="Its key: what createCrowdStudy and /crowd/<name>/<study> name.")
    title: str = strawberry.field(description="How people call it.")
    parameters: list[str] = strawberry.field(description="The URL parameters its study links carry.")
    pays: bool = strawberry.field(
        description="Whether payCrowdBonuses pays through its API (otherwise: download CrowdStudy.bonusFile)."
    )


@strawberry.type(description="What a participant did in their study's task and what it earned.")
class CrowdWork:
    examples: int = strawberry.field(description="Examples written (every status).")
    fooled: int = strawberry.field(description="Of those, the ones that fooled the model.")
    verified_fooling: int = strawberry.field(
        description="Examples that fooled the model and were accepted by validators: each is paid."
    )
    pending_examples: int = strawberry.field(description="Examples still waiting for the model or the validators.")
    validations: int = strawberry.field(description="Votes cast.")
    agreeing_validations: int = strawberry.field(
        description="Votes that point the way their example was decided: each is paid."
    )
    pending_validations: int = strawberry.field(description="Votes on examples not decided yet.")
    time_taken_ms: int = strawberry.field(
        description="Time spent on examples and votes, as the participant's client measured it (milliseconds)."
    )
    earned: int = strawberry.field(description="Pay for the work so far, in the study currency's minor units.")
    paid: int = strawberry.field(
        description="Paid through payCrowdBonuses or recorded by recordCrowdBonuses (minor units), uncertain payouts "
        "included."
    )
    uncertain: int = strawberry.field(
        description="Of `paid`, what a payout whose outcome is unknown counts: check it on the platform."
    )
    owed: int = strawberry.field(description="earned − paid, never below 0 (minor units).")

    @classmethod
    def of(cls, work: service.Work) -> CrowdWork:
        return cls(
            examples=work.examples,
            fooled=work.fooled,
            verified_fooling=work.verified_fooling,
            pending_examples=work.pending_examples,
            validations=work.validations,
            agreeing_validations=work.agreeing_validations,
            pending_validations=work.pending_validations,
            time_taken_ms=work.time_taken_ms,
            earned=work.earned,
            paid=work.paid,
            uncertain=work.uncertain,
            owed=work.owed,
        )


@strawberry.type(description="A participant of a crowd study, as its task's owners see them.")
class CrowdParticipant:
    username: str = strawberry.field(description="Their pseudonymous account here.")
    external_id: str = strawberry.field(description="The platform's id for them (what its approval page shows).")
    joined_at: datetime = strawberry.field(description="When they first followed the study's link.")
    completed_at: datetime | None = strawberry.field(
        description="When they took the completion code; null while they work."
    )
    work: CrowdWork = strawberry.field(description="Their work and pay.")

    @classmethod
    def of(cls, participant: service.Participant) -> CrowdParticipant:
        row = participant.row
        return cls(
            username=participant.username,
            external_id=row.external_id,
            joined_at=as_utc(row.joined_at),
            completed_at=None if row.completed_at is None else as_utc(row.completed_at),
            work=CrowdWork.of(participant.work),
        )


@strawberry.type(
    description="A task's study on a crowd platform, as its owners and admins see it (its id is what "
    "setCrowdStudyOpen and payCrowdBonuses take)."
)
class CrowdStudy(Node):
    task_code: str = strawberry.field(description="Its task.")
    platform: str = strawberry.field(description="Its platform's name (CrowdPlatform.name).")
    external_id: str = strawberry.field(description="The platform's id for the study.")
    name: str = strawberry.field(description="Its name, shown to participants.")
    link_path: str | None = strawberry.field(
        description="Path and query of the link to paste into the platform, after the web app's address (with the "
        "platform's placeholders); null when the platform's plugin is not loaded."
    )
    completion_code: str = strawberry.field(description="The code participants get once they finish.")
    currency: str = strawberry.field(description="The currency of its pay (ISO 4217).")
    pay_per_verified_fooling: int = strawberry.field(
        description="Pay per example that fooled the model and was accepted (minor units: pence, cents)."
    )
    pay_per_agreeing_validation: int = strawberry.field(
        description="Pay per vote that agrees with the example's decision (minor units)."
    )
    minimum_examples: int = strawberry.field(description="Examples a participant writes before they may finish.")
    minimum_validations: int = strawberry.field(description="Votes a participant casts before they may finish.")
    is_open: bool = strawberry.field(description="Whether it takes new participants.")
    created_at: datetime = strawberry.field(description="When it was created.")
    participants: list[CrowdParticipant] = strawberry.field(description="Its participants, in the order they joined.")
    earned: int = strawberry.field(description="What its participants earned so far (minor units).")
    owed: int = strawberry.field(description="What they are owed now (minor units): what payCrowdBonuses would pay.")
    bonus_file: str | None = strawberry.field(
        description="What is owed now, as the bonus file the platform takes (Prolific: 'participant id,amount' lines "
        "in major units); null when the platform's plugin is not loaded."
    )

    @classmethod
    def of(cls, study: service.Study) -> CrowdStudy:
        row = study.row
        return cls(
            id=strawberry.ID(global_id("CrowdStudy", row.id)),
            task_code=study.task_code,
            platform=row.platform,
            external_id=row.external_id,
            name=row.name,
            link_path=study.link_path,
            completion_code=row.completion_code,
            currency=row.currency,
            pay_per_verified_fooling=row.pay_per_verified_fooling,
            pay_per_agreeing_validation=row.pay_per_agreeing_validation,
            minimum_examples=row.minimum_examples,
            minimum_validations=row.minimum_validations,
            is_open=row.is_open,
            created_at=as_utc(row.created_at),
            participants=[CrowdParticipant.of(x) for x in study.participants],
            earned=sum(x.work.earned for x in study.participants),
            owed=sum(x.work.owed for x in study.participants),
            bonus_file=None
            if study.platform is None
            else study.platform.bonus_file(row.external_id, service.owed_bonuses(study), row.currency),
        )


@strawberry.type(description="Your part in a crowd study: what it asks, what you did, and your completion code.")
class CrowdParticipation:
    study_name: str = strawberry.field(description="The study's name.")
    task_code: str = strawberry.field(description="The task to work in.")
    platform: str = strawberry.field(description="The platform's name.")
    platform_title: str = strawberry.field(description="How people call the platform.")
    username: str = strawberry.field(description="Your pseudonymous account here.")
    currency: str = strawberry.field(description="The currency of the pay (ISO 4217).")
    pay_per_verified_fooling: int = strawberry.field(
        description="Your pay per example that fools the model and is accepted by validators (minor units)."
    )
    pay_per_agreeing_validation: int = strawberry.field(
        description="Your pay per vote that agrees with the example's decision (minor units)."
    )
    minimum_examples: int = strawberry.field(description="Examples to write before you may finish.")
    minimum_validations: int = strawberry.field(description="Votes to cast before you may finish.")
    remaining_examples: int = strawberry.field(description="Examples still to write before you may finish.")
    remaining_validations: int = strawberry.field(description="Votes still to cast before you may finish.")
    joined_at: datetime = strawberry.field(description="When you joined.")
    completed_at: datetime | None = strawberry.field(description="When you finished; null before.")
    completion_code: str | None = strawberry.field(
        description="The code to give the platform; null until completeCrowdStudy."
    )
    completion_url: str | None = strawberry.field(
        description="The platform's page that takes the code; null until you finish, or when you type it there."
    )
    work: CrowdWork = strawberry.field(description="Your work so far and what it earned.")

    @classmethod
    def of(cls, found: service.Participation) -> CrowdParticipation:
        row, participant = found.study.row, found.participant
        crowd = found.study.platform
        return cls(
            study_name=row.name,
            task_code=found.study.task_code,
            platform=row.platform,
            platform_title=row.platform if crowd is None else (crowd.title or crowd.name),
            username=participant.username,
            currency=row.currency,
            pay_per_verified_fooling=row.pay_per_verified_fooling,
            pay_per_agreeing_validation=row.pay_per_agreeing_validation,
            minimum_examples=row.minimum_examples,
            minimum_validations=row.minimum_validations,
            remaining_examples=found.remaining_examples,
            remaining_validations=found.remaining_validations,
            joined_at=as_utc(participant.row.joined_at),
            completed_at=None if participant.row.completed_at is None else as_utc(participant.row.completed_at),
            completion_code=found.completion_code,
            completion_url=found.completion_url,
            work=CrowdWork.of(participant.work),
        )


@task_list("crowdStudies")
async def crowd_studies_of(info: Info, task_code: str) -> list[CrowdStudy]:
    """Task.crowdStudies."""
    return [CrowdStudy.of(x) for x in await service.studies(*info.context.caller, task_code)]


@strawberry.type
class CrowdQuery:
    @strawberry.field(description="The crowd platforms this server can run studies on (anyone).")
    def crowd_platforms(self, info: Info) -> list[CrowdPlatformType]:
        return [
            CrowdPlatformType(name=c.name, title=c.title or c.name, parameters=list(c.parameters), pays=c.pays)
            for c in service.platforms(info.context.platform)
        ]

    @strawberry.field(
        description="Your part in the crowd study you joined (joinCrowdStudy); null for anonymous callers and for "
        "accounts that did not join through a study."
    )
    @errors_as_graphql
    async def crowd_participation(self, info: Info) -> CrowdParticipation | None:
        found = await service.participation(*info.context.caller)
        return None if found is None else CrowdParticipation.of(found)


@strawberry.input(description="A new crowd study of a task.")
class CreateCrowdStudyInput:
    task_code: TaskCode = strawberry.field(description="The task (Task.code).")
    platform: str = strawberry.field(description="The platform (CrowdPlatform.name), such as 'prolific'.")
    external_id: str = strawberry.field(description="The platform's id for the study (1 to 64 letters, digits, _, -).")
    name: str = strawberry.field(description="Its name, shown to participants (1 to 200 characters).")
    completion_code: str = strawberry.field(
        description="The completion code the platform expects (1 to 64 letters, digits, _, -)."
    )
    currency: str = strawberry.field(default="GBP", description="The currency of its pay (ISO 4217, capitals).")
    pay_per_verified_fooling: int = strawberry.field(
        default=0, description="Pay per accepted fooling example, in minor units (pence, cents); 0 to 10000."
    )
    pay_per_agreeing_validation: int = strawberry.field(
        default=0, description="Pay per vote agreeing with the decision, in minor units; 0 to 10000."
    )
    minimum_examples: int = strawberry.field(default=0, description="Examples to write before finishing; 0 to 1000.")
    minimum_validations: int = strawberry.field(default=0, description="Votes to cast before finishing; 0 to 1000.")


@strawberry.input(description="A study to close to new participants, or open again.")
class SetCrowdStudyOpenInput:
    study_id: strawberry.ID = strawberry.field(description="The study (CrowdStudy.id).")
    is_open: bool = strawberry.field(description="true: it takes new participants; false: it takes none.")


@strawberry.input(description="One URL parameter of a study link, as the web app found it.")
class CrowdParameterInput:
    name: str = strawberry.field(description="Its name, such as PROLIFIC_PID.")
    value: str = strawberry.field(description="Its value.")


@strawberry.input(description="A study link followed: its platform, study and URL parameters.")
class JoinCrowdStudyInput:
    platform: str = strawberry.field(description="The platform's name, from the link's path.")
    study: str = strawberry.field(description="The platform's id for the study, from the link's path.")
    parameters: list[CrowdParameterInput] = strawberry.field(
        description="The link's URL parameters (at most 20), such as PROLIFIC_PID, STUDY_ID and SESSION_ID."
    )


@strawberry.input(description="The study whose participants to pay what they are owed.")
class PayCrowdBonusesInput:
    study_id: strawberry.ID = strawberry.field(description="The study (CrowdStudy.id).")


@strawberry.input(description="One participant's bonus, as a row of the bonus file.")
class CrowdBonusInput:
    participant: str = strawberry.field(description="The platform's id for the participant (externalId).")
    amount: int = strawberry.field(description="The amount paid, in minor units.")


@strawberry.input(description="Bonuses an owner paid on the platform by hand, to record here.")
class RecordCrowdBonusesInput:
    study_id: strawberry.ID = strawberry.field(description="The study (CrowdStudy.id).")
    reference: str = strawberry.field(
        description="The platform's id for the payment, or a note that finds it there (1 to 100 characters)."
    )
    bonuses: list[CrowdBonusInput] = strawberry.field(
        description="The rows paid (at most 1000), each at most what the participant is owed now."
    )


@strawberry.type(description="The study is created: paste its link into the platform.")
class CrowdStudyCreated:
    study: CrowdStudy = strawberry.field(description="The study.")


@strawberry.type(description="The study now takes new participants, or no longer does.")
class CrowdStudyChanged:
    study: CrowdStudy = strawberry.field(description="The study.")


@strawberry.type(
    description="You are signed in to your account of the study: send `auth.token` as 'Authorization: Bearer "
    "<token>' (it is shown once), then work in `participation.taskCode`."
)
class CrowdStudyJoined:
    auth: AuthPayload = strawberry.field(description="The session.")
    participation: CrowdParticipation = strawberry.field(description="Your part in the study.")
    is_new: bool = strawberry.field(description="Whether this was your first visit.")


@strawberry.type(description="You finished: give the completion code to the platform (or follow completionUrl).")
class CrowdStudyCompleted:
    participation: CrowdParticipation = strawberry.field(description="Your part, with the code.")


@strawberry.type(description="The platform took the payout.")
class CrowdBonusesPaid:
    reference: str = strawberry.field(description="The platform's id for the payout.")
    participants: int = strawberry.field(description="How many participants it paid.")
    amount: int = strawberry.field(description="How much in all, in minor units.")
    study: CrowdStudy = strawberry.field(description="The study after the payout.")


@strawberry.type(description="The bonuses paid by hand are recorded: they are no longer owed.")
class CrowdBonusesRecorded:
    reference: str = strawberry.field(description="The reference given.")
    participants: int = strawberry.field(description="How many participants the record covers.")
    amount: int = strawberry.field(description="How much in all, in minor units.")
    study: CrowdStudy = strawberry.field(description="The study after the record.")


CreateCrowdStudyResult = Annotated[
    CrowdStudyCreated | InvalidInput | NotAuthenticated | Forbidden | NotFound | AlreadyExists,
    strawberry.union(
        "CreateCrowdStudyResult",
        description="CrowdStudyCreated, or the expected failures, which create nothing: InvalidInput (an unknown "
        "platform, a bad id, code, currency, pay or minimum), NotAuthenticated, Forbidden (not an owner of the task "
        "or an admin), NotFound (no such task you can see), AlreadyExists (the platform's study has one here).",
    ),
]
SetCrowdStudyOpenResult = Annotated[
    CrowdStudyChanged | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "SetCrowdStudyOpenResult",
        description="CrowdStudyChanged, or the expected failures: InvalidInput (not a CrowdStudy id), "
        "NotAuthenticated, Forbidden (not an owner of its task or an admin), NotFound.",
    ),
]
JoinCrowdStudyResult = Annotated[
    CrowdStudyJoined | InvalidInput | Forbidden | NotFound | RateLimited,
    strawberry.union(
        "JoinCrowdStudyResult",
        description="CrowdStudyJoined, or the expected failures, which sign nobody in: InvalidInput (a parameter "
        "missing or malformed, or the link of another study), Forbidden (a closed study for a new participant, "
        "another session of one who joined, a disabled account), NotFound (no such study), RateLimited (too many "
        "new participants from your address).",
    ),
]
CompleteCrowdStudyResult = Annotated[
    CrowdStudyCompleted | InvalidInput | NotAuthenticated | Forbidden,
    strawberry.union(
        "CompleteCrowdStudyResult",
        description="CrowdStudyCompleted, or the expected failures: InvalidInput (the minimum work is not done: "
        "its field errors say what is left), NotAuthenticated, Forbidden (this account did not join a study).",
    ),
]
PayCrowdBonusesResult = Annotated[
    CrowdBonusesPaid | InvalidInput | NotAuthenticated | Forbidden | NotFound | AlreadyExists,
    strawberry.union(
        "PayCrowdBonusesResult",
        description="CrowdBonusesPaid, or the expected failures: InvalidInput (nobody is owed, the platform refused "
        "and nothing was paid [rule payout], or the outcome is unknown and the amounts count as paid until someone "
        "checks on the platform [rule payout_uncertain]), NotAuthenticated, Forbidden (not an owner of its task or "
        "an admin), NotFound (no such study, or its platform is not loaded), AlreadyExists (a payout is under way).",
    ),
]
RecordCrowdBonusesResult = Annotated[
    CrowdBonusesRecorded | InvalidInput | NotAuthenticated | Forbidden | NotFound | AlreadyExists,
    strawberry.union(
        "RecordCrowdBonusesResult",
        description="CrowdBonusesRecorded, or the expected failures, which record nothing: InvalidInput (no "
        "reference, no rows, a row for someone not in the study, listed twice, or more than they are owed), "
        "NotAuthenticated, Forbidden (not an owner of its task or an admin), NotFound (no such study), AlreadyExists "
        "(a payout is under way).",
    ),
]

MAX_PARAMETERS = 20
MAX_BONUSES = 1000


@strawberry.type
class CrowdMutation:
    @strawberry.mutation(description="The task's owners and admins create a study on a crowd platform.")
    @errors_as_union
    async def create_crowd_study(
        self, info: Info, input: Annotated[CreateCrowdStudyInput, strawberry.argument(description="The study.")]
    ) -> CreateCrowdStudyResult:
        study = await service.create_study(
            *info.context.caller,
            input.task_code,
            platform=input.platform,
            external_id=input.external_id,
            name=input.name,
            completion_code=input.completion_code,
            currency=input.currency,
            pay_per_verified_fooling=input.pay_per_verified_fooling,
            pay_per_agreeing_validation=input.pay_per_agreeing_validation,
            minimum_examples=input.minimum_examples,
            minimum_validations=input.minimum_validations,
        )
        return CrowdStudyCreated(study=CrowdStudy.of(study))

    @strawberry.mutation(
        description="The task's owners and admins close a study to new participants (those who joined may still "
        "finish) or open it again."
    )
    @errors_as_union
    async def set_crowd_study_open(
        self, info: Info, input: Annotated[SetCrowdStudyOpenInput, strawberry.argument(description="The change.")]
    ) -> SetCrowdStudyOpenResult:
        study_id = parse_id(input.study_id, "studyId", "CrowdStudy")
        return CrowdStudyChanged(
            study=CrowdStudy.of(await service.set_open(*info.context.caller, study_id, input.is_open))
        )

    @strawberry.mutation(
        description="Anyone who followed a study link signs in to their pseudonymous account of the study (created "
        "on the first visit; no password, no e-mail) with a new API token. Come back from the same platform session: "
        "another session of the same participant is refused."
    )
    @errors_as_union
    async def join_crowd_study(
        self, info: Info, input: Annotated[JoinCrowdStudyInput, strawberry.argument(description="The link.")]
    ) -> JoinCrowdStudyResult:
        if len(input.parameters) > MAX_PARAMETERS:
            raise InvalidInputError.from_errors(
                [FieldError("parameters", "max_items", f"must have at most {MAX_PARAMETERS} items")]
            )
        joined = await service.join(
            info.context.platform,
            input.platform,
            input.study,
            {x.name: x.value for x in input.parameters},
            client=client_address(info),
        )
        user = await auth_service.get_user(info.context.platform, joined.participation.participant.row.user_id)
        assert user is not None
        return CrowdStudyJoined(
            auth=await signed_in(info, user, joined.token),
            participation=CrowdParticipation.of(joined.participation),
            is_new=joined.is_new,
        )

    @strawberry.mutation(
        description="A participant finishes their study once its minimum work is done, and gets the completion code "
        "(asking again gives it again)."
    )
    @errors_as_union
    async def complete_crowd_study(self, info: Info) -> CompleteCrowdStudyResult:
        return CrowdStudyCompleted(participation=CrowdParticipation.of(await service.complete(*info.context.caller)))

    @strawberry.mutation(
        description="The task's owners and admins record bonuses they paid on the platform by hand (the rows of the "
        "bonus file they uploaded there), so that they are no longer owed and never paid twice."
    )
    @errors_as_union
    async def record_crowd_bonuses(
        self, info: Info, input: Annotated[RecordCrowdBonusesInput, strawberry.argument(description="The record.")]
    ) -> RecordCrowdBonusesResult:
        study_id = parse_id(input.study_id, "studyId", "CrowdStudy")
        if len(input.bonuses) > MAX_BONUSES:
            raise InvalidInputError.from_errors(
                [FieldError("bonuses", "max_items", f"must have at most {MAX_BONUSES} items")]
            )
        rows = [Bonus(b.participant, b.amount) for b in input.bonuses]
        payout = await service.record_payout(*info.context.caller, study_id, input.reference, rows)
        study = await service.study(*info.context.caller, study_id)
        return CrowdBonusesRecorded(
            reference=payout.reference,
            participants=payout.participants,
            amount=payout.amount,
            study=CrowdStudy.of(study),
        )

    @strawberry.mutation(
        description="The task's owners and admins pay every participant what they are owed through the platform's "
        "API (one payout per study at a time; what is paid is recorded, so paying again pays only new work)."
    )
    @errors_as_union
    async def pay_crowd_bonuses(
        self, info: Info, input: Annotated[PayCrowdBonusesInput, strawberry.argument(description="The study.")]
    ) -> PayCrowdBonusesResult:
        study_id = parse_id(input.study_id, "studyId", "CrowdStudy")
        payout = await service.pay(*info.context.caller, study_id)
        study = await service.study(*info.context.caller, study_id)
        return CrowdBonusesPaid(
            reference=payout.reference,
            participants=payout.participants,
            amount=payout.amount,
            study=CrowdStudy.of(study),
        )
