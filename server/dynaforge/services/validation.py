"""Validation: other people judge examples, and a quorum of their votes accepts or rejects each one.

The state machine of an example (``ExampleStatus``)::

    PENDING_PREDICTION --model answers--> CREATED (or PENDING_VERDICT, when a judge or people decide)
    PENDING_VERDICT --the task's judge decides--> CREATED                      (``verdict = "judge"``)
    PENDING_VERDICT --N x CORRECT--> ACCEPTED, fooled; --N x INCORRECT--> REJECTED, not fooled  (``"people"``)
    CREATED --N x CORRECT--> ACCEPTED           (N: the task's validation quorum, default 3, counted in validators'
                                                 weights, 1 each unless the owners set others: validator_quality)
    CREATED --N x INCORRECT or N x FLAGGED--> REJECTED
    CREATED --flagExample (author, or anyone)--> FLAGGED   (out of the crowd's queue until an owner decides)
    CREATED or FLAGGED --an owner's or admin's vote--> ACCEPTED (CORRECT) or REJECTED (INCORRECT, FLAGGED)
                       (never on their own example: nobody validates their own, so no one decides it alone)
    PENDING_PREDICTION, PENDING_VERDICT, CREATED or FLAGGED --the author retracts--> RETRACTED

On a task whose people decide (``verdict = "people"``), a vote on a PENDING_VERDICT example is a vote on the model's
output: CORRECT says the output is wrong as its author says (the example fooled the model), INCORRECT that it is
right; the decision sets ``fooled`` too, and only then do the counters count it (dynaforge.services.verdicts).

ACCEPTED, REJECTED and RETRACTED are final. Each vote and each decision is one transaction that first locks the
example's row (``SELECT ... FOR UPDATE`` on PostgreSQL; on SQLite writers are serialised), so concurrent validators
can neither vote twice nor push the example through a transition twice; the counters move with the decision
(``counters.move``).
"""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import exists, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from dynaforge.db.models import Context, Example, Round, TaskRow, Validation, ValidationSkip, as_utc, utcnow
from dynaforge.db.models import ExampleStatus as S
from dynaforge.errors import AlreadyExists, Conflict, FieldError, Forbidden, InvalidInput, NotFound
from dynaforge.services import announce, tutorial, validator_quality, verdicts
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human
from dynaforge.services.counters import move
from dynaforge.services.platform import Platform
from dynaforge.tasks.fields import Role

CORRECT, INCORRECT, FLAGGED = "CORRECT", "INCORRECT", "FLAGGED"
LABELS = (CORRECT, INCORRECT, FLAGGED)
#: The example's counter that each label's votes move.
_COUNT_OF = {CORRECT: "validations_correct", INCORRECT: "validations_incorrect", FLAGGED: "validations_flagged"}
MAX_REASON = 2000
MAX_TIME_TAKEN_MS = 24 * 3600 * 1000  # a vote's recorded time: up to one day
UNDO_VOTE_S = 15  # how long after casting it a validator may withdraw a vote (withdraw)
_SAMPLE = 16


