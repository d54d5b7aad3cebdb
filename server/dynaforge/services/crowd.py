"""Crowd studies: owners recruit paid participants on a crowd platform (dynaforge.crowd), who join through the
study's link, work in the task under a pseudonymous account, finish with a completion code and are paid a bonus per
verified fooling example and per validation that agrees with the decision.

- **Studies** belong to a task; its owners and admins create them (``create_study``), close and reopen them
  (``set_open``) and read them with each participant's work and pay (``studies``, ``work``).
- **Joining** (``join``): the platform reads its URL parameters; a new participant gets an account of their own for
  this study (username ``<platform>-<8 hex>``, no password, no e-mail: nobody can sign in to it but through the
  link) and every join a fresh API token, returned in the response and never in a URL. A participant who joined in
  one session of the platform is refused under another, so a participant id alone does not open their account. A
  closed study takes nobody new, and those who joined may still finish. New participants count against the
  per-address registration limit.
- **Completing** (``complete``): once the participant did the study's minimum work, the completion code and the URL
  back to the platform; asking again gives the same.
- **Pay** is computed from the work as it stands: ``pay_per_verified_fooling`` for each of the participant's examples
  in the task that fooled the model and was accepted (what vMER counts), ``pay_per_agreeing_validation`` for each of
  their votes that points the way the example was decided (dynaforge.services.validator_quality.agrees), less what
  was paid (or may have been: an uncertain payout counts as paid). Pending work is shown and paid once decided.
- **Paying** (``pay``): one payout per study at a time (a guarded update, across replicas). The platform pays what is
  owed through its API, and each participant's share is recorded in the same transaction that releases the study;
  ``bonus_file`` gives the same amounts as the file the platform takes, for owners who pay there by hand; they then
  record what they paid (``record_payout``: the rows of the file they uploaded), so that nothing is paid twice.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import case, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from dynaforge.crowd import Bonus, CrowdPlatform, PayoutFailed
from dynaforge.db.models import (
    CrowdParticipant,
    CrowdPayment,
    CrowdPayout,
    CrowdStudy,
    Example,
    TokenOrigin,
    User,
    Validation,
    utcnow,
)
from dynaforge.db.models import ExampleStatus as S
from dynaforge.errors import AlreadyExists, FieldError, Forbidden, InvalidInput, NotFound
from dynaforge.outbound import OutboundPolicy
from dynaforge.services import auth as auth_service
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human
from dynaforge.services.platform import Platform
from dynaforge.services.ratelimit import client_key
from dynaforge.services.validator_quality import agrees

MAX_NAME = 200
MAX_PAY = 10_000  # minor units per item: 100.00 in the study's currency
MAX_MINIMUM = 1000
#: a payout that has not released its study after this long is taken to have died with its process
PAYOUT_STALE = timedelta(minutes=10)
_EXTERNAL_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_CODE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_CURRENCY = re.compile(r"^[A-Z]{3}$")
#: waiting for the model or a verdict; a CREATED example waits for validators only if it fooled the model
_WAITING = (S.PENDING_PREDICTION, S.PENDING_VERDICT)


@dataclass
class Work:
    """One participant's work in their study's task and what it earned (amounts in minor units)."""

    examples: int = 0
    fooled: int = 0
    verified_fooling: int = 0
    pending_examples: int = 0
    validations: int = 0
    agreeing_validations: int = 0
    pending_validations: int = 0
    time_taken_ms: int = 0
    earned: int = 0
    paid: int = 0
    uncertain: int = 0  # of ``paid``, what an uncertain payout counts

    @property
    def owed(self) -> int:
        return max(0, self.earned - self.paid)


@dataclass(frozen=True)
class Participant:
    row: CrowdParticipant
    username: str
    work: Work


@dataclass(frozen=True)
class Study:
    row: CrowdStudy
    task_code: str
    platform: CrowdPlatform | None  # None: its plugin is not loaded any more
    participants: list[Participant] = field(default_factory=list)

    @property
    def link_path(self) -> str | None:
        return None if self.platform is None else self.platform.link_path(self.row.external_id)


@dataclass(frozen=True)
class Participation:
    """A participant's own view: their study, their work, and the completion once they finished."""

    study: Study
    participant: Participant

    @property
    def remaining_examples(self) -> int:
        return max(0, self.study.row.minimum_examples - self.participant.work.examples)

    @property
    def remaining_validations(self) -> int:
        return max(0, self.study.row.minimum_validations - self.participant.work.validations)

    @property
    def completion_code(self) -> str | None:
        return self.study.row.completion_code if self.participant.row.completed_at is not None else None

    @property
    def completion_url(self) -> str | None:
        code = self.completion_code
        return None if code is None or self.study.platform is None else self.study.platform.completion_url(code)


