"""Machine adversaries in the API: which ones a task has, suggestions to annotators, and generation runs."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import strawberry
from strawberry.scalars import JSON

from dynaforge.adversaries.base import Verdict, gold_probability
from dynaforge.api.arguments import RunStatusFilter
from dynaforge.api.context import Info, TaskCode
from dynaforge.api.enums import AdversaryRunStatus, CreationOrder, OrderBy, work_page
from dynaforge.api.errors import (
    Forbidden,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    QuotaExceeded,
    RateLimited,
    RoundClosed,
    ServiceUnavailable,
    errors_as_graphql,
    errors_as_union,
)
from dynaforge.api.node import Node, global_id, parse_id, related
from dynaforge.api.task_lists import task_list
from dynaforge.api.types.connection import After, Before, Connection, First, Last
from dynaforge.api.types.prediction import Prediction
from dynaforge.api.types.round import Round
from dynaforge.db.models import AdversaryRun as RunRow
from dynaforge.db.models import Suggestion as SuggestionRow
from dynaforge.db.models import as_utc
from dynaforge.errors import ServiceUnavailable as DomainServiceUnavailable
from dynaforge.services import adversaries as adversary_service
from dynaforge.services import tasks as task_service
from dynaforge.services.cursors import WorkPage


@strawberry.type(description="A machine adversary installed on the server, as one task sees it.")
class Adversary:
    name: str = strawberry.field(
        description="Its name: what suggestEdits and generateCandidates take, and what ASSISTED and MACHINE examples "
        "record."
    )
    description: str = strawberry.field(description="What it does, in its author's words.")
    needs_draft: bool = strawberry.field(
        description="Whether it only edits a draft (an annotator's, or an example the target got right) and "
        "proposes nothing from a context alone."
    )
    assists: bool = strawberry.field(description="Whether it serves suggestEdits.")
    generates: bool = strawberry.field(description="Whether it serves generateCandidates.")
    available: bool = strawberry.field(description="Whether it can serve this task on this server now.")
    unavailable_reason: str | None = strawberry.field(
        description="Why it cannot (written for another task, switched off, a missing package); null when available."
    )

    @classmethod
    def of(cls, a: adversary_service.Availability) -> Adversary:
        return cls(
            name=a.adversary.name,
            description=a.adversary.description,
            needs_draft=a.adversary.needs_draft,
            assists=a.adversary.assists,
            generates=a.adversary.generates,
            available=a.unsuitable is None,
            unavailable_reason=a.unsuitable,
        )


@strawberry.type(description="How the target's probability of one label moved from the draft to a suggestion.")
class ProbabilityMove:
    label: str = strawberry.field(description="The label.")
    before: float = strawberry.field(description="Its probability for the draft, 0 to 1.")
    after: float = strawberry.field(description="Its probability for the suggestion, 0 to 1.")


@strawberry.type(description="The target's answer on a draft or a suggestion.")
class TargetVerdict:
    prediction: Prediction = strawberry.field(description="What the target (or the round's ensemble) predicted.")
    fooled: bool = strawberry.field(description="Whether that prediction is wrong for the claimed gold.")
    gold_probability: float | None = strawberry.field(
        description="The probability the target gave the claimed gold (null when it gives no probabilities)."
    )

    @classmethod
    def of(cls, verdict: Verdict, task: Any) -> TargetVerdict:
        return cls(
            prediction=Prediction.of(dict(verdict.prediction), task),
            fooled=verdict.fooled,
            gold_probability=verdict.gold_probability,
        )


@strawberry.type(
    description="An edit of your draft that flips the target. Write it (or your own version of it) with createExample "
    "and its `id` as `suggestionId`: the example then counts as ASSISTED, and it is yours in every count. Only the "
    "annotator it was made to sees it."
)
class Suggestion(Node):
    row: strawberry.Private[SuggestionRow]
    adversary: str = strawberry.field(description="The adversary that found it.")
    fields: JSON = strawberry.field(
        description="The suggested example's fields (input and the gold you claimed), the task's shape."
    )
    draft: JSON = strawberry.field(description="Your draft, as it was checked.")
    edits: list[str] = strawberry.field(
        description="What changed from your draft, one edit each (\"statement: 'good' -> 'fine'\"); empty when it was "
        "written afresh."
    )
    rationale: str = strawberry.field(description="Why it might fool the target, in the adversary's words.")
    verdict: TargetVerdict = strawberry.field(description="The target's answer on it.")
    moves: list[ProbabilityMove] = strawberry.field(
        description="How each label's probability moved from your draft to it (empty when the target gives no "
        "probabilities)."
    )
    created_at: datetime = strawberry.field(description="When it was made (UTC).")

    @classmethod
    def from_row(cls, row: SuggestionRow, task: Any) -> Suggestion:
        before, after = row.draft_prediction.get("probabilities"), row.prediction.get("probabilities")
        moves = (
            [
                ProbabilityMove(label=str(k), before=float(v), after=float(after.get(k, 0.0)))
                for k, v in before.items()
                if isinstance(v, (int, float))
            ]
            if isinstance(before, dict) and isinstance(after, dict)
            else []
        )
        gold = gold_probability(task, row.prediction, row.fields) if task is not None else None
        return cls(
            id=global_id("Suggestion", row.id),
            row=row,
            adversary=row.adversary,
            fields=JSON(row.fields),
            draft=JSON(row.draft),
            edits=list(row.edits),
            rationale=row.rationale,
            verdict=TargetVerdict(
                prediction=Prediction.of(dict(row.prediction), task), fooled=True, gold_probability=gold
            ),
            moves=moves,
            created_at=as_utc(row.created_at),
        )


@strawberry.type(description="The target's answer on your draft and the edits that flip it.")
class EditsSuggested:
    draft: TargetVerdict = strawberry.field(
        description="The target's answer on your draft as it is; when it is already fooled there are no suggestions."
    )
    suggestions: list[Suggestion] = strawberry.field(
        description="Edits that flip the target, most convincing first (lowest probability of your gold)."
    )
    adversaries: list[str] = strawberry.field(description="The adversaries asked, in order.")
    queries: int = strawberry.field(description="How many times the target was asked (the draft included).")


@strawberry.type(
    description="A generation run: an adversary attacking a round's contexts and the examples the target got right, "
    "within a budget of target queries. Its task's owners and admins see it."
)
class AdversaryRun(Node):
    row: strawberry.Private[RunRow]
    adversary: str = strawberry.field(description="The adversary it runs.")
    round_number: int = strawberry.field(description="The number of the round it attacks.")

    @strawberry.field(description="The round it attacks; null when you may not see it.")
    async def round(self, info: Info) -> Round | None:
        found: Round | None = await related(info, "Round", self.row.round_id)
        return found

    status: AdversaryRunStatus = strawberry.field(description="Where it is.")
    budget: int = strawberry.field(description="The target queries it may spend.")
    seed: int = strawberry.field(description="Its seed: the same round, adversary and seed propose the same.")
    queries: int = strawberry.field(description="The target queries spent so far.")
    items_total: int = strawberry.field(description="The contexts and drafts it will attack (set once it starts).")
    items_done: int = strawberry.field(description="Those attacked so far.")
    candidates: int = strawberry.field(
        description="The candidates that fooled the target and entered the validation queue as MACHINE examples."
    )
    error: str | None = strawberry.field(description="Why it FAILED, or why a DONE run found nothing to attack.")
    created_at: datetime = strawberry.field(description="When it was asked for (UTC).")
    started_at: datetime | None = strawberry.field(description="When it started.")
    finished_at: datetime | None = strawberry.field(description="When it ended.")

    @classmethod
    def from_row(cls, row: RunRow, round_number: int) -> AdversaryRun:
        return cls(
            id=global_id("AdversaryRun", row.id),
            row=row,
            adversary=row.adversary,
            round_number=round_number,
            status=AdversaryRunStatus(row.status),
            budget=row.budget,
            seed=row.seed,
            queries=row.queries,
            items_total=row.items_total,
            items_done=row.items_done,
            candidates=row.candidates,
            error=row.error,
            created_at=as_utc(row.created_at),
            started_at=as_utc(row.started_at) if row.started_at else None,
            finished_at=as_utc(row.finished_at) if row.finished_at else None,
        )


async def run_node(info: Info, row: RunRow) -> AdversaryRun:
    """The run with its round's number."""
    round_ = await task_service.round_by_id(info.context.platform, row.round_id)
    return AdversaryRun.from_row(row, round_.number if round_ is not None else 0)