async def example_to_validate(p: Platform, actor: Actor, task_code: str, *, owner_mode: bool = False) -> Example | None:
    """The next example for ``actor`` to validate in ``task_code``, or None when there is nothing left.

    Crowd mode: examples that fooled the model first (the others only if the task validates non-fooling examples),
    then those with the fewest votes; never the actor's own, never one they already voted on, and with the task's
    ``one_example_per_tag`` setting, at most one example per tag per validator. Examples the actor skipped come
    after all the others. Among equally good candidates the pick is the validator's own (:func:`_draw`), so that
    validators working at once spread over examples while each is served the same one on every read until they
    vote on it or skip it: a fresh draw per read would show anyone every example in the queue, gold included,
    without a vote or a skip. Owner mode (owners and admins): flagged examples first, then the crowd's queue, never
    their own examples (another owner or an admin decides those). Either way each user may read the queue
    ``VALIDATION_READS_PER_MINUTE`` times a minute (RateLimited beyond), as every read that shows gold is limited.
    """
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    await p.limiter.hit(
        f"validation-reads:{actor.user_id}",
        p.settings.validation_reads_per_minute,
        60.0,
        "reads of the validation queue",
    )
    if not owner_mode:
        await tutorial.require_qualified(p, actor, view)
    async with p.db.session() as s:
        if not owner_mode:
            await validator_quality.require_counted(s, view, actor)
        where, order = await _queue(s, actor, view, owner_mode)
        skipped = exists().where(
            col(ValidationSkip.example_id) == col(Example.id), col(ValidationSkip.user_id) == actor.user_id
        )
        rows = (
            await s.execute(
                select(Example, skipped.label("skipped")).where(*where).order_by(skipped, *order).limit(_SAMPLE)
            )
        ).all()
    if not rows:
        return None

    def rank(row: Any) -> tuple[Any, ...]:
        example = row[0]
        return (bool(row[1]), example.status, example.fooled, example.validations_total)

    first = rank(rows[0])
    return min((row[0] for row in rows if rank(row) == first), key=lambda e: _draw(actor.user_id, e.id))


def _draw(validator_id: int | None, example_id: int) -> bytes:
    """Where an example falls in one validator's order among equals: a hash of both ids, the same on every read."""
    return hashlib.sha256(f"validation-queue:{validator_id}:{example_id}".encode()).digest()


async def queue_size(p: Platform, actor: Actor, task_code: str, *, owner_mode: bool = False) -> int:
    """How many examples ``example_to_validate`` could serve ``actor`` now (the ones they skipped included)."""
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        if not owner_mode and await validator_quality.weight(s, view.row.id, actor.user_id) <= 0.0:
            return 0  # excluded by the task's owners: exampleToValidate says so
        where, _ = await _queue(s, actor, view, owner_mode)
        return int(await s.scalar(select(func.count()).select_from(Example).where(*where)) or 0)


async def _queue(s: AsyncSession, actor: Actor, view: Any, owner_mode: bool) -> tuple[list[Any], list[Any]]:
    """The conditions and the order of ``actor``'s validation queue in a task (see ``example_to_validate``)."""
    settings = view.settings
    already = exists().where(col(Validation.example_id) == col(Example.id), col(Validation.user_id) == actor.user_id)
    where = [col(Example.task_id) == view.row.id, ~already]
    if owner_mode:
        if not await task_service.is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {view.task.code} and admins can validate in owner mode")
        where += [col(Example.status).in_([S.FLAGGED, *_open(view.task)]), col(Example.user_id) != actor.user_id]
        order: list[Any] = [  # SQL expressions for order_by
            (col(Example.status) == S.FLAGGED).desc(),
            (col(Example.status) == S.PENDING_VERDICT).desc(),
            col(Example.fooled).desc(),
            col(Example.validations_total),
            col(Example.id),
        ]
        return where, order
    where += [col(Example.status).in_(_open(view.task)), col(Example.user_id) != actor.user_id]
    if not settings.validate_non_fooling:  # a verdict that waits for the validators is theirs to give
        where.append(col(Example.fooled).is_(True) | (col(Example.status) == S.PENDING_VERDICT))
    if settings.one_example_per_tag:
        seen_tags = (
            select(col(Example.tag))
            .join(Validation, col(Validation.example_id) == col(Example.id))
            .where(
                col(Validation.user_id) == actor.user_id,
                col(Example.task_id) == view.row.id,
                col(Example.tag).is_not(None),
            )
        )
        where.append(col(Example.tag).is_(None) | col(Example.tag).not_in(seen_tags.scalar_subquery()))
    waiting_first = (col(Example.status) == S.PENDING_VERDICT).desc()
    return where, [waiting_first, col(Example.fooled).desc(), col(Example.validations_total), col(Example.id)]


def _open(task: Any) -> list[str]:
    """The statuses in which an example takes the crowd's votes: CREATED, and PENDING_VERDICT where people decide."""
    return [S.CREATED, S.PENDING_VERDICT] if task.verdict == "people" else [S.CREATED]