@dataclass(frozen=True)
class Joined:
    participation: Participation
    token: str
    is_new: bool


@dataclass(frozen=True)
class Payout:
    reference: str
    participants: int
    amount: int


def platforms(p: Platform) -> list[CrowdPlatform]:
    return sorted(p.plugins.registry.crowd_platforms.values(), key=lambda c: c.name)


def _platform(p: Platform, name: str, field_name: str = "platform") -> CrowdPlatform:
    found = p.plugins.registry.crowd_platforms.get(name)
    if found is None:
        known = ", ".join(c.name for c in platforms(p)) or "none"
        raise InvalidInput.from_errors(
            [FieldError(field_name, "choice", f"is not a crowd platform this server knows (it knows: {known})")]
        )
    return found


async def _owned_task(p: Platform, actor: Actor, task_code: str) -> task_service.TaskView:
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    if not await task_service.owns_task(p, actor, view.row.id):
        raise Forbidden(f"Only owners of {view.task.code} and admins run its crowd studies")
    return view


async def _owned_study(p: Platform, actor: Actor, study_id: int) -> tuple[task_service.TaskView, CrowdStudy]:
    require_human(actor)
    async with p.db.session() as s:
        row = await s.get(CrowdStudy, study_id)
    if row is None:
        raise NotFound(f"No crowd study {study_id}")
    view = await task_service.visible_task(p, actor, row.task_id)
    if not await task_service.owns_task(p, actor, view.row.id):
        raise Forbidden(f"Only owners of {view.task.code} and admins run its crowd studies")
    return view, row


def _check_study(
    *,
    external_id: str,
    name: str,
    completion_code: str,
    currency: str,
    pay_per_verified_fooling: int,
    pay_per_agreeing_validation: int,
    minimum_examples: int,
    minimum_validations: int,
) -> list[FieldError]:
    errors = []
    if not _EXTERNAL_ID.match(external_id):
        errors.append(
            FieldError(
                "externalId", "format", "must be the platform's id for the study: 1 to 64 letters, digits, _ or -"
            )
        )
    if not name.strip() or len(name) > MAX_NAME:
        errors.append(FieldError("name", "length", f"must have 1 to {MAX_NAME} characters"))
    if not _CODE.match(completion_code):
        errors.append(
            FieldError(
                "completionCode", "format", "must be the platform's completion code: 1 to 64 letters, digits, _ or -"
            )
        )
    if not _CURRENCY.match(currency):
        errors.append(FieldError("currency", "format", "must be an ISO 4217 code in capitals, such as GBP or USD"))
    for name_, value in (
        ("payPerVerifiedFooling", pay_per_verified_fooling),
        ("payPerAgreeingValidation", pay_per_agreeing_validation),
    ):
        if not 0 <= value <= MAX_PAY:
            errors.append(FieldError(name_, "range", f"must be 0 to {MAX_PAY} (minor units: pence, cents)"))
    for name_, value in (("minimumExamples", minimum_examples), ("minimumValidations", minimum_validations)):
        if not 0 <= value <= MAX_MINIMUM:
            errors.append(FieldError(name_, "range", f"must be 0 to {MAX_MINIMUM}"))
    return errors