# --------------------------------------------------------------------------- queries


@task_list("adversaries")
async def adversaries_of(info: Info, task_code: str) -> list[Adversary]:
    """Task.adversaries (and the deprecated root field)."""
    return [Adversary.of(a) for a in await adversary_service.list_for_task(*info.context.caller, task_code)]


@task_list("adversaryRuns")
async def runs_of(info: Info, task_code: str, page: WorkPage) -> Connection[AdversaryRun]:
    """Task.adversaryRuns (and the deprecated root field)."""
    listing = await adversary_service.list_runs(*info.context.caller, task_code, page)
    window = listing.window
    return Connection.of(
        [(await run_node(info, row), window.cursor(row)) for row in window.rows],
        has_next=window.has_next,
        has_previous=window.has_previous,
        total=listing.total,
    )


@strawberry.type
class AdversaryQuery:
    @strawberry.field(
        description="The machine adversaries installed on the server, each with whether it can serve this task "
        "(anyone who can see the task).",
        deprecation_reason="Use Task.adversaries (task(code:) { ... }).",
    )
    @errors_as_graphql
    async def adversaries(self, info: Info, task_code: TaskCode) -> list[Adversary] | None:
        return await adversaries_of(info, task_code)

    @strawberry.field(
        description="The task's generation runs, a page at a time (owners and admins), newest first unless "
        "`orderBy` says otherwise.",
        deprecation_reason="Use Task.adversaryRuns (task(code:) { ... }).",
    )
    @errors_as_graphql
    async def adversary_runs(
        self,
        info: Info,
        task_code: TaskCode,
        status: RunStatusFilter = None,
        order_by: OrderBy = CreationOrder.NEWEST_FIRST,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[AdversaryRun] | None:
        return await runs_of(info, task_code, work_page(status, order_by, first, after, last, before))


# --------------------------------------------------------------------------- mutations


@strawberry.input(description="Your draft of an example, and where you are writing it.")
class SuggestEditsInput:
    task_code: str = strawberry.field(description="The code of the task (Task.code).")
    draft: JSON = strawberry.field(
        description="Your draft's fields as createExample takes them: the input and the gold you claim (and the "
        "context fields when you write without a stored context)."
    )
    context_id: strawberry.ID | None = strawberry.field(
        default=None, description="The context you are writing against (from nextContext), if any."
    )
    adversary: str | None = strawberry.field(
        default=None,
        description="Ask this adversary only (Query.adversaries); null: every available one that assists, in turn.",
    )
    limit: int = strawberry.field(default=3, description="How many suggestions at most, 1 to 10.")


@strawberry.input(description="A generation run to start.")
class GenerateCandidatesInput:
    task_code: str = strawberry.field(description="The code of the task (Task.code).")
    adversary: str = strawberry.field(description="The adversary to run (Query.adversaries; one that generates).")
    budget: int = strawberry.field(
        description="The target queries it may spend, within the task's daily budget for generation."
    )
    seed: int | None = strawberry.field(default=None, description="A seed for a run you can repeat; null: random.")


@strawberry.input(description="The generation run to stop.")
class CancelGenerationInput:
    id: strawberry.ID = strawberry.field(description="The run's id (AdversaryRun.id).")


@strawberry.type(description="The run started; follow it with node(id) or adversaryRuns.")
class GenerationStarted:
    run: AdversaryRun = strawberry.field(description="The run, QUEUED or already RUNNING.")


@strawberry.type(description="The run is stopped; the candidates it stored stay in the validation queue.")
class GenerationCancelled:
    run: AdversaryRun = strawberry.field(description="The run.")


SuggestEditsResult = Annotated[
    EditsSuggested | InvalidInput | NotAuthenticated | NotFound | RateLimited | RoundClosed | ServiceUnavailable,
    strawberry.union(
        "SuggestEditsResult",
        description="EditsSuggested on success (possibly with no suggestion). The other members are the expected "
        "failures, and store nothing: InvalidInput (the draft breaks the task's rules or repeats an example "
        "someone else wrote, an unknown or unsuitable adversary, no adversary available, a context of an earlier "
        "round), NotAuthenticated, NotFound (no such task or context you can see), RateLimited (your suggestions "
        "for this task this hour are used up), RoundClosed, ServiceUnavailable (the round's target model or the "
        "adversary cannot answer now: retry later).",
    ),
]
GenerateCandidatesResult = Annotated[
    GenerationStarted | InvalidInput | NotAuthenticated | Forbidden | NotFound | QuotaExceeded | RoundClosed,
    strawberry.union(
        "GenerateCandidatesResult",
        description="GenerationStarted on success. The other members are the expected failures, and start nothing: "
        "InvalidInput (an unknown or unsuitable adversary, a budget out of range or above what the task has left "
        "today), NotAuthenticated, Forbidden (not an owner of the task or an admin), NotFound (no such task you can "
        "see), QuotaExceeded (the task's daily budget is spent), RoundClosed (no open round).",
    ),
]
CancelGenerationResult = Annotated[
    GenerationCancelled | InvalidInput | NotAuthenticated | NotFound,
    strawberry.union(
        "CancelGenerationResult",
        description="GenerationCancelled on success (also for a run that had already ended). The other members are "
        "the expected failures: InvalidInput (not an AdversaryRun id), NotAuthenticated, NotFound (no such run you "
        "can see).",
    ),
]


@strawberry.type
class AdversaryMutation:
    @strawberry.mutation(
        description="Signed-in users ask for a few minimal edits of their draft that flip the round's target, each "
        "with the predicted label and how the probabilities moved. Nothing is written as an example: write one with "
        "createExample and the suggestion's id. Limited per user and task (60 an hour unless configured otherwise); "
        "each call asks the target at most 64 times by default."
    )
    @errors_as_union
    async def suggest_edits(
        self, info: Info, input: Annotated[SuggestEditsInput, strawberry.argument(description="The draft.")]
    ) -> SuggestEditsResult:
        try:
            result = await adversary_service.suggest_edits(
                *info.context.caller,
                task_code=input.task_code,
                draft=input.draft,
                context_id=None if input.context_id is None else parse_id(input.context_id, "contextId", "Context"),
                adversary=input.adversary,
                limit=input.limit,
            )
        except DomainServiceUnavailable as exc:  # the target or an adversary down: a member of this union
            return ServiceUnavailable(message=exc.message)
        task = info.context.platform.plugins.task(input.task_code)
        return EditsSuggested(
            draft=TargetVerdict.of(result.draft_verdict, task),
            suggestions=[Suggestion.from_row(r, task) for r in result.suggestions],
            adversaries=result.adversaries,
            queries=result.queries,
        )

    @strawberry.mutation(
        description="Task owners and admins run a machine adversary over the open round's contexts and the examples "
        "the target got right. Each candidate that fools the target enters the validation queue as a MACHINE example "
        "(validators judge it like any other and see its source only after voting). Runs in the background."
    )
    @errors_as_union
    async def generate_candidates(
        self, info: Info, input: Annotated[GenerateCandidatesInput, strawberry.argument(description="The run.")]
    ) -> GenerateCandidatesResult:
        row = await adversary_service.generate(
            *info.context.caller,
            task_code=input.task_code,
            adversary=input.adversary,
            budget=input.budget,
            seed=input.seed,
        )
        return GenerationStarted(run=await run_node(info, row))

    @strawberry.mutation(description="Task owners and admins stop a generation run; what it stored stays.")
    @errors_as_union
    async def cancel_generation(
        self, info: Info, input: Annotated[CancelGenerationInput, strawberry.argument(description="The run.")]
    ) -> CancelGenerationResult:
        row = await adversary_service.cancel_run(*info.context.caller, parse_id(input.id, "id", "AdversaryRun"))
        return GenerationCancelled(run=await run_node(info, row))