async def skip(p: Platform, actor: Actor, example_id: int) -> Example:
    """``actor`` passes over an example in their validation queue: it is served to them again only after every
    other example (skipping it again moves it to the end again). Others' queues are unchanged; no vote is cast.

    Each skip serves the validator another example, with the gold it claims, so skips are counted: at most
    ``VALIDATION_SKIPS_PER_HOUR`` per validator and task (RateLimited beyond), and only of an example in their queue
    (the owner-mode queue for the task's owners and admins; Forbidden for any other, whose gold the answer would
    show)."""
    actor = require_human(actor)
    example, view, _, _ = await _peek(p, actor, example_id)
    async with p.db.session() as s:
        where, _ = await _queue(s, actor, view, await task_service.is_owner(s, actor, view.row.id))
        queued = await s.scalar(select(col(Example.id)).where(col(Example.id) == example_id, *where))
    if queued is None:
        raise Forbidden(
            f"Example {example_id} is not in your validation queue (your own, one you voted on, or one not awaiting "
            "your vote); skip only what exampleToValidate serves you"
        )
    await p.limiter.hit(
        f"validation-skips:{actor.user_id}:{view.task.code}",
        p.settings.validation_skips_per_hour,
        3600.0,
        f"skips in {view.task.code}",
    )
    now = utcnow()
    try:
        async with p.db.write() as s:
            row = await s.get(ValidationSkip, (actor.user_id, example_id))
            if row is None:
                s.add(ValidationSkip(user_id=actor.person_id, example_id=example_id, skipped_at=now))
            else:
                row.skipped_at = now
    except IntegrityError:
        pass  # the same skip, sent twice at once: the other one is stored
    return example


def _check_vote(label: str, reason: str | None, time_taken_ms: int | None = None) -> None:
    errors = []
    if label not in LABELS:
        errors.append(FieldError("label", "choice", f"must be one of {', '.join(LABELS)}"))
    if reason is not None and len(reason) > MAX_REASON:
        errors.append(FieldError("reason", "max_length", f"must have at most {MAX_REASON} characters"))
    if time_taken_ms is not None and not 0 <= time_taken_ms <= MAX_TIME_TAKEN_MS:
        errors.append(FieldError("timeTakenMs", "range", f"must be between 0 and one day ({MAX_TIME_TAKEN_MS} ms)"))
    if errors:
        raise InvalidInput.from_errors(errors)


def _check_correction(
    view: task_service.TaskView, example: Example, context: dict | None, label: str, corrected: Any
) -> dict | None:
    """A corrected target goes with an INCORRECT vote and must be a valid target for the example."""
    if corrected is None:
        return None
    if label != INCORRECT:
        raise InvalidInput.from_errors(
            [FieldError("correctedTarget", "label", "give a corrected target only with an INCORRECT vote")]
        )
    targets = view.task.field_names(Role.TARGET)
    if not isinstance(corrected, dict) or not corrected or set(corrected) - set(targets):
        raise InvalidInput.from_errors(
            [
                FieldError(
                    "correctedTarget",
                    "fields",
                    f"must be an object with some of the target fields {', '.join(targets)}",
                )
            ]
        )
    merged = {**example.fields, **corrected}
    try:
        cleaned = view.task.validate_example(merged, context)
    except InvalidInput as exc:
        raise InvalidInput.from_errors(
            [FieldError(f"correctedTarget.{e.field}", e.rule, e.message) for e in exc.field_errors]
        ) from exc
    return {k: cleaned[k] for k in corrected if k in cleaned}


async def _locked_example(s: AsyncSession, example_id: int) -> Example:
    """The example, re-read and locked for this transaction (PostgreSQL; SQLite writers are serialised)."""
    postgres = s.get_bind().dialect.name == "postgresql"
    example = await s.get(Example, example_id, with_for_update=postgres, populate_existing=True)
    if example is None:
        raise NotFound(f"No example {example_id}")
    return example


