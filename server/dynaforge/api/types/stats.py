"""Statistics types: counters, vMER, leaderboards, task settings and proposals."""

from __future__ import annotations

from datetime import datetime

import strawberry

from dynaforge.api.context import RequestContext
from dynaforge.api.node import Node, global_id
from dynaforge.db.models import TaskProposal as ProposalRow
from dynaforge.db.models import as_utc
from dynaforge.services import examples as example_service
from dynaforge.services import stats as stats_service
from dynaforge.services.tasks import TaskSettings as SettingsValue


@strawberry.type(description="Counts of examples by state. vmer = verifiedFooled / collected (null before any).")
class Stats:
    collected: int = strawberry.field(description="Examples the model answered (whatever happened to them next).")
    fooled: int = strawberry.field(description="Collected examples that fooled the model.")
    verified_fooled: int = strawberry.field(description="Fooling examples that validators accepted.")
    accepted: int
    rejected: int
    flagged: int = strawberry.field(description="Examples waiting for an owner's decision after a flag.")
    retracted: int
    pending: int = strawberry.field(description="Examples still waiting for a model prediction.")
    vmer: float | None = strawberry.field(description="Verified model error rate: verifiedFooled / collected.")
    fooling_rate: float | None = strawberry.field(description="fooled / collected.")

    @classmethod
    def of(cls, value: stats_service.Stats) -> Stats:
        return cls(
            collected=value.collected,
            fooled=value.fooled,
            verified_fooled=value.verified_fooled,
            accepted=value.accepted,
            rejected=value.rejected,
            flagged=value.flagged,
            retracted=value.retracted,
            pending=value.pending,
            vmer=value.vmer,
            fooling_rate=value.fooling_rate,
        )


@strawberry.type(description="One annotator's place on a round's leaderboard.")
class LeaderboardEntry:
    rank: int
    username: str
    user_id: strawberry.ID
    stats: Stats

    @classmethod
    def of(cls, value: stats_service.UserStats) -> LeaderboardEntry:
        return cls(
            rank=value.rank,
            username=value.username,
            user_id=global_id("User", value.user_id),
            stats=Stats.of(value.stats),
        )


@strawberry.type(description="The signed-in user's counters in one round.")
class RoundStats:
    round_number: int
    stats: Stats


@strawberry.type(description="The signed-in user's counters in a task: per round and in total.")
class UserTaskStats:
    task_code: str
    rounds: list[RoundStats]
    total: Stats

    @strawberry.field(
        description="How many more examples you may write in the task today (UTC) under its dailyExampleCap; "
        "null: the task has no cap."
    )
    async def remaining_today(self, info: strawberry.Info[RequestContext]) -> int | None:
        return await example_service.remaining_today(*info.context.caller, self.task_code)


@strawberry.type(description="What a task's owners tune.")
class TaskSettings:
    validation_quorum: int = strawberry.field(
        description="Votes of one kind that decide an example (CORRECT accepts; INCORRECT or FLAGGED rejects)."
    )
    validate_non_fooling: bool = strawberry.field(
        description="Whether examples that did not fool the model are validated too."
    )
    one_example_per_tag: bool = strawberry.field(description="At most one example per tag for each validator.")
    daily_example_cap: int | None = strawberry.field(
        description="The most examples a user may write a day (UTC); null: no cap."
    )
    context_strategy: str = strawberry.field(
        description="How nextContext picks: least_used, uniform, least_fooled, validation_failed."
    )

    @classmethod
    def of(cls, value: SettingsValue) -> TaskSettings:
        return cls(
            validation_quorum=value.validation_quorum,
            validate_non_fooling=value.validate_non_fooling,
            one_example_per_tag=value.one_example_per_tag,
            daily_example_cap=value.daily_example_cap,
            context_strategy=value.context_strategy,
        )


@strawberry.type(description="A request to run a task on the platform, decided by an admin.")
class TaskProposal(Node):
    id: strawberry.ID
    code: str
    name: str
    description: str
    status: str = strawberry.field(description="PENDING, ACCEPTED or DECLINED.")
    decision_note: str | None
    created_at: datetime
    decided_at: datetime | None

    @classmethod
    def from_row(cls, row: ProposalRow) -> TaskProposal:
        return cls(
            id=global_id("TaskProposal", row.id),
            code=row.code,
            name=row.name,
            description=row.description,
            status=row.status,
            decision_note=row.decision_note,
            created_at=as_utc(row.created_at),
            decided_at=as_utc(row.decided_at),
        )