async def create_study(
    p: Platform,
    actor: Actor,
    task_code: str,
    *,
    platform: str,
    external_id: str,
    name: str,
    completion_code: str,
    currency: str = "GBP",
    pay_per_verified_fooling: int = 0,
    pay_per_agreeing_validation: int = 0,
    minimum_examples: int = 0,
    minimum_validations: int = 0,
) -> Study:
    """A new open study of the task; its owners and admins only."""
    view = await _owned_task(p, actor, task_code)
    crowd = _platform(p, platform)
    external_id, completion_code, currency = external_id.strip(), completion_code.strip(), currency.strip()
    errors = _check_study(
        external_id=external_id,
        name=name,
        completion_code=completion_code,
        currency=currency,
        pay_per_verified_fooling=pay_per_verified_fooling,
        pay_per_agreeing_validation=pay_per_agreeing_validation,
        minimum_examples=minimum_examples,
        minimum_validations=minimum_validations,
    )
    if errors:
        raise InvalidInput.from_errors(errors)
    row = CrowdStudy(
        task_id=view.row.id,
        platform=crowd.name,
        external_id=external_id,
        name=name.strip(),
        completion_code=completion_code,
        currency=currency,
        pay_per_verified_fooling=pay_per_verified_fooling,
        pay_per_agreeing_validation=pay_per_agreeing_validation,
        minimum_examples=minimum_examples,
        minimum_validations=minimum_validations,
        created_by=actor.person_id,
    )
    taken = f"{crowd.title or crowd.name} study {external_id} already has a study here: use that one"
    try:
        async with p.db.write() as s:
            if await s.scalar(
                select(func.count())
                .select_from(CrowdStudy)
                .where(col(CrowdStudy.platform) == crowd.name, col(CrowdStudy.external_id) == external_id)
            ):
                raise AlreadyExists(taken)
            s.add(row)
    except IntegrityError as exc:
        raise AlreadyExists(taken) from exc
    return Study(row, view.task.code, crowd)


async def set_open(p: Platform, actor: Actor, study_id: int, is_open: bool) -> Study:
    """Close a study to new participants (those who joined may still finish), or open it again."""
    view, row = await _owned_study(p, actor, study_id)
    async with p.db.write() as s:
        stored = await s.get(CrowdStudy, study_id)
        if stored is None:
            raise NotFound(f"No crowd study {study_id}")
        stored.is_open = is_open
        row = stored
    return await _with_participants(p, row, view.task.code)


async def studies(p: Platform, actor: Actor, task_code: str) -> list[Study]:
    """The task's studies, newest first, with every participant's work; its owners and admins only."""
    view = await _owned_task(p, actor, task_code)
    async with p.db.session() as s:
        rows = list(
            await s.scalars(
                select(CrowdStudy).where(col(CrowdStudy.task_id) == view.row.id).order_by(col(CrowdStudy.id).desc())
            )
        )
    return [await _with_participants(p, row, view.task.code) for row in rows]


async def study(p: Platform, actor: Actor, study_id: int) -> Study:
    view, row = await _owned_study(p, actor, study_id)
    return await _with_participants(p, row, view.task.code)


async def _with_participants(p: Platform, row: CrowdStudy, task_code: str) -> Study:
    async with p.db.session() as s:
        found = list(
            await s.execute(
                select(CrowdParticipant, col(User.username))
                .join(User, col(User.id) == col(CrowdParticipant.user_id))
                .where(col(CrowdParticipant.study_id) == row.id)
                .order_by(col(CrowdParticipant.id))
            )
        )
    works = await work(p, row, [participant for participant, _ in found])
    participants = [Participant(participant, username, works[participant.id]) for participant, username in found]
    return Study(row, task_code, p.plugins.registry.crowd_platforms.get(row.platform), participants)