async def _peek(p: Platform, actor: Actor, example_id: int):
    """The example as it is now (unlocked), its task, its context's fields and its round's number."""
    async with p.db.session() as s:
        example = await s.get(Example, example_id)
        if example is None:
            raise NotFound(f"No example {example_id}")
        code = await s.scalar(select(col(TaskRow.code)).where(col(TaskRow.id) == example.task_id))
        number = await s.scalar(select(col(Round.number)).where(col(Round.id) == example.round_id))
        if code is None or number is None:  # deleted meanwhile
            raise NotFound(f"No example {example_id}")
        context = None
        if example.context_id is not None:
            row = await s.get(Context, example.context_id)
            context = dict(row.fields) if row is not None else None
    try:
        view = await task_service.get_task(p, actor, code)
    except NotFound as exc:
        raise NotFound(f"No example {example_id}") from exc
    return example, view, context, number


async def _refuse_second_vote(s: AsyncSession, example_id: int, actor: Actor) -> None:
    """AlreadyExists when ``actor`` voted on the example before (the unique constraint catches a simultaneous one)."""
    voted = await s.scalar(
        select(col(Validation.id)).where(
            col(Validation.example_id) == example_id, col(Validation.user_id) == actor.user_id
        )
    )
    if voted is not None:
        raise AlreadyExists(f"You already validated example {example_id}")


def _decision(label: str, by_owner: bool, quorum: int, weighted: dict[str, float]) -> str | None:
    """What the vote just cast decides: an owner's alone; the crowd's once the weights of one label's votes
    (``weighted``, see dynaforge.services.validator_quality) reach the quorum."""
    if by_owner:
        return S.ACCEPTED if label == CORRECT else S.REJECTED
    reached = quorum - 1e-9  # weights are floats: 0.7 + 0.3 + 2 reaches 3
    if weighted.get(CORRECT, 0.0) >= reached:
        return S.ACCEPTED
    if weighted.get(INCORRECT, 0.0) >= reached or weighted.get(FLAGGED, 0.0) >= reached:
        return S.REJECTED
    return None


