"""Statistics types: counters, vMER, leaderboards, task settings and proposals."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import Info
from dynaforge.api.enums import ContextStrategy, ExampleSource, ProposalStatus
from dynaforge.api.node import Node, global_id, related
from dynaforge.api.types.user import User
from dynaforge.db.models import TaskProposal as ProposalRow
from dynaforge.db.models import as_utc
from dynaforge.services import examples as example_service
from dynaforge.services import stats as stats_service
from dynaforge.services.tasks import TaskSettings as SettingsValue
from dynaforge.tasks.base import TASK_CODE_RULE


@strawberry.type(
    description="Counts of examples by state. vmer = verifiedFooled / collected (null before any). accepted, "
    "rejected, flagged, retracted and pending count the examples in that state now."
)
class Stats:
    collected: int = strawberry.field(description="Examples the model answered (whatever happened to them next).")
    fooled: int = strawberry.field(description="Collected examples that fooled the model.")
    verified_fooled: int = strawberry.field(description="Fooling examples that validators accepted.")
    accepted: int = strawberry.field(description="Examples accepted, by validators' quorum or an owner's vote.")
    rejected: int = strawberry.field(description="Examples rejected, by validators' quorum or an owner's vote.")
    flagged: int = strawberry.field(description="Examples waiting for an owner's decision after a flag.")
    retracted: int = strawberry.field(description="Examples withdrawn by their author, an owner or an admin.")
    pending: int = strawberry.field(description="Examples still waiting for a model prediction.")
    vmer: float | None = strawberry.field(
        description="Verified model error rate: verifiedFooled / collected, from 0 to 1; null before any example "
        "was collected."
    )
    fooling_rate: float | None = strawberry.field(
        description="fooled / collected, from 0 to 1; null before any example was collected."
    )

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


@strawberry.type(
    description="The counters of the examples from one source (HUMAN, ASSISTED, MACHINE), with their vMER: how "
    "often each source's examples fooled the target and were then accepted, on the same rounds."
)
class SourceStats:
    source: ExampleSource = strawberry.field(description="Where these examples came from.")
    stats: Stats = strawberry.field(description="Their counters and vMER.")

    @classmethod
    def listing(cls, by_source: dict[str, stats_service.Stats]) -> list[SourceStats]:
        return [SourceStats(source=ExampleSource(k), stats=Stats.of(v)) for k, v in by_source.items()]


@strawberry.type(description="One annotator's place on a round's leaderboard.")
class LeaderboardEntry:
    rank: int = strawberry.field(
        description="Their place, from 1 at the top of the whole board; equal counters still get distinct places, "
        "the earlier account first."
    )
    username: str = strawberry.field(description="The annotator's username.")
    user_id: strawberry.ID = strawberry.field(
        description="The annotator's User id.", deprecation_reason="Use user { id }."
    )
    stats: Stats = strawberry.field(description="The annotator's counters in this round.")
    user_key: strawberry.Private[int]

    @strawberry.field(description="The annotator; null when you may not see that account.")
    async def user(self, info: Info) -> User | None:
        found: User | None = await related(info, "User", self.user_key)
        return found

    @classmethod
    def of(cls, value: stats_service.UserStats) -> LeaderboardEntry:
        return cls(
            rank=value.rank,
            username=value.username,
            user_id=global_id("User", value.user_id),
            stats=Stats.of(value.stats),
            user_key=value.user_id,
        )


@strawberry.type(description="The signed-in user's counters in one round.")
class RoundStats:
    round_number: int = strawberry.field(description="The round's number within the task.")
    stats: Stats = strawberry.field(description="Your counters in that round: the examples you wrote there.")


@strawberry.type(description="The signed-in user's counters in a task: per round and in total.")
class UserTaskStats:
    task_code: str = strawberry.field(description="The task's code.")
    rounds: list[RoundStats] = strawberry.field(
        description="One entry per round in which you wrote an example, by round number."
    )
    total: Stats = strawberry.field(description="Your counters over every round of the task, added up.")

    @classmethod
    async def mine(cls, info: Info, task_code: str) -> UserTaskStats:
        """The caller's counters in the task (NotAuthenticated for anonymous callers)."""
        rows = await stats_service.my_stats(*info.context.caller, task_code)
        return cls(
            task_code=task_code,
            rounds=[RoundStats(round_number=n, stats=Stats.of(v)) for n, v in rows],
            total=Stats.of(stats_service.total([v for _, v in rows])),
        )

    @strawberry.field(
        description="How many more examples you may write in the task today (UTC) under its dailyExampleCap; "
        "null: the task has no cap."
    )
    async def remaining_today(self, info: Info) -> int | None:
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
    context_strategy: ContextStrategy = strawberry.field(
        description="How nextContext picks a context when the caller names no strategy."
    )
    submissions_per_day: int = strawberry.field(
        description="Scored submissions (models, predictions, selections) each user may make in any 24 hours; every "
        "attempt counts, deleted and failed ones too."
    )
    fooled_threshold: float | None = strawberry.field(
        description="The owners' threshold for the task's fooled rule, in place of the task's own "
        "(Task.fooledThreshold is the one in force); null: the task's own."
    )
    judge_rubric: str | None = strawberry.field(
        description="The owners' rubric for the task's judge model, in place of the task's own (Task.judgeRubric "
        "is the one in force); null: the task's own."
    )
    near_duplicate_threshold: float | None = strawberry.field(
        description="A new fooling example at least this similar (0.5 to 1, estimated Jaccard similarity of its "
        "text's shingles) to an earlier fooling example of its round, on the same context, is answered "
        "NearDuplicate before it is stored; null: no check."
    )
    break_reminder_minutes: int | None = strawberry.field(
        description="After this many minutes of continuous work the web app suggests a break to annotators and "
        "validators; null: no reminder."
    )
    qualification_pass_mark: float | None = strawberry.field(
        description="The score people must reach in the task's tutorial (Task.tutorial) before their examples and "
        "votes count, when it has items; null: no qualification."
    )

    @classmethod
    def of(cls, value: SettingsValue) -> TaskSettings:
        return cls(
            validation_quorum=value.validation_quorum,
            validate_non_fooling=value.validate_non_fooling,
            one_example_per_tag=value.one_example_per_tag,
            daily_example_cap=value.daily_example_cap,
            context_strategy=ContextStrategy(str(value.context_strategy)),
            submissions_per_day=value.submissions_per_day,
            fooled_threshold=value.fooled_threshold,
            judge_rubric=value.judge_rubric,
            near_duplicate_threshold=value.near_duplicate_threshold,
            qualification_pass_mark=value.qualification_pass_mark,
            break_reminder_minutes=value.break_reminder_minutes,
        )


