"""Collection cycle resolvers: validation, statistics, rounds, task administration and proposals."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import RequestContext
from dynaforge.api.contexts import ContextStrategy
from dynaforge.api.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    RateLimited,
    errors_as_graphql,
    errors_as_union,
)
from dynaforge.api.mutations import TargetModelInput
from dynaforge.api.node import parse_id
from dynaforge.api.types.example import Example, ValidationLabel
from dynaforge.api.types.round import Round
from dynaforge.api.types.stats import RoundStats, Stats, TaskProposal, UserTaskStats
from dynaforge.api.types.task import Task
from dynaforge.api.types.user import User
from dynaforge.services import proposals as proposal_service
from dynaforge.services import stats as stats_service
from dynaforge.services import tasks as task_service
from dynaforge.services import validation as validation_service

Info = strawberry.Info[RequestContext]


@strawberry.enum(
    description="CROWD: the usual queue. OWNER (owners and admins): flagged examples first; a vote decides alone."
)
class ValidationMode(Enum):
    CROWD = "CROWD"
    OWNER = "OWNER"


# --------------------------------------------------------------------------- inputs


@strawberry.input
class ValidateExampleInput:
    example_id: strawberry.ID
    label: ValidationLabel
    corrected_target: JSON | None = strawberry.field(
        default=None, description="With INCORRECT: the target fields as they should be."
    )
    reason: str | None = None


@strawberry.input
class FlagExampleInput:
    example_id: strawberry.ID
    reason: str = strawberry.field(description="Why the example should not be used (required).")


@strawberry.input
class SkipExampleInput:
    example_id: strawberry.ID


@strawberry.input
class OpenNextRoundInput:
    task_code: str
    target_models: list[TargetModelInput] | None = strawberry.field(
        default=None, description="The new round's target(s); default: the current round's."
    )
    ensemble_rule: str | None = None
    description: str = ""
    copy_contexts: bool = strawberry.field(default=False, description="Copy the current round's contexts.")


@strawberry.input
class CloseRoundInput:
    task_code: str


@strawberry.input
class UpdateRoundInput:
    task_code: str
    number: int
    description: str


@strawberry.input(description="Null leaves a setting unchanged.")
class UpdateTaskSettingsInput:
    task_code: str
    validation_quorum: int | None = None
    validate_non_fooling: bool | None = None
    one_example_per_tag: bool | None = None
    daily_example_cap: int | None = strawberry.field(default=None, description="0 removes the cap.")
    instructions: str | None = strawberry.field(default=None, description="Empty: the plugin's instructions.")
    context_strategy: ContextStrategy | None = None
    hidden: bool | None = None
    active: bool | None = None


@strawberry.input
class TaskOwnershipInput:
    task_code: str
    username: str


@strawberry.input
class ProposeTaskInput:
    code: str
    name: str
    description: str = ""


@strawberry.input
class DecideTaskProposalInput:
    id: strawberry.ID
    accept: bool
    note: str | None = None


# --------------------------------------------------------------------------- payloads


@strawberry.type(description="The vote was recorded; `decided` says whether it accepted or rejected the example.")
class ValidatedExample:
    example: Example
    decided: bool


@strawberry.type(description="The example is out of the validators' queue until an owner decides.")
class FlaggedExample:
    example: Example


@strawberry.type(
    description="The example moved to the end of your validation queue (yours only; no vote was cast): "
    "exampleToValidate serves it again after every other example."
)
class SkippedExample:
    example: Example


@strawberry.type(description="The previous round was closed and the next one opened.")
class RoundOpened:
    round: Round
    previous: Round | None


@strawberry.type(description="The round stopped collecting examples.")
class ClosedRound:
    round: Round


@strawberry.type
class UpdatedRound:
    round: Round


@strawberry.type
class TaskSettingsUpdated:
    task: Task


@strawberry.type
class TaskOwnershipChanged:
    task: Task
    user: User
    is_owner: bool


@strawberry.type
class TaskProposed:
    proposal: TaskProposal


@strawberry.type
class TaskProposalDecided:
    proposal: TaskProposal


ValidateExampleResult = Annotated[
    ValidatedExample | InvalidInput | NotAuthenticated | Forbidden | NotFound | AlreadyExists | Conflict | RateLimited,
    strawberry.union("ValidateExampleResult"),
]
SkipExampleResult = Annotated[
    SkippedExample | InvalidInput | NotAuthenticated | NotFound, strawberry.union("SkipExampleResult")
]
FlagExampleResult = Annotated[
    FlaggedExample | InvalidInput | NotAuthenticated | Forbidden | NotFound | AlreadyExists | Conflict | RateLimited,
    strawberry.union("FlagExampleResult"),
]
OpenNextRoundResult = Annotated[
    RoundOpened | InvalidInput | NotAuthenticated | Forbidden | NotFound | Conflict,
    strawberry.union("OpenNextRoundResult"),
]
CloseRoundResult = Annotated[
    ClosedRound | InvalidInput | NotAuthenticated | Forbidden | NotFound, strawberry.union("CloseRoundResult")
]
UpdateRoundResult = Annotated[
    UpdatedRound | InvalidInput | NotAuthenticated | Forbidden | NotFound, strawberry.union("UpdateRoundResult")
]
UpdateTaskSettingsResult = Annotated[
    TaskSettingsUpdated | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union("UpdateTaskSettingsResult"),
]
TaskOwnershipResult = Annotated[
    TaskOwnershipChanged | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union("TaskOwnershipResult"),
]
ProposeTaskResult = Annotated[
    TaskProposed | InvalidInput | NotAuthenticated | AlreadyExists | RateLimited, strawberry.union("ProposeTaskResult")
]
DecideTaskProposalResult = Annotated[
    TaskProposalDecided | InvalidInput | NotAuthenticated | Forbidden | NotFound | Conflict,
    strawberry.union("DecideTaskProposalResult"),
]


@strawberry.type
class CollectionQuery:
    @strawberry.field(
        description="The next example for you to validate in a task (fooling examples first, then those with the "
        "fewest votes; never your own or one you voted on); null when there is none."
    )
    @errors_as_graphql
    async def example_to_validate(
        self, info: Info, task_code: str, mode: ValidationMode = ValidationMode.CROWD
    ) -> Example | None:
        row = await validation_service.example_to_validate(
            *info.context.caller, task_code, owner_mode=mode == ValidationMode.OWNER
        )
        return None if row is None else Example.from_row(row)

    @strawberry.field(
        description="How many examples exampleToValidate could serve you now in this mode (those you skipped "
        "included): the size of your validation queue."
    )
    @errors_as_graphql
    async def validation_queue_size(
        self, info: Info, task_code: str, mode: ValidationMode = ValidationMode.CROWD
    ) -> int:
        return await validation_service.queue_size(
            *info.context.caller, task_code, owner_mode=mode == ValidationMode.OWNER
        )

    @strawberry.field(description="Your own counters in a task, per round and in total.")
    @errors_as_graphql
    async def my_stats(self, info: Info, task_code: str) -> UserTaskStats:
        rows = await stats_service.my_stats(*info.context.caller, task_code)
        return UserTaskStats(
            task_code=task_code,
            rounds=[RoundStats(round_number=n, stats=Stats.of(v)) for n, v in rows],
            total=Stats.of(stats_service.total([v for _, v in rows])),
        )

    @strawberry.field(description="Task proposals: admins see all, others their own; newest first.")
    @errors_as_graphql
    async def task_proposals(self, info: Info, status: str | None = None) -> list[TaskProposal]:
        rows = await proposal_service.list_proposals(*info.context.caller, status=status)
        return [TaskProposal.from_row(r) for r in rows]


@strawberry.type
class CollectionMutation:
    @strawberry.mutation(
        description="Vote on someone else's example. A quorum of CORRECT accepts it, of INCORRECT or FLAGGED rejects "
        "it (the task's validationQuorum); an owner's or admin's vote decides alone."
    )
    @errors_as_union
    async def validate_example(self, info: Info, input: ValidateExampleInput) -> ValidateExampleResult:
        row = await validation_service.validate(
            *info.context.caller,
            parse_id(input.example_id, "exampleId", "Example"),
            input.label.value,
            corrected_target=input.corrected_target,
            reason=input.reason,
        )
        return ValidatedExample(example=Example.from_row(row), decided=row.decided_at is not None)

    @strawberry.mutation(
        description="Flag an example (your own, or anyone's that is abusive or unusable): it leaves the validators' "
        "queue until an owner decides."
    )
    @errors_as_union
    async def flag_example(self, info: Info, input: FlagExampleInput) -> FlagExampleResult:
        row = await validation_service.flag(
            *info.context.caller, parse_id(input.example_id, "exampleId", "Example"), input.reason
        )
        return FlaggedExample(example=Example.from_row(row))

    @strawberry.mutation(
        description="Pass over an example in your validation queue: it comes back after every other example. "
        "Others' queues do not change."
    )
    @errors_as_union
    async def skip_example(self, info: Info, input: SkipExampleInput) -> SkipExampleResult:
        row = await validation_service.skip(*info.context.caller, parse_id(input.example_id, "exampleId", "Example"))
        return SkippedExample(example=Example.from_row(row))

    @strawberry.mutation(
        description="Owners and admins close the current round and open the next, with new target models (default: "
        "the current ones) and a new export secret."
    )
    @errors_as_union
    async def open_next_round(self, info: Info, input: OpenNextRoundInput) -> OpenNextRoundResult:
        models = None
        if input.target_models is not None:
            models = [{"name": m.name, "backend": m.backend, "config": m.config} for m in input.target_models]
        new, previous = await task_service.open_next_round(
            *info.context.caller,
            input.task_code,
            models=models,
            rule=input.ensemble_rule,
            description=input.description,
            copy_contexts=input.copy_contexts,
        )
        return RoundOpened(round=Round.from_row(new), previous=None if previous is None else Round.from_row(previous))

    @strawberry.mutation(description="Owners and admins stop collection in the current round.")
    @errors_as_union
    async def close_round(self, info: Info, input: CloseRoundInput) -> CloseRoundResult:
        row = await task_service.close_round(*info.context.caller, input.task_code)
        return ClosedRound(round=Round.from_row(row))

    @strawberry.mutation(description="Owners and admins edit a round's description.")
    @errors_as_union
    async def update_round(self, info: Info, input: UpdateRoundInput) -> UpdateRoundResult:
        row = await task_service.update_round(
            *info.context.caller, input.task_code, input.number, description=input.description
        )
        return UpdatedRound(round=Round.from_row(row))

    @strawberry.mutation(description="Owners and admins change a task's settings.")
    @errors_as_union
    async def update_task_settings(self, info: Info, input: UpdateTaskSettingsInput) -> UpdateTaskSettingsResult:
        view = await task_service.update_settings(
            *info.context.caller,
            input.task_code,
            {
                "validation_quorum": input.validation_quorum,
                "validate_non_fooling": input.validate_non_fooling,
                "one_example_per_tag": input.one_example_per_tag,
                "daily_example_cap": input.daily_example_cap,
                "instructions": input.instructions,
                "context_strategy": input.context_strategy.value if input.context_strategy else None,
                "hidden": input.hidden,
                "active": input.active,
            },
        )
        return TaskSettingsUpdated(task=Task.from_view(view))

    @strawberry.mutation(description="Admins make a user an owner of a task.")
    @errors_as_union
    async def grant_task_ownership(self, info: Info, input: TaskOwnershipInput) -> TaskOwnershipResult:
        return await _ownership(info, input, grant=True)

    @strawberry.mutation(description="Admins take a task away from one of its owners.")
    @errors_as_union
    async def revoke_task_ownership(self, info: Info, input: TaskOwnershipInput) -> TaskOwnershipResult:
        return await _ownership(info, input, grant=False)

    @strawberry.mutation(description="Ask the admins to run a task (its plugin must be installed to accept it).")
    @errors_as_union
    async def propose_task(self, info: Info, input: ProposeTaskInput) -> ProposeTaskResult:
        row = await proposal_service.propose(
            *info.context.caller, code=input.code, name=input.name, description=input.description
        )
        return TaskProposed(proposal=TaskProposal.from_row(row))

    @strawberry.mutation(description="Admins accept (the proposer becomes an owner) or decline a task proposal.")
    @errors_as_union
    async def decide_task_proposal(self, info: Info, input: DecideTaskProposalInput) -> DecideTaskProposalResult:
        row = await proposal_service.decide(
            *info.context.caller, parse_id(input.id, "id", "TaskProposal"), accept=input.accept, note=input.note
        )
        return TaskProposalDecided(proposal=TaskProposal.from_row(row))


async def _ownership(info: Info, input: TaskOwnershipInput, *, grant: bool) -> TaskOwnershipChanged:
    view, user = await task_service.change_ownership(*info.context.caller, input.task_code, input.username, grant=grant)
    return TaskOwnershipChanged(task=Task.from_view(view), user=User.from_row(user), is_owner=grant)