async def validate(
    p: Platform,
    actor: Actor,
    example_id: int,
    label: str,
    *,
    corrected_target: Any = None,
    reason: str | None = None,
    time_taken_ms: int | None = None,
) -> Example:
    """Cast ``actor``'s vote on an example; returns the example, decided if this vote reached the quorum.
    ``time_taken_ms``: how long the validator spent on it, as the client measured it (0 to one day), stored with
    the vote.

    Raises NotFound (no such example visible), Forbidden (own example, or a non-fooling example where the task does
    not validate those), AlreadyExists (voted before), Conflict (decided or retracted meanwhile).
    """
    actor = require_human(actor)
    _check_vote(label, reason, time_taken_ms)
    peek, view, context, number = await _peek(p, actor, example_id)
    await p.limiter.hit(
        f"validations:{actor.user_id}:{view.task.code}",
        p.settings.validations_per_minute,
        60.0,
        f"validations for {view.task.code}",
    )
    await tutorial.require_qualified(p, actor, view)  # owners and admins pass
    correction = _check_correction(view, peek, context, label, corrected_target)
    settings = view.settings
    try:
        async with p.db.write() as s:
            example = await _locked_example(s, example_id)
            by_owner = await task_service.is_owner(s, actor, example.task_id)
            if example.user_id == actor.user_id:  # an owner's vote decides alone: on their own example, never
                raise Forbidden(
                    "You cannot validate your own example"
                    + ("; another owner or an admin decides it" if by_owner else "")
                    + ": ask exampleToValidate for someone else's"
                )
            allowed = (*_open(view.task), S.FLAGGED) if by_owner else tuple(_open(view.task))
            if example.status not in allowed:
                raise Conflict(
                    f"Example {example_id} is {example.status.lower()} and takes no more votes; "
                    "ask exampleToValidate for another"
                )
            waiting = example.fooled is None and view.task.verdict == "people"  # the vote decides the verdict too
            if not by_owner and not example.fooled and not waiting and not settings.validate_non_fooling:
                raise Forbidden(f"Task {view.task.code} validates only examples that fooled the model")
            await _refuse_second_vote(s, example_id, actor)
            if not by_owner:
                await validator_quality.require_counted(s, view, actor)
            s.add(
                Validation(
                    example_id=example_id,
                    user_id=actor.person_id,
                    label=label,
                    corrected_target=correction,
                    reason=reason,
                    by_owner=by_owner,
                    time_taken_ms=time_taken_ms,
                )
            )
            attribute = _COUNT_OF[label]
            setattr(example, attribute, getattr(example, attribute) + 1)
            example.validations_total += 1
            example.updated_at = utcnow()
            weighted = {}
            if not by_owner:
                await s.flush()  # the new vote counts in the sums
                weighted = await validator_quality.weighted_votes(s, example.task_id, example_id)
            decided = _decision(label, by_owner, settings.validation_quorum, weighted)
            verdict_decided = False
            if decided is not None:
                before = (example.status, example.fooled)
                example.status, example.decided_at = decided, utcnow()
                if waiting:
                    example.fooled = _people_verdict(decided, label)
                    example.fooled_at = example.decided_at if example.fooled else None
                    example.verdict = {
                        "by": "people",
                        "state": "decided",
                        "fooled": example.fooled,
                        "votes": _votes(example),
                        "by_owner": by_owner,
                        "decided_at": utcnow().isoformat(),
                    }
                    verdict_decided = True
                    await verdicts._count_context(s, example.context_id, example.fooled)
                await move(
                    s,
                    round_id=example.round_id,
                    user_id=example.user_id,
                    before=before,
                    after=(decided, example.fooled),
                )
            await s.flush()
    except IntegrityError as exc:  # the same user voting twice at the same moment
        raise AlreadyExists(f"You already validated example {example_id}") from exc
    vote = announce.validation_payload(
        example_id, label=label, user_id=actor.person_id, by_owner=by_owner, reason=reason, corrected_target=correction
    )
    await _announce(p, view.task.code, number, example, vote)
    if verdict_decided:
        await verdicts.announce_decided(p, example, view.task.code, number)
    return example


async def withdraw(p: Platform, actor: Actor, example_id: int) -> Example:
    """``actor`` takes back their vote on an example within ``UNDO_VOTE_S`` seconds of casting it, while the example
    still awaits votes (a vote that decided it, or an owner's, which always does, stays). The example's counts go
    back and it returns to the validator's queue. No event is announced: the vote's ``exampleValidated`` stands in
    the stream, and readers that keep a tally read it again from the example.

    Raises NotFound (no vote of yours on it), Conflict (the window passed, or the example was decided, flagged or
    retracted meanwhile)."""
    actor = require_human(actor)
    _, view, _, _ = await _peek(p, actor, example_id)  # NotFound for an example the actor may not see
    async with p.db.write() as s:
        example = await _locked_example(s, example_id)
        vote = await s.scalar(
            select(Validation).where(col(Validation.example_id) == example_id, col(Validation.user_id) == actor.user_id)
        )
        if vote is None:
            raise NotFound(f"You have no vote on example {example_id} to withdraw")
        if (utcnow() - as_utc(vote.created_at)).total_seconds() > UNDO_VOTE_S:
            raise Conflict(f"A vote can be withdrawn only in the {UNDO_VOTE_S} seconds after it is cast")
        if vote.by_owner or example.status not in _open(view.task):
            raise Conflict(f"Example {example_id} is {example.status.lower()}: the votes that decided it stay")
        attribute = _COUNT_OF[vote.label]
        setattr(example, attribute, getattr(example, attribute) - 1)
        example.validations_total -= 1
        example.updated_at = utcnow()
        await s.delete(vote)
        await s.flush()
    return example


def _people_verdict(decided: str, label: str) -> bool | None:
    """Whether a people-decided example fooled the model, by the vote that decided it: accepted (the output is wrong,
    as its author says) is fooled; rejected by INCORRECT is not; rejected as flagged has no verdict (it is never
    counted as collected)."""
    if decided == S.ACCEPTED:
        return True
    return None if label == FLAGGED else False


