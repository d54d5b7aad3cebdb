"""Round type."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import RequestContext
from dynaforge.api.node import Node, global_id
from dynaforge.api.types.stats import LeaderboardEntry, Stats
from dynaforge.db.models import Round as RoundRow
from dynaforge.db.models import as_utc
from dynaforge.services import stats as stats_service
from dynaforge.services import tasks as task_service


@strawberry.type(description="A model a round puts in the loop.")
class TargetModel:
    name: str
    backend: str
    task_id: strawberry.Private[int]
    raw_config: strawberry.Private[dict]

    @strawberry.field(
        description="The backend configuration; only the task's owners and admins see it (it may "
        "hold credentials), others get null."
    )
    async def config(self, info: strawberry.Info[RequestContext]) -> JSON | None:
        config = await task_service.target_model_config(*info.context.caller, self.task_id, self.raw_config)
        return None if config is None else JSON(config)


@strawberry.type(description="A task's numbered round: its target model(s), dates and counters.")
class Round(Node):
    row: strawberry.Private[RoundRow]
    id: strawberry.ID
    number: int
    description: str
    target_models: list[TargetModel]
    ensemble_rule: str
    started_at: datetime
    ended_at: datetime | None
    collected: int = strawberry.field(description="Examples with a model prediction.")
    fooled: int
    verified_fooled: int
    retracted: int
    pending: int = strawberry.field(description="Examples still waiting for a model prediction.")

    @strawberry.field(description="The round's counters and vMER.")
    def stats(self) -> Stats:
        return Stats.of(stats_service.Stats.of(self.row))

    @strawberry.field(description="The round's annotators, by verified fooling examples, then fooling examples.")
    async def leaderboard(self, info: strawberry.Info, first: int = 20, offset: int = 0) -> list[LeaderboardEntry]:
        rows = await stats_service.leaderboard(info.context.platform, self.row.id, first=first, offset=offset)
        return [LeaderboardEntry.of(r) for r in rows]

    @classmethod
    def from_row(cls, row: RoundRow) -> Round:
        return cls(
            row=row,
            id=global_id("Round", row.id),
            number=row.number,
            description=row.description,
            target_models=[
                TargetModel(name=m["name"], backend=m["backend"], task_id=row.task_id, raw_config=m.get("config") or {})
                for m in row.target_models
            ],
            ensemble_rule=row.ensemble_rule,
            started_at=as_utc(row.started_at),
            ended_at=as_utc(row.ended_at),
            collected=row.collected,
            fooled=row.fooled,
            verified_fooled=row.verified_fooled,
            retracted=row.retracted,
            pending=row.pending,
        )
