"""Validator quality: how often each validator agrees with decided outcomes and with owners' overrides, how much the
crowd agrees in a round (Krippendorff's alpha), and the weights owners give validators in a task's quorum.

- **Agreement with decided outcomes.** A crowd vote on an example that was then decided agrees when it points the
  same way: CORRECT on an ACCEPTED example, INCORRECT or FLAGGED on a REJECTED one. Owners' own votes are not crowd
  votes and are never scored.
- **Agreement with owners.** The subset of those examples that an owner's (or admin's) vote decided: how the
  validator's earlier vote compares with the override.
- **Krippendorff's alpha** (nominal: CORRECT, INCORRECT, FLAGGED) over a round's crowd votes, computed by the
  ``krippendorff`` package from the reliability matrix (validators by examples, missing where a validator did not
  vote); only examples with at least two crowd votes are pairable. Null when there is nothing to pair or every vote
  has the same label (alpha is undefined without variation).
- **Weights.** An owner sets each validator's weight in a task (0 to ``MAX_WEIGHT``; 1 without a row). The quorum
  then counts weights, not heads: an example is decided when the weights of its CORRECT (or INCORRECT, or FLAGGED)
  crowd votes add up to the task's quorum (``dynaforge.services.validation``). Weight 0 excludes a validator: their
  crowd queue is empty and their votes are refused, with a message saying so. A new weight applies to every
  undecided example from its next vote on; decisions already made stand.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from dynaforge.db.models import Example, Round, User, Validation, ValidatorWeight, utcnow
from dynaforge.db.models import ExampleStatus as S
from dynaforge.errors import FieldError, Forbidden, InvalidInput, NotFound
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human
from dynaforge.services.platform import Platform

MAX_WEIGHT = 10.0
MAX_WEIGHTS_PER_CALL = 500
CORRECT, INCORRECT, FLAGGED = "CORRECT", "INCORRECT", "FLAGGED"
_CODES = {CORRECT: 0, INCORRECT: 1, FLAGGED: 2}  # nominal values for the reliability matrix


@dataclass
class ValidatorStanding:
    """One validator's record in a task (or one round of it)."""

    user: User
    weight: float
    votes: int = 0  # crowd votes cast
    decided: int = 0  # of those, on examples decided since
    agreed: int = 0
    owner_decided: int = 0  # of the decided, decided by an owner's vote
    agreed_with_owner: int = 0
    time_taken_ms: list[int] = field(default_factory=list)

    @property
    def agreement(self) -> float | None:
        return self.agreed / self.decided if self.decided else None

    @property
    def owner_agreement(self) -> float | None:
        return self.agreed_with_owner / self.owner_decided if self.owner_decided else None

    @property
    def median_time_taken_ms(self) -> int | None:
        times = sorted(self.time_taken_ms)
        return times[len(times) // 2] if times else None


@dataclass
class RoundAgreement:
    round_number: int
    alpha: float | None
    units: int  # examples with at least two crowd votes
    votes: int  # crowd votes in the round


@dataclass
class ValidatorReport:
    round_number: int | None  # None: every round
    alpha: float | None
    units: int
    validators: list[ValidatorStanding]
    rounds: list[RoundAgreement]


def agrees(label: str, status: str) -> bool | None:
    """Whether a vote with ``label`` points the way ``status`` decided; None while the example is undecided."""
    if status == S.ACCEPTED:
        return label == CORRECT
    if status == S.REJECTED:
        return label in (INCORRECT, FLAGGED)
    return None


def alpha(votes: list[tuple[int, int, str]]) -> tuple[float | None, int]:
    """Krippendorff's alpha (nominal) of crowd votes given as (validator id, example id, label), and the number of
    pairable examples (two votes or more). None when alpha is undefined: nothing pairable, or one label only."""
    by_unit: dict[int, dict[int, str]] = defaultdict(dict)
    for user_id, example_id, label in votes:
        by_unit[example_id][user_id] = label
    units = sorted(u for u, labels in by_unit.items() if len(labels) >= 2)
    if not units:
        return None, 0
    labels = {by_unit[u][r] for u in units for r in by_unit[u]}
    if len(labels) < 2:
        return None, len(units)
    import krippendorff  # noqa: PLC0415  (numpy and the package load only when an owner asks)
    import numpy as np  # noqa: PLC0415

    raters = sorted({r for u in units for r in by_unit[u]})
    row = {r: i for i, r in enumerate(raters)}
    matrix = np.full((len(raters), len(units)), np.nan)
    for j, u in enumerate(units):
        for r, label in by_unit[u].items():
            matrix[row[r], j] = _CODES[label]
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")), len(units)


async def _owned_view(p: Platform, actor: Actor, task_code: str) -> task_service.TaskView:
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    if not await task_service.owns_task(p, actor, view.row.id):
        raise Forbidden(f"Only owners of {view.task.code} and admins read and weigh its validators")
    return view


async def report(p: Platform, actor: Actor, task_code: str, round_number: int | None = None) -> ValidatorReport:
    """The task's owners and admins: every crowd validator's standing in the task (or in one round), the round's
    alpha (every round's, pooled, without ``round_number``) and each round's alpha."""
    view = await _owned_view(p, actor, task_code)
    async with p.db.session() as s:
        rounds = {
            r.id: r.number
            for r in await s.scalars(select(Round).where(col(Round.task_id) == view.row.id).order_by(col(Round.number)))
        }
        if round_number is not None and round_number not in rounds.values():
            raise NotFound(f"Task {view.task.code} has no round {round_number}")
        rows = (
            await s.execute(
                select(
                    col(Validation.user_id),
                    col(Validation.example_id),
                    col(Validation.label),
                    col(Validation.by_owner),
                    col(Validation.time_taken_ms),
                    col(Validation.created_at),
                    col(Example.status),
                    col(Example.round_id),
                )
                .join(Example, col(Example.id) == col(Validation.example_id))
                .where(col(Example.task_id) == view.row.id)
                .order_by(col(Validation.id))
            )
        ).all()
        weights = await weights_of(s, view.row.id)
        users = {
            u.id: u
            for u in await s.scalars(select(User).where(col(User.id).in_({r.user_id for r in rows if not r.by_owner})))
        }
    overridden = {r.example_id for r in rows if r.by_owner and r.status in (S.ACCEPTED, S.REJECTED)}
    crowd = [r for r in rows if not r.by_owner]
    per_round: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    for r in crowd:
        per_round[rounds[r.round_id]].append((r.user_id, r.example_id, r.label))
    round_list = []
    for number in sorted(rounds.values()):
        value, units = alpha(per_round[number])
        round_list.append(RoundAgreement(number, value, units, len(per_round[number])))
    scope = crowd if round_number is None else [r for r in crowd if rounds[r.round_id] == round_number]
    pooled, units = alpha([(r.user_id, r.example_id, r.label) for r in scope])
    standings: dict[int, ValidatorStanding] = {}
    for r in scope:
        one = standings.get(r.user_id)
        if one is None:
            one = standings[r.user_id] = ValidatorStanding(users[r.user_id], weights.get(r.user_id, 1.0))
        one.votes += 1
        if r.time_taken_ms is not None:
            one.time_taken_ms.append(r.time_taken_ms)
        agreed = agrees(r.label, r.status)
        if agreed is None:
            continue
        one.decided += 1
        one.agreed += agreed
        if r.example_id in overridden:
            one.owner_decided += 1
            one.agreed_with_owner += agreed
    ordered = sorted(standings.values(), key=lambda v: (v.agreement is None, v.agreement or 0.0, v.user.username))
    return ValidatorReport(round_number, pooled, units, ordered, round_list)


async def weights_of(s: AsyncSession, task_id: int) -> dict[int, float]:
    """The task's validator weights that differ from the default (validators without a row weigh 1)."""
    rows = await s.execute(
        select(col(ValidatorWeight.user_id), col(ValidatorWeight.weight)).where(col(ValidatorWeight.task_id) == task_id)
    )
    return {user_id: weight for user_id, weight in rows.all()}


async def weight(s: AsyncSession, task_id: int, user_id: int | None) -> float:
    """One validator's weight in a task (1 without a row)."""
    if user_id is None:
        return 1.0
    value = await s.scalar(
        select(col(ValidatorWeight.weight)).where(
            col(ValidatorWeight.task_id) == task_id, col(ValidatorWeight.user_id) == user_id
        )
    )
    return 1.0 if value is None else float(value)


async def weighted_votes(s: AsyncSession, task_id: int, example_id: int) -> dict[str, float]:
    """The weights of an example's crowd votes added up per label (owners' votes are not counted: they decide
    alone)."""
    rows = await s.execute(
        select(col(Validation.label), func.sum(func.coalesce(col(ValidatorWeight.weight), 1.0)))
        .outerjoin(
            ValidatorWeight,
            (col(ValidatorWeight.user_id) == col(Validation.user_id)) & (col(ValidatorWeight.task_id) == task_id),
        )
        .where(col(Validation.example_id) == example_id, col(Validation.by_owner).is_(False))
        .group_by(col(Validation.label))
    )
    return {label: float(total or 0.0) for label, total in rows.all()}


async def set_weights(p: Platform, actor: Actor, task_code: str, entries: list[tuple[int, float]]) -> dict[int, float]:
    """The task's owners and admins set validators' weights, given as (user id, weight) pairs: 0 excludes, 1 is the
    default, at most ``MAX_WEIGHT``; all or none. Only users with a crowd vote in the task may be weighed, each once;
    a weight of 1 removes the row. Returns the task's weights that differ from 1."""
    view = await _owned_view(p, actor, task_code)
    errors = []
    if not 1 <= len(entries) <= MAX_WEIGHTS_PER_CALL:
        errors.append(FieldError("weights", "count", f"give 1 to {MAX_WEIGHTS_PER_CALL} weights"))
    seen: set[int] = set()
    for index, (user_id, value) in enumerate(entries):
        if user_id in seen:
            errors.append(FieldError(f"weights[{index}].userId", "unique", "names a validator given before"))
        seen.add(user_id)
        if not 0.0 <= value <= MAX_WEIGHT:  # NaN fails this too
            errors.append(
                FieldError(f"weights[{index}].weight", "range", f"must be between 0 (exclude) and {MAX_WEIGHT:g}")
            )
    if errors:
        raise InvalidInput.from_errors(errors)
    weights = dict(entries)
    async with p.db.write() as s:
        voters = set(
            await s.scalars(
                select(col(Validation.user_id))
                .join(Example, col(Example.id) == col(Validation.example_id))
                .where(
                    col(Example.task_id) == view.row.id,
                    col(Validation.by_owner).is_(False),
                    col(Validation.user_id).in_(list(weights)),
                )
                .distinct()
            )
        )
        strangers = [i for i, user_id in enumerate(weights) if user_id not in voters]
        if strangers:
            raise InvalidInput.from_errors(
                [
                    FieldError(
                        f"weights[{i}].userId", "not_a_validator", f"has no crowd vote in {view.task.code} to weigh"
                    )
                    for i in strangers
                ]
            )
        for user_id, value in weights.items():
            row = await s.get(ValidatorWeight, (view.row.id, user_id))
            if value == 1.0:
                if row is not None:
                    await s.delete(row)
                continue
            if row is None:
                row = ValidatorWeight(task_id=view.row.id, user_id=user_id)
                s.add(row)
            row.weight, row.set_by, row.set_at = float(value), actor.person_id, utcnow()
        await s.flush()
        return await weights_of(s, view.row.id)


async def require_counted(s: AsyncSession, view: Any, actor: Actor) -> None:
    """Forbidden for a validator the task's owners excluded (weight 0) from its crowd."""
    if await weight(s, view.row.id, actor.user_id) <= 0.0:
        raise Forbidden(
            f"The owners of {view.task.code} no longer count your validations in this task; ask them why, or "
            "validate in another task"
        )
