"""Owners' analytics of a round: its collection over time, each annotator's work, and its sources.

Everything is counted from the examples and votes themselves with the counters' own rule
(:func:`dynaforge.services.counters.contribution`), so the figures add up to the round's stored counters:

- **Over time**: per hour (or day, UTC) the examples collected (by when they were written), those that fooled the
  model (by when they were found fooling) and those verified as fooling (by when they were decided). Only buckets
  with something in them are listed.
- **Per annotator**: their counters and vMER in the round, the median time they took per example (as their client
  measured it), and their crowd votes on the round's examples with how often those agreed with the decision (as
  :mod:`dynaforge.services.validator_quality` counts agreement).
- **Per source**: HUMAN, ASSISTED and MACHINE, as ``Round.statsBySource``.

For the task's owners and admins only: it names who wrote what.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from sqlalchemy import select
from sqlmodel import col

from dynaforge.db.models import Example, Round, User, Validation, as_utc
from dynaforge.errors import Forbidden, NotFound
from dynaforge.services import counters
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human
from dynaforge.services.platform import Platform
from dynaforge.services.stats import Stats
from dynaforge.services.validator_quality import agrees


class Bucket(StrEnum):
    HOUR = "hour"
    DAY = "day"


@dataclass
class Period:
    start: datetime  # UTC, the bucket's first instant
    collected: int = 0
    fooled: int = 0
    verified_fooled: int = 0


@dataclass
class Annotator:
    user: User
    stats: Stats
    times: list[int] = field(default_factory=list)
    validations: int = 0  # their crowd votes on the round's examples
    decided_validations: int = 0
    agreed_validations: int = 0

    @property
    def median_time_taken_ms(self) -> int | None:
        ordered = sorted(self.times)
        return ordered[len(ordered) // 2] if ordered else None

    @property
    def validation_agreement(self) -> float | None:
        return self.agreed_validations / self.decided_validations if self.decided_validations else None


@dataclass
class RoundAnalytics:
    round: Round
    bucket: Bucket
    periods: list[Period]
    annotators: list[Annotator]
    sources: dict[str, Stats]


def _start(moment: datetime, bucket: Bucket) -> datetime:
    moment = as_utc(moment)
    start = moment.replace(minute=0, second=0, microsecond=0)
    return start.replace(hour=0) if bucket == Bucket.DAY else start


async def round_analytics(
    p: Platform, actor: Actor, task_code: str, round_number: int, bucket: Bucket = Bucket.HOUR
) -> RoundAnalytics:
    """The round's analytics (see the module's docstring). Forbidden for anyone but the task's owners and admins;
    NotFound for a round the task does not have."""
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    round_ = await task_service.get_round(p, view.row.id, round_number)
    if round_ is None:
        raise NotFound(f"Task {view.task.code} has no round {round_number}")
    return await analytics_of(p, actor, round_, bucket)


async def analytics_of(p: Platform, actor: Actor, round_: Round, bucket: Bucket = Bucket.HOUR) -> RoundAnalytics:
    """:func:`round_analytics` of a round at hand."""
    actor = require_human(actor)
    if not await task_service.owns_task(p, actor, round_.task_id):
        raise Forbidden("Only the task's owners and admins read its rounds' analytics")
    async with p.db.session() as s:
        examples = (
            await s.execute(
                select(
                    col(Example.id),
                    col(Example.user_id),
                    col(Example.status),
                    col(Example.fooled),
                    col(Example.created_at),
                    col(Example.fooled_at),
                    col(Example.decided_at),
                    col(Example.time_taken_ms),
                ).where(col(Example.round_id) == round_.id)
            )
        ).all()
        votes = (
            await s.execute(
                select(col(Validation.user_id), col(Validation.label), col(Example.status))
                .join(Example, col(Example.id) == col(Validation.example_id))
                .where(col(Example.round_id) == round_.id, col(Validation.by_owner).is_(False))
            )
        ).all()
        people = {e.user_id for e in examples} | {v.user_id for v in votes}
        users = {u.id: u for u in await s.scalars(select(User).where(col(User.id).in_(people)))} if people else {}
        sources = await counters.by_source(s, [round_.id])

    periods: dict[datetime, Period] = {}

    def period(moment: datetime) -> Period:
        start = _start(moment, bucket)
        found = periods.get(start)
        if found is None:
            found = periods[start] = Period(start)
        return found

    per_user: dict[int, dict[str, int]] = defaultdict(lambda: dict.fromkeys(counters.COUNTERS, 0))
    times: dict[int, list[int]] = defaultdict(list)
    for e in examples:
        counted = counters.contribution(e.status, e.fooled)
        for name, value in counted.items():
            per_user[e.user_id][name] += value
        if counted["collected"]:
            period(e.created_at).collected += 1
        if counted["fooled"]:
            period(e.fooled_at or e.created_at).fooled += 1
        if counted["verified_fooled"]:
            period(e.decided_at or e.created_at).verified_fooled += 1
        if e.time_taken_ms is not None:
            times[e.user_id].append(e.time_taken_ms)
    annotators: dict[int, Annotator] = {}

    def annotator(user_id: int) -> Annotator:
        found = annotators.get(user_id)
        if found is None:
            found = annotators[user_id] = Annotator(users[user_id], Stats(**per_user[user_id]), times[user_id])
        return found

    for user_id in per_user:
        annotator(user_id)
    for v in votes:
        one = annotator(v.user_id)
        one.validations += 1
        agreed = agrees(v.label, v.status)
        if agreed is not None:
            one.decided_validations += 1
            one.agreed_validations += agreed
    ordered = sorted(annotators.values(), key=lambda a: (-a.stats.verified_fooled, -a.stats.collected, a.user.username))
    return RoundAnalytics(
        round_, bucket, [periods[k] for k in sorted(periods)], ordered, {k: Stats(**v) for k, v in sources.items()}
    )


def period_end(start: datetime, bucket: Bucket) -> datetime:
    """The first instant after a bucket that starts at ``start``."""
    return start + (timedelta(days=1) if bucket == Bucket.DAY else timedelta(hours=1))