async def work(p: Platform, study: CrowdStudy, participants: list[CrowdParticipant]) -> dict[int, Work]:
    """Each participant's work in the study's task and their pay, keyed by participant id: three grouped queries."""
    by_user = {participant.user_id: participant.id for participant in participants}
    works = {participant.id: Work() for participant in participants}
    if not participants:
        return works
    users = list(by_user)
    fooled = col(Example.fooled).is_(True)
    async with p.db.session() as s:
        for user_id, examples, fooled_n, verified, pending, time_ms in await s.execute(
            select(
                col(Example.user_id),
                func.count(),
                func.sum(case((fooled, 1), else_=0)),
                func.sum(case(((col(Example.status) == S.ACCEPTED) & fooled, 1), else_=0)),
                func.sum(
                    case(
                        (col(Example.status).in_(_WAITING) | ((col(Example.status) == S.CREATED) & fooled), 1), else_=0
                    )
                ),
                func.sum(func.coalesce(col(Example.time_taken_ms), 0)),
            )
            .where(col(Example.task_id) == study.task_id, col(Example.user_id).in_(users))
            .group_by(col(Example.user_id))
        ):
            w = works[by_user[user_id]]
            w.examples, w.fooled, w.verified_fooling = int(examples), int(fooled_n or 0), int(verified or 0)
            w.pending_examples, w.time_taken_ms = int(pending or 0), int(time_ms or 0)
        for user_id, label, status, time_ms in await s.execute(
            select(col(Validation.user_id), col(Validation.label), col(Example.status), col(Validation.time_taken_ms))
            .join(Example, col(Example.id) == col(Validation.example_id))
            .where(
                col(Example.task_id) == study.task_id,
                col(Validation.user_id).in_(users),
                col(Validation.by_owner).is_(False),
            )
        ):
            w = works[by_user[user_id]]
            w.validations += 1
            w.time_taken_ms += int(time_ms or 0)
            verdict = agrees(label, status)
            if verdict is None:
                w.pending_validations += 1
            elif verdict:
                w.agreeing_validations += 1
        for participant_id, paid, uncertain in await s.execute(
            select(
                col(CrowdPayment.participant_id),
                func.sum(col(CrowdPayment.amount)),
                func.sum(case((col(CrowdPayment.status) == CrowdPayout.UNCERTAIN, col(CrowdPayment.amount)), else_=0)),
            )
            .where(col(CrowdPayment.participant_id).in_(list(works)))
            .group_by(col(CrowdPayment.participant_id))
        ):
            works[participant_id].paid, works[participant_id].uncertain = int(paid or 0), int(uncertain or 0)
    for w in works.values():
        w.earned = (
            w.verified_fooling * study.pay_per_verified_fooling
            + w.agreeing_validations * study.pay_per_agreeing_validation
        )
    return works


async def join(
    p: Platform, platform: str, external_study: str, parameters: Mapping[str, str], client: str | None = None
) -> Joined:
    """Sign a participant who followed a study's link into their pseudonymous account of the study (a new one on
    their first visit) and issue a token for it."""
    crowd = _platform(p, platform)
    async with p.db.session() as s:
        row = await s.scalar(
            select(CrowdStudy).where(
                col(CrowdStudy.platform) == crowd.name, col(CrowdStudy.external_id) == str(external_study)
            )
        )
    if row is None:
        raise NotFound(f"No {crowd.title or crowd.name} study {external_study} here: check the study's URL")
    try:
        arrival = crowd.arrival(parameters)
    except ValueError as exc:
        raise InvalidInput.from_errors([FieldError("parameters", "arrival", str(exc))]) from exc
    if arrival.study is not None and arrival.study != row.external_id:
        raise InvalidInput.from_errors(
            [FieldError("parameters", "study", "the link is for another study: open this study from the platform")]
        )
    participant = await _participant_of(p, row.id, arrival.participant)
    is_new = participant is None
    if participant is None:
        if not row.is_open:
            raise Forbidden("This study is closed: it takes no new participants")
        if client:
            await p.limiter.hit(
                f"register-client:{client_key(client)}",
                p.settings.registrations_per_hour_per_client,
                3600.0,
                "new accounts from your address",
            )
        participant = await _new_participant(p, crowd, row, arrival.participant, arrival.session)
    # (a first visit that lost a race to another of the same participant meets the winner's session here)
    if participant.session_id is not None and arrival.session != participant.session_id:
        raise Forbidden(
            "You joined this study in another session: go back to the platform and open the study from the session "
            "you started"
        )
    async with p.db.session() as s:
        user = await s.get(User, participant.user_id)
    if user is None or not user.is_active:
        raise Forbidden("This participant's account is disabled: contact the study's researchers")
    _, token = await auth_service.issue_token(p, participant.user_id, "crowd study", TokenOrigin.CROWD)
    return Joined(await _participation(p, row, participant, user.username), token, is_new)


async def _participant_of(p: Platform, study_id: int, external_id: str) -> CrowdParticipant | None:
    async with p.db.session() as s:
        return await s.scalar(
            select(CrowdParticipant).where(
                col(CrowdParticipant.study_id) == study_id, col(CrowdParticipant.external_id) == external_id
            )
        )


