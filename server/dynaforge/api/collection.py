"""Collection cycle resolvers: validation, statistics, rounds, task administration and proposals."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import Info, TaskCode
from dynaforge.api.enums import ContextStrategy, EnsembleRule, ProposalStatus, ValidationMode, raw
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
from dynaforge.api.types.connection import After, Before, Connection, First, Last
from dynaforge.api.types.example import Example, ValidationLabel
from dynaforge.api.types.round import Round
from dynaforge.api.types.stats import TaskProposal, UserTaskStats
from dynaforge.api.types.task import Task
from dynaforge.api.types.user import User
from dynaforge.services import declared_tasks as declared_service
from dynaforge.services import proposals as proposal_service
from dynaforge.services import tasks as task_service
from dynaforge.services import validation as validation_service
from dynaforge.tasks.base import TASK_CODE_RULE

# --------------------------------------------------------------------------- inputs


@strawberry.input(description="A vote on an example.")
class ValidateExampleInput:
    id: strawberry.ID = strawberry.field(description="The id of the example to vote on (Example.id).")
    label: ValidationLabel = strawberry.field(
        description="The verdict: CORRECT, INCORRECT (give correctedTarget if you can) or FLAGGED (unusable)."
    )
    corrected_target: JSON | None = strawberry.field(
        default=None,
        description="With INCORRECT only: the target fields as they should be (an object with some of the task's "
        "target fields), checked by the task's rules.",
    )
    reason: str | None = strawberry.field(
        default=None,
        description="Why, in your words, at most 2000 characters; optional. The task's owners and admins read it "
        "with the vote.",
    )
    time_taken_ms: int | None = strawberry.field(
        default=None,
        description="How long you spent on the example before voting, in milliseconds (0 to one day); optional, "
        "stored with the vote for analysis.",
    )


@strawberry.input(description="An example to take out of the validators' queue until an owner decides.")
class FlagExampleInput:
    id: strawberry.ID = strawberry.field(description="The id of the example to flag (Example.id).")
    reason: str = strawberry.field(
        description="Why the example should not be used: 1 to 2000 characters, spaces around it removed. Its "
        "author and the task's owners and admins read it."
    )


@strawberry.input(description="The example whose vote you withdraw.")
class WithdrawValidationInput:
    id: strawberry.ID = strawberry.field(description="The example's id (Example.id).")


@strawberry.input(description="An example to pass over in your validation queue.")
class SkipExampleInput:
    id: strawberry.ID = strawberry.field(
        description="The id of the example to skip (Example.id), as exampleToValidate served it."
    )


@strawberry.input(description="A validator's vote whose corrected target an owner applies to its example.")
class ApplyCorrectionInput:
    id: strawberry.ID = strawberry.field(
        description="The vote (Validation.id, as Example.validations lists it); it must carry a correctedTarget."
    )


@strawberry.type(description="The example now carries the vote's corrected target beside its own fields.")
class CorrectionApplied:
    example: Example = strawberry.field(description="The example, with correctedTarget and correction set.")


@strawberry.input(description="The next round of a task; what is left out is taken over from the current round.")
class OpenNextRoundInput:
    task_code: str = strawberry.field(description="The code of the task (Task.code).")
    target_models: list[TargetModelInput] | None = strawberry.field(
        default=None, description="The new round's target(s); default: the current round's."
    )
    ensemble_rule: EnsembleRule | None = strawberry.field(
        default=None, description="The new round's ensemble rule; default: the current round's."
    )
    description: str = strawberry.field(
        default="", description="The new round's description (Round.description), at most 5000 characters."
    )
    copy_contexts: bool = strawberry.field(
        default=False,
        description="Copy the current round's contexts into the new round, their use counts back at 0; false: "
        "the new round starts without contexts.",
    )
    candidate: strawberry.ID | None = strawberry.field(
        default=None,
        description="Promote a registered model of the task (RegisteredModel.id), e.g. a candidate a training job "
        "trained: the new round targets exactly it. Not with targetModels.",
    )
    current_round: int | None = strawberry.field(
        default=None,
        description="The number of the round you see as current (0 when the task has none): when another round "
        "opened since (a second click, another owner), nothing opens and the answer is Conflict. Null: open the "
        "next round whatever the current one is.",
    )


@strawberry.input(description="The task whose current round stops collecting examples.")
class CloseRoundInput:
    task_code: str = strawberry.field(description="The code of the task (Task.code).")


@strawberry.input(description="A new description for one round of a task.")
class UpdateRoundInput:
    task_code: str = strawberry.field(description="The code of the task (Task.code).")
    round: int = strawberry.field(description="The round's number (Round.number), from 1.")
    description: str = strawberry.field(
        description="The round's new description, at most 5000 characters; it replaces the old one."
    )


@strawberry.input(description="A task's settings to change; a field left out or null leaves its setting unchanged.")
class UpdateTaskSettingsInput:
    task_code: str = strawberry.field(description="The code of the task (Task.code).")
    validation_quorum: int | None = strawberry.field(
        default=None,
        description="How many votes of one kind decide an example, 1 to 25: that many CORRECT accept it, that many "
        "INCORRECT (or FLAGGED) reject it.",
    )
    validate_non_fooling: bool | None = strawberry.field(
        default=None,
        description="Whether validators also get the examples that did not fool the model (otherwise only fooling "
        "ones are validated).",
    )
    one_example_per_tag: bool | None = strawberry.field(
        default=None,
        description="Whether each validator is served at most one example per tag (untagged examples are not limited).",
    )
    daily_example_cap: int | None = strawberry.field(
        default=None,
        description="The most examples each user may write in the task per day (UTC), up to 100000; 0 removes the cap.",
    )
    submissions_per_day: int | None = strawberry.field(
        default=None,
        description="How many scored submissions (models, predictions, selections) each user may make in any 24 "
        "hours, 1 to 1000 (3 unless set). Every attempt counts, deleted and failed ones too.",
    )
    instructions: str | None = strawberry.field(
        default=None,
        description="Instructions for annotators in place of the plugin's, at most 20000 characters; empty: back "
        "to the plugin's.",
    )
    context_strategy: ContextStrategy | None = strawberry.field(
        default=None, description="How nextContext chooses a context when the caller names no strategy."
    )
    break_reminder_minutes: int | None = strawberry.field(
        default=None,
        description="Suggest a break to annotators and validators after this many minutes of continuous work, 5 to "
        "240; 0 turns the reminder off (a task may come with one).",
    )
    qualification_pass_mark: float | None = strawberry.field(
        default=None,
        description="The score (0.5 to 1) people must reach in the task's tutorial before they may write examples or "
        "validate (owners and admins never wait; nor anyone while the tutorial has no items); 0 removes it.",
    )
    near_duplicate_threshold: float | None = strawberry.field(
        default=None,
        description="Flag a new fooling example at least this similar to an earlier fooling example of its round "
        "(on the same context) to its author before it is stored: 0.5 to 1 (0.7 catches a ten-word sentence with "
        "one word changed); 0 removes the check. Examples written before have no sketch and are not compared.",
    )
    fooled_threshold: float | None = strawberry.field(
        default=None,
        description="For a task whose fooled rule compares a metric or a probability with a threshold "
        "(Task.fooledThreshold is not null): the threshold from now on, on the rule's scale (0 to 1 for a "
        "probability, ROUGE-L or token F1; 0 to 100 for chrF, BLEU or TER). Examples already decided keep their "
        "verdicts; say it in the instructions if they name the old one.",
    )
    judge_rubric: str | None = strawberry.field(
        default=None,
        description="For a task judged by a model (verdictBy JUDGE): what makes an answer wrong, as the judge is "
        "told from now on, at most 5000 characters; empty: back to the task's own rubric.",
    )
    hidden: bool | None = strawberry.field(
        default=None,
        description="true hides the task from everyone but its owners and admins (for others it does not exist); "
        "false shows it.",
    )
    active: bool | None = strawberry.field(
        default=None,
        description="Whether the task collects examples: while false, createExample answers RoundClosed.",
    )


@strawberry.input(description="A task and the user who becomes one of its owners.")
class GrantTaskOwnershipInput:
    task_code: str = strawberry.field(description="The code of the task (Task.code).")
    username: str = strawberry.field(description="The user's username, exactly as written (case counts).")


@strawberry.input(description="A task and the owner who stops being one.")
class RevokeTaskOwnershipInput(GrantTaskOwnershipInput):
    pass


@strawberry.input(description="A task you would like the platform to run.")
class ProposeTaskInput:
    code: str = strawberry.field(
        description=f"The task's code, as its plugin registers it or its definition declares it: {TASK_CODE_RULE}."
    )
    name: str = strawberry.field(description="The task's name, 1 to 200 characters (spaces around it removed).")
    description: str = strawberry.field(
        default="", description="What the task is and why run it, at most 5000 characters."
    )
    definition: JSON | None = strawberry.field(
        default=None,
        description="The task declared as data (see declaredTaskSchema), with this code: accepting the proposal "
        "declares it. Null: a task a plugin provides, which must be installed before the proposal can be accepted.",
    )


@strawberry.input(description="An admin's decision on a task proposal.")
class DecideTaskProposalInput:
    id: strawberry.ID = strawberry.field(description="The proposal's id (TaskProposal.id).")
    accept: bool = strawberry.field(
        description="true accepts: the task's plugin must be installed on the server; the task is made active and "
        "the proposer becomes one of its owners. false declines."
    )
    note: str | None = strawberry.field(
        default=None,
        description="A note for the proposer (TaskProposal.decisionNote), at most 2000 characters; optional.",
    )


# --------------------------------------------------------------------------- payloads


@strawberry.type(description="The vote was recorded; `decided` says whether it accepted or rejected the example.")
class ValidationRecorded:
    example: Example = strawberry.field(description="The example after the vote, with its new counts and status.")
    decided: bool = strawberry.field(
        description="Whether the example is now ACCEPTED or REJECTED: this vote reached the quorum, or an owner or "
        "admin cast it."
    )


@strawberry.type(description="Your vote is withdrawn: the example's counts are back, and it is in your queue again.")
class ValidationWithdrawn:
    example: Example = strawberry.field(description="The example without your vote.")


@strawberry.type(description="The example is out of the validators' queue until an owner decides.")
class ExampleFlagged:
    example: Example = strawberry.field(
        description="The example, now FLAGGED (flagging a flagged example changes nothing)."
    )


@strawberry.type(
    description="The example moved to the end of your validation queue (yours only; no vote was cast): "
    "exampleToValidate serves it again after every other example."
)
class ExampleSkipped:
    example: Example = strawberry.field(description="The example skipped, itself unchanged.")


@strawberry.type(description="The previous round was closed and the next one opened.")
class RoundOpened:
    round: Round = strawberry.field(description="The new round, open and now the task's current round.")
    previous: Round | None = strawberry.field(
        description="The round that was current until now, closed if it was not already; null when the task had "
        "no round."
    )


@strawberry.type(description="The round stopped collecting examples.")
class RoundEnded:
    round: Round = strawberry.field(description="The round, with its endedAt (closing a closed round changes nothing).")


@strawberry.type(description="The round's description was replaced.")
class RoundUpdated:
    round: Round = strawberry.field(description="The round as it is now.")


@strawberry.type(description="The task's settings were changed.")
class TaskSettingsUpdated:
    task: Task = strawberry.field(description="The task with its new settings.")


@strawberry.type(
    description="A user was made an owner of a task, or stopped being one (doing it twice changes nothing)."
)
class TaskOwnershipChanged:
    task: Task = strawberry.field(description="The task.")
    user: User = strawberry.field(description="The user whose ownership changed.")
    is_owner: bool = strawberry.field(
        description="Whether the user owns the task now: true after grantTaskOwnership, false after "
        "revokeTaskOwnership."
    )


@strawberry.type(description="The proposal was recorded; an admin decides it.")
class TaskProposed:
    proposal: TaskProposal = strawberry.field(description="The new proposal, PENDING.")


@strawberry.type(description="An admin decided the proposal.")
class TaskProposalDecided:
    proposal: TaskProposal = strawberry.field(description="The proposal, now ACCEPTED or DECLINED.")


ValidateExampleResult = Annotated[
    ValidationRecorded
    | InvalidInput
    | NotAuthenticated
    | Forbidden
    | NotFound
    | AlreadyExists
    | Conflict
    | RateLimited,
    strawberry.union(
        "ValidateExampleResult",
        description="ValidationRecorded: the vote counts. The other members are the expected failures, and record "
        "nothing: InvalidInput (a bad label, reason or correctedTarget), NotAuthenticated, Forbidden (your own "
        "example, or one that did not fool the model where the task validates only fooling ones), NotFound (no such "
        "example you can see), AlreadyExists (you voted on it before), Conflict (it is not awaiting votes: decided, "
        "flagged, retracted or still without a prediction), RateLimited (too many votes and flags on this task this "
        "minute).",
    ),
]
WithdrawValidationResult = Annotated[
    ValidationWithdrawn | InvalidInput | NotAuthenticated | NotFound | Conflict,
    strawberry.union(
        "WithdrawValidationResult",
        description="ValidationWithdrawn: the vote is gone. The other members are the expected failures, and change "
        "nothing: InvalidInput (the id is not an Example's), NotAuthenticated, NotFound (no such example you can "
        f"see, or no vote of yours on it), Conflict (more than {validation_service.UNDO_VOTE_S} seconds have passed, "
        "or the example is no longer awaiting votes: the votes that decided it stay).",
    ),
]
ApplyCorrectionResult = Annotated[
    CorrectionApplied | InvalidInput | NotAuthenticated | Forbidden | NotFound | Conflict,
    strawberry.union(
        "ApplyCorrectionResult",
        description="CorrectionApplied on success. The other members are the expected failures: the vote has no "
        "corrected target or the id is not a validation's (InvalidInput), not signed in, not an owner or admin of "
        "the task (Forbidden), no such vote you can see (NotFound), the example was retracted (Conflict).",
    ),
]

SkipExampleResult = Annotated[
    ExampleSkipped | InvalidInput | NotAuthenticated | Forbidden | NotFound | RateLimited,
    strawberry.union(
        "SkipExampleResult",
        description="ExampleSkipped: the example moved to the end of your queue. The other members are the "
        "expected failures: InvalidInput (the id is not an Example's), NotAuthenticated, Forbidden (it is not in "
        "your validation queue: your own, one you voted on, or one not awaiting your vote), NotFound (no such "
        "example you can see), RateLimited (too many skips on this task this hour).",
    ),
]
FlagExampleResult = Annotated[
    ExampleFlagged | InvalidInput | NotAuthenticated | Forbidden | NotFound | AlreadyExists | Conflict | RateLimited,
    strawberry.union(
        "FlagExampleResult",
        description="ExampleFlagged: the example waits for an owner. The other members are the expected failures: "
        "InvalidInput (no reason, or one too long), NotAuthenticated, Forbidden, NotFound (no such example you can "
        "see), AlreadyExists (you voted on it before), Conflict (it is not awaiting votes: decided, retracted or "
        "still without a prediction), RateLimited (too many votes and flags on this task this minute).",
    ),
]
OpenNextRoundResult = Annotated[
    RoundOpened | InvalidInput | NotAuthenticated | Forbidden | NotFound | Conflict,
    strawberry.union(
        "OpenNextRoundResult",
        description="RoundOpened: the next round is open. The other members are the expected failures, and change "
        "nothing: InvalidInput (a description too long, bad target models or rule, a candidate with target models), "
        "NotAuthenticated, Forbidden (not an owner of the task or an admin), NotFound (no such task you can see, or "
        "no such registered model of it), Conflict (someone opened the next round at the same moment).",
    ),
]
CloseRoundResult = Annotated[
    RoundEnded | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "CloseRoundResult",
        description="RoundEnded: the current round is closed. The other members are the expected failures: "
        "InvalidInput, NotAuthenticated, Forbidden (not an owner of the task or an admin), NotFound (no such task "
        "you can see, or it has no round).",
    ),
]
UpdateRoundResult = Annotated[
    RoundUpdated | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "UpdateRoundResult",
        description="RoundUpdated: the description is replaced. The other members are the expected failures: "
        "InvalidInput (a description too long), NotAuthenticated, Forbidden (not an owner of the task or an "
        "admin), NotFound (no such task you can see, or no round of that number).",
    ),
]


@strawberry.input(
    description="A task declared as data: no Python, no restart. The definition follows declaredTaskSchema (JSON "
    "Schema): fields and roles, labels, metrics, perturbations, slices by field, a built-in fooled rule, target "
    "models on the transformers or http backends, and sample examples."
)
class DeclareTaskInput:
    definition: JSON = strawberry.field(description="The declaration, a JSON object (see declaredTaskSchema).")


@strawberry.input(description="A declared task's new definition; its code stays.")
class UpdateDeclaredTaskInput:
    code: str = strawberry.field(description="The code of the declared task (Task.code).")
    definition: JSON = strawberry.field(
        description="The whole new declaration (see declaredTaskSchema), with the same code."
    )


@strawberry.type(description="The declared task is stored and loaded: it takes examples now.")
class TaskDeclared:
    task: Task = strawberry.field(description="The task as it is now.")


DeclareTaskResult = Annotated[
    TaskDeclared | InvalidInput | NotAuthenticated | Forbidden | AlreadyExists,
    strawberry.union(
        "DeclareTaskResult",
        description="TaskDeclared: the task is stored, loaded and has an open round 1. The other members are the "
        "expected failures, and store nothing: InvalidInput (the definition breaks the schema or the task contract, "
        "or names what no plugin registered; each problem under `definition`), NotAuthenticated, Forbidden (not an "
        "admin), AlreadyExists (a task, declared or installed, has that code).",
    ),
]
UpdateDeclaredTaskResult = Annotated[
    TaskDeclared | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "UpdateDeclaredTaskResult",
        description="TaskDeclared: the new definition is stored and loaded. The other members are the expected "
        "failures, and change nothing: InvalidInput, NotAuthenticated, Forbidden (not an admin), NotFound (no "
        "declared task with that code).",
    ),
]

UpdateTaskSettingsResult = Annotated[
    TaskSettingsUpdated | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "UpdateTaskSettingsResult",
        description="TaskSettingsUpdated: the settings are changed. The other members are the expected failures, "
        "and change nothing: InvalidInput (a setting out of range), NotAuthenticated, Forbidden (not an owner of "
        "the task or an admin), NotFound (no such task you can see).",
    ),
]
GrantTaskOwnershipResult = Annotated[
    TaskOwnershipChanged | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "GrantTaskOwnershipResult",
        description="TaskOwnershipChanged: the user owns the task. The other members are the expected failures: "
        "InvalidInput, NotAuthenticated, Forbidden (not an admin), NotFound (no such task or user).",
    ),
]
RevokeTaskOwnershipResult = Annotated[
    TaskOwnershipChanged | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "RevokeTaskOwnershipResult",
        description="TaskOwnershipChanged: the user no longer owns the task. The other members are the expected "
        "failures: InvalidInput, NotAuthenticated, Forbidden (not an admin), NotFound (no such task or user).",
    ),
]
ProposeTaskResult = Annotated[
    TaskProposed | InvalidInput | NotAuthenticated | AlreadyExists | RateLimited,
    strawberry.union(
        "ProposeTaskResult",
        description="TaskProposed: the proposal awaits an admin. The other members are the expected failures: "
        "InvalidInput (a bad code, name or description), NotAuthenticated, AlreadyExists (a proposal of this code "
        "is already pending), RateLimited (too many proposals today).",
    ),
]
DecideTaskProposalResult = Annotated[
    TaskProposalDecided | InvalidInput | NotAuthenticated | Forbidden | NotFound | Conflict,
    strawberry.union(
        "DecideTaskProposalResult",
        description="TaskProposalDecided: the decision is recorded. The other members are the expected failures: "
        "InvalidInput (a note too long, or accepting a task whose plugin is not installed), NotAuthenticated, "
        "Forbidden (not an admin), NotFound (no such proposal), Conflict (it was already decided).",
    ),
]


@strawberry.type
class CollectionQuery:
    @strawberry.field(
        description="The JSON Schema (draft 2020-12) a task declared as data follows (declareTask). Anyone."
    )
    def declared_task_schema(self) -> JSON:
        return JSON(declared_service.DECLARATION_SCHEMA)

    @strawberry.field(
        description="The next example for you to validate in a task (fooling examples first, then those with the "
        "fewest votes; never your own or one you voted on; those you skipped last); null when there is none. The "
        "same example until you vote on it or skip it. Signed-in users; OWNER mode: the task's owners and admins (a "
        "FORBIDDEN error for others). Reads are limited per user and minute (a RATE_LIMITED error beyond)."
    )
    @errors_as_graphql
    async def example_to_validate(
        self,
        info: Info,
        task_code: TaskCode,
        mode: Annotated[
            ValidationMode, strawberry.argument(description="Which queue to serve from; default: CROWD.")
        ] = ValidationMode.CROWD,
    ) -> Example | None:
        row = await validation_service.example_to_validate(
            *info.context.caller, task_code, owner_mode=mode == ValidationMode.OWNER
        )
        return None if row is None else Example.from_row(row)

    @strawberry.field(
        description="How many examples exampleToValidate could serve you now in this mode (those you skipped "
        "included): the size of your validation queue. Signed-in users; OWNER mode: owners and admins.",
        deprecation_reason="Use Task.validationQueueSize (on `tasks`, every task's queue in one request).",
    )
    @errors_as_graphql
    async def validation_queue_size(
        self,
        info: Info,
        task_code: TaskCode,
        mode: Annotated[
            ValidationMode, strawberry.argument(description="Which queue to count; default: CROWD.")
        ] = ValidationMode.CROWD,
    ) -> int | None:
        return await validation_service.queue_size(
            *info.context.caller, task_code, owner_mode=mode == ValidationMode.OWNER
        )

    @strawberry.field(
        description="Your own counters in a task, per round you wrote in and in total. Signed-in users (anonymous "
        "callers get a NOT_AUTHENTICATED error).",
        deprecation_reason="Use Task.viewerStats (on `tasks`, every task's counters in one request).",
    )
    @errors_as_graphql
    async def my_stats(self, info: Info, task_code: TaskCode) -> UserTaskStats | None:
        return await UserTaskStats.mine(info, task_code)

    @strawberry.field(description="Task proposals, newest first: admins see all, other signed-in users their own.")
    @errors_as_graphql
    async def task_proposals(
        self,
        info: Info,
        status: Annotated[
            ProposalStatus | None, strawberry.argument(description="Only proposals in this status; null: any.")
        ] = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[TaskProposal] | None:
        listing = await proposal_service.list_proposals(
            *info.context.caller,
            status=None if status is None else raw(status),
            first=first,
            after=after,
            last=last,
            before=before,
        )
        return Connection.from_listing(listing, TaskProposal.from_row)


@strawberry.type
class CollectionMutation:
    @strawberry.mutation(
        description="Signed-in users vote on someone else's example. A quorum of CORRECT accepts it, of INCORRECT or "
        "FLAGGED rejects it (the task's validationQuorum); an owner's or admin's vote decides alone, on their own "
        "examples and flagged ones too. Votes and flags share a per-minute limit per task (120 unless configured "
        "otherwise)."
    )
    @errors_as_union
    async def validate_example(
        self, info: Info, input: Annotated[ValidateExampleInput, strawberry.argument(description="The vote.")]
    ) -> ValidateExampleResult:
        row = await validation_service.validate(
            *info.context.caller,
            parse_id(input.id, "id", "Example"),
            raw(input.label),
            corrected_target=input.corrected_target,
            reason=input.reason,
            time_taken_ms=input.time_taken_ms,
        )
        return ValidationRecorded(example=Example.from_row(row), decided=row.decided_at is not None)

    @strawberry.mutation(
        description=f"Take back your vote on an example within {validation_service.UNDO_VOTE_S} seconds of casting "
        "it, while the example still awaits votes (a slip of the finger): its counts go back and it returns to your "
        "queue."
    )
    @errors_as_union
    async def withdraw_validation(
        self,
        info: Info,
        input: Annotated[WithdrawValidationInput, strawberry.argument(description="The example voted on.")],
    ) -> WithdrawValidationResult:
        row = await validation_service.withdraw(*info.context.caller, parse_id(input.id, "id", "Example"))
        return ValidationWithdrawn(example=Example.from_row(row))

    @strawberry.mutation(
        description="Signed-in users flag an example awaiting votes (their own, or anyone's that is abusive or "
        "unusable): it leaves the validators' queue until an owner decides. Flagging someone else's example also "
        "counts as your FLAGGED vote."
    )
    @errors_as_union
    async def flag_example(
        self, info: Info, input: Annotated[FlagExampleInput, strawberry.argument(description="The example and why.")]
    ) -> FlagExampleResult:
        row = await validation_service.flag(*info.context.caller, parse_id(input.id, "id", "Example"), input.reason)
        return ExampleFlagged(example=Example.from_row(row))

    @strawberry.mutation(
        description="Signed-in users pass over an example in their validation queue: it comes back after every "
        "other example. Others' queues do not change. Skips are limited per validator, task and hour."
    )
    @errors_as_union
    async def skip_example(
        self, info: Info, input: Annotated[SkipExampleInput, strawberry.argument(description="The example to skip.")]
    ) -> SkipExampleResult:
        row = await validation_service.skip(*info.context.caller, parse_id(input.id, "id", "Example"))
        return ExampleSkipped(example=Example.from_row(row))

    @strawberry.mutation(
        description="The task's owners and admins apply a validator's corrected target to its example: the example "
        "keeps the fields its author wrote and carries the correction beside them (Example.correctedTarget); "
        "applying another vote's correction replaces it."
    )
    @errors_as_union
    async def apply_correction(
        self,
        info: Info,
        input: Annotated[ApplyCorrectionInput, strawberry.argument(description="The vote to apply.")],
    ) -> ApplyCorrectionResult:
        row = await validation_service.apply_correction(*info.context.caller, parse_id(input.id, "id", "Validation"))
        return CorrectionApplied(example=Example.from_row(row))

    @strawberry.mutation(
        description="Owners and admins close the current round and open the next, with new target models (default: "
        "the current ones) and a new export secret."
    )
    @errors_as_union
    async def open_next_round(
        self,
        info: Info,
        input: Annotated[OpenNextRoundInput, strawberry.argument(description="The task and its next round.")],
    ) -> OpenNextRoundResult:
        models = None
        if input.target_models is not None:
            models = [{"name": m.name, "backend": m.backend, "config": m.config} for m in input.target_models]
        new, previous = await task_service.open_next_round(
            *info.context.caller,
            input.task_code,
            models=models,
            rule=None if input.ensemble_rule is None else raw(input.ensemble_rule),
            description=input.description,
            copy_contexts=input.copy_contexts,
            candidate_id=None if input.candidate is None else parse_id(input.candidate, "candidate", "RegisteredModel"),
            seen_round=input.current_round,
        )
        return RoundOpened(round=Round.from_row(new), previous=None if previous is None else Round.from_row(previous))

    @strawberry.mutation(
        description="Owners and admins stop collection in the current round: createExample answers RoundClosed until "
        "the next round opens."
    )
    @errors_as_union
    async def close_round(
        self,
        info: Info,
        input: Annotated[CloseRoundInput, strawberry.argument(description="The task whose round closes.")],
    ) -> CloseRoundResult:
        row = await task_service.close_round(*info.context.caller, input.task_code)
        return RoundEnded(round=Round.from_row(row))

    @strawberry.mutation(description="Owners and admins edit a round's description.")
    @errors_as_union
    async def update_round(
        self,
        info: Info,
        input: Annotated[UpdateRoundInput, strawberry.argument(description="The round and its new description.")],
    ) -> UpdateRoundResult:
        row = await task_service.update_round(
            *info.context.caller, input.task_code, input.round, description=input.description
        )
        return RoundUpdated(round=Round.from_row(row))

    @strawberry.mutation(description="Owners and admins change a task's settings.")
    @errors_as_union
    async def update_task_settings(
        self,
        info: Info,
        input: Annotated[
            UpdateTaskSettingsInput, strawberry.argument(description="The task and the settings to change.")
        ],
    ) -> UpdateTaskSettingsResult:
        view = await task_service.update_settings(
            *info.context.caller,
            input.task_code,
            {
                "validation_quorum": input.validation_quorum,
                "validate_non_fooling": input.validate_non_fooling,
                "one_example_per_tag": input.one_example_per_tag,
                "daily_example_cap": input.daily_example_cap,
                "submissions_per_day": input.submissions_per_day,
                "instructions": input.instructions,
                "context_strategy": input.context_strategy.value if input.context_strategy else None,
                "fooled_threshold": input.fooled_threshold,
                "judge_rubric": input.judge_rubric,
                "near_duplicate_threshold": input.near_duplicate_threshold,
                "qualification_pass_mark": input.qualification_pass_mark,
                "break_reminder_minutes": input.break_reminder_minutes,
                "hidden": input.hidden,
                "active": input.active,
            },
        )
        return TaskSettingsUpdated(task=Task.from_view(view))

    @strawberry.mutation(
        description="Admins declare a task as data (see declaredTaskSchema): it is loaded at once, here and by the "
        "other processes when they meet its code, and opens its round 1 with its target models."
    )
    @errors_as_union
    async def declare_task(
        self, info: Info, input: Annotated[DeclareTaskInput, strawberry.argument(description="The declaration.")]
    ) -> DeclareTaskResult:
        view = await declared_service.create(*info.context.caller, input.definition)
        return TaskDeclared(task=Task.from_view(view))

    @strawberry.mutation(
        description="Admins change a declared task. Open rounds keep the target models they pinned; the next round "
        "takes the new ones by default."
    )
    @errors_as_union
    async def update_declared_task(
        self,
        info: Info,
        input: Annotated[UpdateDeclaredTaskInput, strawberry.argument(description="The task and its new declaration.")],
    ) -> UpdateDeclaredTaskResult:
        view = await declared_service.update(*info.context.caller, input.code, input.definition)
        return TaskDeclared(task=Task.from_view(view))

    @strawberry.mutation(description="Admins make a user an owner of a task.")
    @errors_as_union
    async def grant_task_ownership(
        self,
        info: Info,
        input: Annotated[GrantTaskOwnershipInput, strawberry.argument(description="The task and the new owner.")],
    ) -> GrantTaskOwnershipResult:
        return await _ownership(info, input, grant=True)

    @strawberry.mutation(description="Admins take a task away from one of its owners.")
    @errors_as_union
    async def revoke_task_ownership(
        self,
        info: Info,
        input: Annotated[
            RevokeTaskOwnershipInput, strawberry.argument(description="The task and the owner to remove.")
        ],
    ) -> RevokeTaskOwnershipResult:
        return await _ownership(info, input, grant=False)

    @strawberry.mutation(
        description="Signed-in users ask the admins to run a task (its plugin must be installed to accept it); at "
        "most 5 proposals a day each unless the server is configured otherwise."
    )
    @errors_as_union
    async def propose_task(
        self, info: Info, input: Annotated[ProposeTaskInput, strawberry.argument(description="The task proposed.")]
    ) -> ProposeTaskResult:
        row = await proposal_service.propose(
            *info.context.caller,
            code=input.code,
            name=input.name,
            description=input.description,
            definition=input.definition,
        )
        return TaskProposed(proposal=TaskProposal.from_row(row))

    @strawberry.mutation(description="Admins accept (the proposer becomes an owner) or decline a task proposal.")
    @errors_as_union
    async def decide_task_proposal(
        self,
        info: Info,
        input: Annotated[DecideTaskProposalInput, strawberry.argument(description="The proposal and the decision.")],
    ) -> DecideTaskProposalResult:
        row = await proposal_service.decide(
            *info.context.caller, parse_id(input.id, "id", "TaskProposal"), accept=input.accept, note=input.note
        )
        return TaskProposalDecided(proposal=TaskProposal.from_row(row))


async def _ownership(info: Info, input: GrantTaskOwnershipInput, *, grant: bool) -> TaskOwnershipChanged:
    view, user = await task_service.change_ownership(*info.context.caller, input.task_code, input.username, grant=grant)
    return TaskOwnershipChanged(task=Task.from_view(view), user=User.from_row(user), is_owner=grant)