@strawberry.type(
    description="A request to run a task on the platform, decided by an admin. Its proposer and admins can read it."
)
class TaskProposal(Node):
    code: str = strawberry.field(
        description=f"The code the task would have ({TASK_CODE_RULE}); without a definition, a plugin providing a "
        "task of that code must be installed before it can be accepted."
    )
    definition: JSON | None = strawberry.field(
        description="The task's declaration (see declaredTaskSchema) when it was proposed as data; accepting the "
        "proposal declares it. Null: a plugin's task."
    )
    name: str = strawberry.field(description="The task's proposed display name.")
    description: str = strawberry.field(description="What the proposer says the task is for; may be empty.")
    status: ProposalStatus = strawberry.field(description="Whether it waits for an admin, or how it was decided.")
    decision_note: str | None = strawberry.field(
        description="What the deciding admin wrote; null while pending or when they wrote nothing."
    )
    created_at: datetime = strawberry.field(description="When it was proposed (UTC).")
    decided_at: datetime | None = strawberry.field(description="When an admin decided it (UTC); null while pending.")
    proposer_key: strawberry.Private[int]

    @strawberry.field(description="Who proposed it; null when you may not see that account.")
    async def proposer(self, info: Info) -> User | None:
        found: User | None = await related(info, "User", self.proposer_key)
        return found

    @classmethod
    def from_row(cls, row: ProposalRow) -> TaskProposal:
        return cls(
            id=global_id("TaskProposal", row.id),
            code=row.code,
            name=row.name,
            description=row.description,
            definition=None if row.definition is None else JSON(row.definition),
            status=ProposalStatus(row.status),
            decision_note=row.decision_note,
            created_at=as_utc(row.created_at),
            decided_at=as_utc(row.decided_at),
            proposer_key=row.user_id,
        )