async def _participation(p: Platform, row: CrowdStudy, participant: CrowdParticipant, username: str) -> Participation:
    """A participant's view of their study, with their work as it stands."""
    code = (await task_service.visible_task(p, Actor.system(), row.task_id)).task.code
    works = await work(p, row, [participant])
    study = Study(row, code, p.plugins.registry.crowd_platforms.get(row.platform))
    return Participation(study, Participant(participant, username, works[participant.id]))


async def _new_participant(
    p: Platform, crowd: CrowdPlatform, row: CrowdStudy, external_id: str, session: str | None
) -> CrowdParticipant:
    for _ in range(3):  # a clash of 32 random bits is rare; a concurrent first visit of the same person more so
        user = User(
            username=f"{crowd.name}-{secrets.token_hex(4)}"[:40],
            email="",
            password_hash="!crowd",  # never a valid hash: nobody signs in with a password
        )
        try:
            async with p.db.write() as s:
                s.add(user)
                await s.flush()
                participant = CrowdParticipant(
                    study_id=row.id, user_id=user.id, external_id=external_id, session_id=session
                )
                s.add(participant)
            return participant
        except IntegrityError:
            existing = await _participant_of(p, row.id, external_id)
            if existing is not None:
                return existing
    raise AlreadyExists("Could not create the participant's account: try the link again")


async def participation(p: Platform, actor: Actor) -> Participation | None:
    """The signed-in user's participation in a crowd study, or None for an account that is not a participant's."""
    if actor.user_id is None:
        return None
    async with p.db.session() as s:
        found = (
            await s.execute(
                select(CrowdParticipant, CrowdStudy, col(User.username))
                .join(CrowdStudy, col(CrowdStudy.id) == col(CrowdParticipant.study_id))
                .join(User, col(User.id) == col(CrowdParticipant.user_id))
                .where(col(CrowdParticipant.user_id) == actor.user_id)
            )
        ).first()
    if found is None:
        return None
    participant, row, username = found
    return await _participation(p, row, participant, username)


async def complete(p: Platform, actor: Actor) -> Participation:
    """Finish the signed-in participant's study: once its minimum work is done, record when, and give the
    completion code (again, unchanged, to one who asks twice)."""
    require_human(actor)
    found = await participation(p, actor)
    if found is None:
        raise Forbidden("Only a crowd study's participants complete it: this account did not join through a study")
    if found.participant.row.completed_at is None:
        errors = []
        if found.remaining_examples:
            errors.append(
                FieldError("minimumExamples", "minimum", f"write {found.remaining_examples} more example(s) first")
            )
        if found.remaining_validations:
            errors.append(
                FieldError(
                    "minimumValidations", "minimum", f"validate {found.remaining_validations} more example(s) first"
                )
            )
        if errors:
            raise InvalidInput.from_errors(errors)
        async with p.db.write() as s:
            await s.execute(
                update(CrowdParticipant)
                .where(
                    col(CrowdParticipant.id) == found.participant.row.id, col(CrowdParticipant.completed_at).is_(None)
                )
                .values(completed_at=utcnow())
            )
        found = await participation(p, actor)
        assert found is not None
    return found


def owed_bonuses(study: Study) -> list[Bonus]:
    """What each participant is owed now, as the bonus rows a platform takes (those owed nothing left out)."""
    return [Bonus(x.row.external_id, x.work.owed) for x in study.participants if x.work.owed > 0]


async def bonus_file(p: Platform, actor: Actor, study_id: int) -> tuple[Study, str]:
    """What is owed, as the file the study's platform takes; its owners and admins only."""
    found = await study(p, actor, study_id)
    if found.platform is None:
        raise NotFound(f"The {found.row.platform} crowd platform is not loaded on this server")
    return found, found.platform.bonus_file(found.row.external_id, owed_bonuses(found), found.row.currency)


async def _hold(p: Platform, study_id: int) -> datetime:
    """Mark a payout of the study as under way (one at a time, across replicas); AlreadyExists when one is."""
    now = utcnow()
    async with p.db.write() as s:
        held = await s.execute(
            update(CrowdStudy)
            .where(
                col(CrowdStudy.id) == study_id,
                col(CrowdStudy.paying_since).is_(None) | (col(CrowdStudy.paying_since) < now - PAYOUT_STALE),
            )
            .values(paying_since=now)
        )
    if not held.rowcount:  # type: ignore[attr-defined]
        raise AlreadyExists("A payout of this study is under way: wait for it, then look at what is still owed")
    return now