async def flag(p: Platform, actor: Actor, example_id: int, reason: str) -> Example:
    """Take an example out of the validators' queue until an owner decides: its author (say, after a mistake) or
    anyone who finds it abusive, unusable or leaking personal data. Flagging a flagged example changes nothing.

    A flag by someone other than the author is also their FLAGGED vote (so they cannot vote on it again).
    """
    actor = require_human(actor)
    reason = (reason or "").strip()
    if not 1 <= len(reason) <= MAX_REASON:
        raise InvalidInput.from_errors([FieldError("reason", "length", f"say why, in 1 to {MAX_REASON} characters")])
    _, view, _, number = await _peek(p, actor, example_id)
    await p.limiter.hit(
        f"validations:{actor.user_id}:{view.task.code}",
        p.settings.validations_per_minute,
        60.0,
        f"validations for {view.task.code}",
    )
    try:
        async with p.db.write() as s:
            example = await _locked_example(s, example_id)
            if example.status == S.FLAGGED:
                return example
            if example.status not in _open(view.task):
                raise Conflict(f"Example {example_id} is {example.status.lower()} and can no longer be flagged")
            by_owner = False  # the author's own flag is no vote
            if example.user_id != actor.user_id:
                await _refuse_second_vote(s, example_id, actor)
                by_owner = await task_service.is_owner(s, actor, example.task_id)
                s.add(
                    Validation(
                        example_id=example_id, user_id=actor.person_id, label=FLAGGED, reason=reason, by_owner=by_owner
                    )
                )
                example.validations_flagged += 1
                example.validations_total += 1
            before = (example.status, example.fooled)
            example.status, example.flag_reason, example.updated_at = S.FLAGGED, reason, utcnow()
            await move(
                s, round_id=example.round_id, user_id=example.user_id, before=before, after=(S.FLAGGED, example.fooled)
            )
            await s.flush()
    except IntegrityError as exc:
        raise AlreadyExists(f"You already validated example {example_id}") from exc
    flagged = announce.validation_payload(
        example_id, label=FLAGGED, user_id=actor.person_id, by_owner=by_owner, reason=reason
    )
    await _announce(p, view.task.code, number, example, flagged)
    return example


async def _announce(p: Platform, task_code: str, round_number: int, example: Example, vote: dict[str, Any]) -> None:
    await announce.example_validated(p, announce.example_payload(example, task_code, round_number), vote)


def _votes(example: Example) -> dict[str, int]:
    return {
        "correct": example.validations_correct,
        "incorrect": example.validations_incorrect,
        "flagged": example.validations_flagged,
    }


async def apply_correction(p: Platform, actor: Actor, validation_id: int) -> Example:
    """The task's owners (and admins) apply a validator's corrected target to the example: it is stored beside the
    example's own fields (which stay as the annotator wrote them), naming the vote it came from. Applying another
    vote's correction replaces it."""
    actor = require_human(actor)
    async with p.db.write() as s:
        vote = await s.get(Validation, validation_id)
        example = None if vote is None else await s.get(Example, vote.example_id)
        if vote is None or example is None:
            raise NotFound(f"No validation {validation_id}")
        if not await task_service.is_owner(s, actor, example.task_id):
            task = await s.get(TaskRow, example.task_id)
            if task is None or (task.hidden and not actor.is_admin):
                raise NotFound(f"No validation {validation_id}")
            raise Forbidden("Only the task's owners and admins apply corrections")
        if vote.corrected_target is None:
            raise InvalidInput.from_errors(
                [FieldError("id", "no_correction", "this vote carries no corrected target (INCORRECT votes may)")]
            )
        if example.status == S.RETRACTED:
            raise Conflict(f"Example {example.id} was retracted by its author")
        example.corrected_target = dict(vote.corrected_target)
        example.correction_id = vote.id
        example.updated_at = utcnow()
        await s.flush()
    return example
