"""Round type."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import Info
from dynaforge.api.enums import EnsembleRule, raw
from dynaforge.api.errors import errors_as_graphql
from dynaforge.api.node import FETCHERS, Node, global_id, related
from dynaforge.api.types.analytics import RoundAnalytics, TimeBucket
from dynaforge.api.types.connection import After, Before, Connection, First, Last
from dynaforge.api.types.registered import RegisteredModel
from dynaforge.api.types.stats import LeaderboardEntry, SourceStats, Stats
from dynaforge.db.models import Round as RoundRow
from dynaforge.db.models import as_utc
from dynaforge.services import analytics as analytics_service
from dynaforge.services import cursors, near_duplicates
from dynaforge.services import examples as example_service
from dynaforge.services import stats as stats_service
from dynaforge.services import tasks as task_service
from dynaforge.services import training as training_service


@strawberry.type(description="Examples of a round linked by their near-duplicate marks (Round.nearDuplicates).")
class NearDuplicateCluster:
    similarity: float = strawberry.field(description="The highest similarity between two linked examples, 0 to 1.")
    keys: strawberry.Private[list[int]]

    @strawberry.field(description="Its examples, oldest first (one you may not see, or deleted, is left out).")
    async def examples(self, info: Info) -> list[Annotated[Example, strawberry.lazy("dynaforge.api.types.example")]]:  # type: ignore[name-defined]  # noqa: F821
        found = [await related(info, "Example", key) for key in self.keys]
        return [e for e in found if e is not None]


@strawberry.type(description="A model a round puts in the loop: annotators try to fool it.")
class TargetModel:
    name: str = strawberry.field(
        description="Its name, unique within the round (ModelPrediction.model names the same model)."
    )
    backend: str = strawberry.field(description="The registered inference backend that serves it (e.g. http).")
    task_id: strawberry.Private[int]
    raw_config: strawberry.Private[dict]
    registry_id: strawberry.Private[int | None] = None

    @strawberry.field(
        description="Its entry in the task's model registry: the exact weights (by digest) the round runs against, "
        "where they came from (shipped, trained on the platform and from which data, ...) and its parent model. "
        "Null for rounds opened before the registry existed."
    )
    async def registered(self, info: Info) -> RegisteredModel | None:
        if self.registry_id is None:
            return None
        found = await training_service.registered_many(*info.context.caller, [self.registry_id])
        row = found.get(self.registry_id)
        return None if row is None else RegisteredModel.from_row(row)

    @strawberry.field(
        description="The backend configuration; only the task's owners and admins see it (it may "
        "hold credentials), others get null."
    )
    async def config(self, info: Info) -> JSON | None:
        config = await task_service.target_model_config(*info.context.caller, self.task_id, self.raw_config)
        return None if config is None else JSON(config)


@strawberry.type(description="A pending example whose round target answers it unreadably, each time it is asked.")
class StuckExample:
    example_id: strawberry.ID = strawberry.field(description="The example's id (read it with `node`).")
    reason: str = strawberry.field(description="What the target answered and why it could not be read.")
    attempts: int = strawberry.field(description="How many times in a row it was asked, in vain.")

    @classmethod
    def of(cls, stuck: example_service.StuckExample) -> StuckExample:
        return cls(
            example_id=global_id("Example", stuck.example_id),
            reason=stuck.reason,
            attempts=stuck.attempts,
        )


@strawberry.type(
    description="A task's numbered round: its target model(s), dates and counters. Anyone who can see the task can "
    "read its rounds."
)
class Round(Node):
    row: strawberry.Private[RoundRow]
    number: int = strawberry.field(description="Its number within the task: 1 for the first round, then 2, 3, ...")
    description: str = strawberry.field(description="What its owners say about it; empty when they said nothing.")
    target_models: list[TargetModel] = strawberry.field(
        description="The model, or the ensemble of models, that examples are sent to in this round, in the owners' "
        "order."
    )
    ensemble_rule: EnsembleRule = strawberry.field(
        description="How several target models' answers make one verdict; no matter with a single model."
    )
    started_at: datetime = strawberry.field(description="When the round opened (UTC).")
    ended_at: datetime | None = strawberry.field(
        description="When the round closed; null while it is open. Only the task's latest round can be open, and "
        "examples are written only while it is."
    )
    collected: int = strawberry.field(description="Examples with a model prediction.")
    fooled: int = strawberry.field(
        description="Examples that fooled the target model(s), whatever happened to them next (retracted or "
        "rejected ones included)."
    )
    verified_fooled: int = strawberry.field(description="Examples that fooled the model and validators accepted.")
    retracted: int = strawberry.field(description="Examples withdrawn by their author, an owner or an admin.")
    pending: int = strawberry.field(description="Examples still waiting for a model prediction.")

    @strawberry.field(
        description="Its pending examples whose predictions are no longer retried: the target model answered each "
        "of them unreadably (a label outside the task's set, a missing field) UNUSABLE_OUTPUT_ATTEMPTS times in a "
        "row, and would again. They are asked again once the round's target models change (setTargetModels), or "
        "their authors retract them. The oldest 100; for the task's owners and admins, null for everyone else."
    )
    async def stuck_examples(self, info: Info) -> list[StuckExample] | None:
        stuck = await example_service.stuck_examples(*info.context.caller, self.row)
        return None if stuck is None else [StuckExample.of(e) for e in stuck]

    @strawberry.field(
        description="Examples of the round sent although close to an earlier fooling example (the task's "
        "nearDuplicateThreshold), grouped with those they are close to: largest group first. For the task's owners "
        "and admins, null for everyone else."
    )
    async def near_duplicates(self, info: Info) -> list[NearDuplicateCluster] | None:
        found = await near_duplicates.owner_clusters(*info.context.caller, self.row)
        return (
            None
            if found is None
            else [NearDuplicateCluster(similarity=round(c.similarity, 4), keys=c.example_ids) for c in found]
        )

    @strawberry.field(
        description="Its collection over time, per annotator and per source: for the task's owners and admins (a "
        "FORBIDDEN error and null for anyone else)."
    )
    @errors_as_graphql
    async def analytics(
        self,
        info: Info,
        bucket: Annotated[
            TimeBucket, strawberry.argument(description="The width of the periods: an hour (default) or a day.")
        ] = TimeBucket.HOUR,
    ) -> RoundAnalytics | None:
        value = await analytics_service.analytics_of(
            *info.context.caller, self.row, analytics_service.Bucket(raw(bucket))
        )
        return RoundAnalytics.of(value)

    @strawberry.field(description="The task it is a round of.")
    async def task(self, info: Info) -> Annotated[Task, strawberry.lazy("dynaforge.api.types.task")]:  # type: ignore[name-defined]  # noqa: F821
        # Task lists its rounds: the type is named lazily and fetched through the node registry, no import circle.
        view = await task_service.visible_task(*info.context.caller, self.row.task_id)
        return await FETCHERS["Task"](info, view.task.code)

    @strawberry.field(description="The round's counters and vMER.")
    def stats(self) -> Stats:
        return Stats.of(stats_service.Stats.of(self.row))

    @strawberry.field(
        description="The round's counters and vMER split by where the examples came from: one entry per source "
        "(HUMAN, ASSISTED, MACHINE, in that order, zeros included); they add up to `stats`."
    )
    async def stats_by_source(self, info: strawberry.Info) -> list[SourceStats]:
        return SourceStats.listing(await stats_service.by_source(info.context.platform, [self.row.id]))

    @strawberry.field(
        description="The round's annotators with their usernames and counters, ranked by verified fooling examples, "
        "then fooling examples, then examples collected, a page at a time (cursors are ranks: pages of up to 100). "
        "Anyone who can see the task."
    )
    @errors_as_graphql
    async def leaderboard(
        self,
        info: strawberry.Info,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[LeaderboardEntry]:
        entries, has_next, has_previous, total = await stats_service.leaderboard_page(
            info.context.platform, self.row.id, first=first, after=after, last=last, before=before
        )
        return Connection.of(
            ((LeaderboardEntry.of(e), cursors.encode("rank", e.rank)) for e in entries),
            has_next=has_next,
            has_previous=has_previous,
            total=total,
        )

    @classmethod
    def from_row(cls, row: RoundRow) -> Round:
        return cls(
            row=row,
            id=global_id("Round", row.id),
            number=row.number,
            description=row.description,
            target_models=[
                TargetModel(
                    name=m["name"],
                    backend=m["backend"],
                    task_id=row.task_id,
                    raw_config=m.get("config") or {},
                    registry_id=_registry_id(row, i),
                )
                for i, m in enumerate(row.target_models)
            ],
            ensemble_rule=EnsembleRule(row.ensemble_rule),
            started_at=as_utc(row.started_at),
            ended_at=as_utc(row.ended_at),
            collected=row.collected,
            fooled=row.fooled,
            verified_fooled=row.verified_fooled,
            retracted=row.retracted,
            pending=row.pending,
        )


def _registry_id(row: RoundRow, index: int) -> int | None:
    ids = row.target_registry_ids or []
    return int(ids[index]) if index < len(ids) and ids[index] is not None else None