async def _release(p: Platform, study_id: int, since: datetime) -> None:
    async with p.db.write() as s:
        await s.execute(
            update(CrowdStudy)
            .where(col(CrowdStudy.id) == study_id, col(CrowdStudy.paying_since) == since)
            .values(paying_since=None)
        )


MAX_REFERENCE = 100


async def record_payout(p: Platform, actor: Actor, study_id: int, reference: str, bonuses: list[Bonus]) -> Payout:
    """Record bonuses an owner paid on the platform by hand (the rows of the bonus file they uploaded there): each
    participant of the study, at most what they are owed now. All or nothing."""
    view, row = await _owned_study(p, actor, study_id)
    reference = reference.strip()
    errors = []
    if not reference or len(reference) > MAX_REFERENCE:
        errors.append(
            FieldError("reference", "length", f"must have 1 to {MAX_REFERENCE} characters: the platform's id for it")
        )
    if not bonuses:
        errors.append(FieldError("bonuses", "empty", "must list at least one participant's bonus"))
    if errors:
        raise InvalidInput.from_errors(errors)
    since = await _hold(p, study_id)
    try:
        found = await _with_participants(p, row, view.task.code)
        by_external = {x.row.external_id: x for x in found.participants}
        seen: set[str] = set()
        for n, bonus in enumerate(bonuses):
            where = f"bonuses[{n}]"
            participant = by_external.get(bonus.participant)
            if participant is None:
                errors.append(FieldError(f"{where}.participant", "not_found", "is not a participant of this study"))
            elif bonus.participant in seen:
                errors.append(FieldError(f"{where}.participant", "repeated", "is listed twice"))
            elif not 0 < bonus.amount <= participant.work.owed:
                errors.append(
                    FieldError(
                        f"{where}.amount",
                        "range",
                        f"must be 1 to {participant.work.owed}, what they are owed now (was it recorded already?)",
                    )
                )
            seen.add(bonus.participant)
        if errors:
            raise InvalidInput.from_errors(errors)
        async with p.db.write() as s:
            for bonus in bonuses:
                s.add(
                    CrowdPayment(
                        participant_id=by_external[bonus.participant].row.id,
                        amount=bonus.amount,
                        status=CrowdPayout.MANUAL,
                        reference=reference,
                        paid_by=actor.person_id,
                    )
                )
        return Payout(reference, len(bonuses), sum(b.amount for b in bonuses))
    finally:
        await _release(p, study_id, since)


async def pay(p: Platform, actor: Actor, study_id: int) -> Payout:
    """Pay what every participant is owed through the platform's API, one payout per study at a time."""
    view, row = await _owned_study(p, actor, study_id)
    crowd = p.plugins.registry.crowd_platforms.get(row.platform)
    if crowd is None:
        raise NotFound(f"The {row.platform} crowd platform is not loaded on this server")
    since = await _hold(p, study_id)
    try:
        found = await _with_participants(p, row, view.task.code)
        bonuses = owed_bonuses(found)
        if not bonuses:
            raise InvalidInput.from_errors([FieldError("studyId", "nothing_owed", "nobody is owed a bonus now")])
        by_external = {x.row.external_id: x.row.id for x in found.participants}
        status, reference, failure = CrowdPayout.SENT, None, None
        try:
            reference = await crowd.pay(
                row.external_id, bonuses, row.currency, OutboundPolicy(p.settings.outbound_allow)
            )
        except PayoutFailed as exc:
            if not exc.uncertain:
                raise InvalidInput.from_errors([FieldError("studyId", "payout", exc.message)]) from exc
            status, failure, reference = CrowdPayout.UNCERTAIN, exc, exc.reference
        async with p.db.write() as s:
            for bonus in bonuses:
                s.add(
                    CrowdPayment(
                        participant_id=by_external[bonus.participant],
                        amount=bonus.amount,
                        status=status,
                        reference=None if reference is None else str(reference)[:100],
                        paid_by=actor.person_id,
                    )
                )
        if failure is not None:
            raise InvalidInput.from_errors([FieldError("studyId", "payout_uncertain", failure.message)])
        return Payout(str(reference), len(bonuses), sum(b.amount for b in bonuses))
    finally:
        await _release(p, study_id, since)
