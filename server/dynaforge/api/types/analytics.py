"""A round's analytics for its task's owners (Round.analytics): collection over time, per annotator, per source."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

import strawberry

from dynaforge.api.types.stats import SourceStats, Stats
from dynaforge.api.types.user import User
from dynaforge.services import analytics as service


@strawberry.enum(description="The width of the periods Round.analytics counts over (UTC).")
class TimeBucket(Enum):
    HOUR = strawberry.enum_value("hour", description="One hour.")
    DAY = strawberry.enum_value("day", description="One day, from midnight UTC.")


@strawberry.type(description="What a round collected in one period.")
class CollectionPeriod:
    start: datetime = strawberry.field(description="The period's first instant (ISO 8601, UTC).")
    end: datetime = strawberry.field(description="The first instant after it.")
    collected: int = strawberry.field(description="Examples the model answered, by when they were written.")
    fooled: int = strawberry.field(description="Examples that fooled the model, by when they were found fooling.")
    verified_fooled: int = strawberry.field(
        description="Fooling examples that validators accepted, by when they were decided."
    )


@strawberry.type(description="One annotator's work in a round, for the task's owners.")
class AnnotatorActivity:
    user: User = strawberry.field(description="The annotator.")
    stats: Stats = strawberry.field(description="Their counters and vMER in the round.")
    median_time_taken_ms: int | None = strawberry.field(
        description="The median time they took per example, as their client measured it; null when none was sent."
    )
    validations: int = strawberry.field(description="Their crowd votes on the round's examples.")
    validation_agreement: float | None = strawberry.field(
        description="How often those votes agreed with the decision (0 to 1), over the decided ones; null before "
        "any is decided."
    )


@strawberry.type(
    description="A round's collection over time, per annotator and per source; counted from the examples and votes "
    "with the counters' own rules, so each column adds up to the round's stats."
)
class RoundAnalytics:
    bucket: TimeBucket = strawberry.field(description="The width of `periods`.")
    periods: list[CollectionPeriod] = strawberry.field(
        description="The periods with something in them, oldest first (a chart fills the gaps with zeros)."
    )
    annotators: list[AnnotatorActivity] = strawberry.field(
        description="Everyone who wrote an example or cast a crowd vote in the round, most verified first."
    )
    sources: list[SourceStats] = strawberry.field(description="The round's counters by where the examples came from.")

    @classmethod
    def of(cls, value: service.RoundAnalytics) -> RoundAnalytics:
        return cls(
            bucket=TimeBucket(value.bucket.value),
            periods=[
                CollectionPeriod(
                    start=p.start,
                    end=service.period_end(p.start, value.bucket),
                    collected=p.collected,
                    fooled=p.fooled,
                    verified_fooled=p.verified_fooled,
                )
                for p in value.periods
            ],
            annotators=[
                AnnotatorActivity(
                    user=User.from_row(a.user),
                    stats=Stats.of(a.stats),
                    median_time_taken_ms=a.median_time_taken_ms,
                    validations=a.validations,
                    validation_agreement=a.validation_agreement,
                )
                for a in value.annotators
            ],
            sources=SourceStats.listing(value.sources),
        )
