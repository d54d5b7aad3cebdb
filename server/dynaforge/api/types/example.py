"""Example type and its connection."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Annotated, Any

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import Info
from dynaforge.api.enums import ExampleSource, ExampleStatus, VerdictSource
from dynaforge.api.node import Node, global_id, related
from dynaforge.api.types.context_type import ContextType
from dynaforge.api.types.prediction import ModelPrediction, Prediction
from dynaforge.api.types.round import Round
from dynaforge.api.types.task import Task
from dynaforge.api.types.user import User
from dynaforge.db.models import Example as ExampleRow
from dynaforge.db.models import ExampleStatus as Status
from dynaforge.db.models import User as UserRow
from dynaforge.db.models import Validation as ValidationRow
from dynaforge.db.models import as_utc
from dynaforge.services import examples as example_service
from dynaforge.services import tasks as task_service
from dynaforge.tasks.base import Task as PluginTask


@strawberry.type(
    description="Why a rule with a threshold decided as it did: the model is fooled when `score` is below "
    "`threshold` (or, with `fooledBelow` false, at or above it)."
)
class VerdictExplanation:
    measure: str = strawberry.field(description="What was measured, in people's words.")
    score: float = strawberry.field(description="The example's score.")
    threshold: float = strawberry.field(description="The task's threshold (its owners may set another).")
    fooled_below: bool = strawberry.field(description="Whether a score below the threshold means fooled.")


@strawberry.type(
    description="How a verdict that was not the task's rule came about: who decided, what, and why; an owner may "
    "overrule a judge."
)
class Verdict:
    decided_by: VerdictSource = strawberry.field(description="Who decides (or decided).")
    decided: bool = strawberry.field(description="False while the judge or the validators have yet to decide.")
    fooled: bool | None = strawberry.field(
        description="What the judge, the validators or the author decided (before any overruling); null while "
        "waiting, and for an example its validators flagged away."
    )
    rationale: str | None = strawberry.field(description="The judge's reasons, as it wrote them.")
    judge_model: str | None = strawberry.field(description="The judge model's name.")
    last_error: str | None = strawberry.field(
        description="Why the judge has given no verdict yet (it failed, or answered something that is not one)."
    )
    overruled: bool = strawberry.field(description="Whether a task owner overruled the judge (`fooled` is theirs).")
    overrule_reason: str | None = strawberry.field(description="Why the owner overruled it.")

    @classmethod
    def of(cls, verdict: dict[str, Any] | None) -> Verdict | None:
        if not isinstance(verdict, dict) or verdict.get("by") not in ("judge", "people", "author"):
            return None
        overruled = verdict.get("overruled") if isinstance(verdict.get("overruled"), dict) else None

        def text(value: Any) -> str | None:
            return value if isinstance(value, str) and value else None

        return cls(
            decided_by=VerdictSource(verdict["by"]),
            decided=verdict.get("state") == "decided",
            fooled=verdict.get("fooled") if isinstance(verdict.get("fooled"), bool) else None,
            rationale=text(verdict.get("rationale")),
            judge_model=text(verdict.get("model")),
            last_error=text(verdict.get("last_error")) if verdict.get("state") != "decided" else None,
            overruled=overruled is not None,
            overrule_reason=text(overruled.get("reason")) if overruled else None,
        )


@strawberry.type(description="Validators' votes on an example.")
class Votes:
    correct: int = strawberry.field(description="CORRECT votes so far, an owner's included.")
    incorrect: int = strawberry.field(description="INCORRECT votes so far, an owner's included.")
    flagged: int = strawberry.field(
        description="FLAGGED votes so far, including a flag raised by anyone but the author (that is their vote)."
    )

    @classmethod
    def of(cls, row: ExampleRow) -> Votes:
        return cls(
            correct=row.validations_correct, incorrect=row.validations_incorrect, flagged=row.validations_flagged
        )


async def _round(info: Info, round_id: int) -> Round:
    return Round.from_row(await info.context.loaders["round"].load(round_id))


async def _task(info: Info, task_id: int, code: str | None) -> Task:
    if code is None:
        code = await info.context.loaders["task_code"].load(task_id)
    return Task.from_view(await task_service.get_task(*info.context.caller, code))


async def _plugin_task(info: Info, row: ExampleRow) -> PluginTask | None:
    code = await info.context.loaders["task_code"].load(row.task_id)
    return None if code is None else info.context.platform.plugins.task(code)


async def _prediction(info: Info, row: ExampleRow) -> Prediction:
    return Prediction.of(row.prediction or {}, await _plugin_task(info, row))


async def _model_predictions(info: Info, row: ExampleRow) -> list[ModelPrediction]:
    task = await _plugin_task(info, row)
    return [ModelPrediction.of(m, task) for m in row.model_predictions]


async def _context(info: Info, context_id: int) -> ContextType | None:
    row = await example_service.cached_context(info.context.platform, context_id)
    return None if row is None else ContextType.from_row(row)


@strawberry.enum(description="A validator's verdict on an example.")
class ValidationLabel(Enum):
    CORRECT = strawberry.enum_value(
        "CORRECT",
        description="The example is sound and its target right; a quorum of these, or an owner's, accepts it.",
    )
    INCORRECT = strawberry.enum_value(
        "INCORRECT",
        description="The annotator's target is wrong (a corrected target may say what it should be); a quorum of "
        "these, or an owner's, rejects it.",
    )
    FLAGGED = strawberry.enum_value(
        "FLAGGED",
        description="The example should not be used at all (abusive, unusable, personal data); a quorum of these, "
        "or an owner's, rejects it.",
    )


@strawberry.type(description="How close an example is to an earlier one of its round (Example.nearDuplicate).")
class NearDuplicateMark:
    similarity: float = strawberry.field(
        description="The estimated Jaccard similarity of the two texts' shingles (MinHash), 0 to 1."
    )
    example_key: strawberry.Private[int | None]

    @strawberry.field(description="The earlier example; null when you may not see it, or it was deleted.")
    async def example(self, info: Info) -> Example | None:
        if self.example_key is None:
            return None
        found: Example | None = await related(info, "Example", self.example_key)
        return found


@strawberry.type(description="One validator's vote on an example, as the task's owners and admins see it.")
class Validation(Node):
    label: ValidationLabel = strawberry.field(description="The verdict the validator gave.")
    reason: str | None = strawberry.field(description="Why, in the validator's words (required for FLAGGED).")
    corrected_target: JSON | None = strawberry.field(
        description="With INCORRECT: the target fields as the validator says they should be (the task's shape)."
    )
    by_owner: bool = strawberry.field(description="Whether an owner or admin cast it (such a vote decides alone).")
    time_taken_ms: int | None = strawberry.field(
        description="How long the validator spent on the example before voting, in milliseconds, as their client "
        "measured it; null when it sent none."
    )
    created_at: datetime = strawberry.field(description="When the vote was cast (UTC).")
    validator: User = strawberry.field(description="Who cast it.")
    example_key: strawberry.Private[int]

    @strawberry.field(description="The example voted on; null when you may not see it.")
    async def example(self, info: Info) -> Example | None:
        found: Example | None = await related(info, "Example", self.example_key)
        return found

    @classmethod
    def of(cls, vote: ValidationRow, validator: UserRow) -> Validation:
        return cls(
            id=global_id("Validation", vote.id),
            label=ValidationLabel(vote.label),
            reason=vote.reason,
            corrected_target=None if vote.corrected_target is None else JSON(vote.corrected_target),
            by_owner=vote.by_owner,
            time_taken_ms=vote.time_taken_ms,
            created_at=as_utc(vote.created_at),
            validator=User.from_row(validator),
            example_key=vote.example_id,
        )


async def _sees_source(info: Info, row: ExampleRow) -> bool:
    """Whether the caller may see where the example came from (see ``Example.source``)."""
    if row.status in (Status.ACCEPTED, Status.REJECTED):
        return True
    if await _review(info, row.id) is not None:  # its author, the task's owners and admins
        return True
    voted: bool = await info.context.loaders["voted"].load(row.id)
    return voted


async def _review(info: Info, example_id: int) -> example_service.Review | None:
    review: example_service.Review | None = await info.context.loaders["review"].load(example_id)
    return review


@strawberry.type(
    description="An example an annotator wrote against a round's target model(s). Its author and the task's owners "
    "and admins read it by id and in `examples`; validators are served others' examples by exampleToValidate, and "
    "signed-in users who can see the task receive them from the example subscriptions. `author`, `flagReason` and "
    "`validations` say who may read them."
)
class Example(Node):
    row: strawberry.Private[ExampleRow]
    fields: JSON = strawberry.field(
        description="The example's values keyed by field name: the annotator's input, target and metadata fields, "
        "and the context fields too when it was written without a stored context."
    )
    fooled: bool | None = strawberry.field(
        description="Whether the model was fooled (null while pending, and in events for whoever may not see the "
        "example's gold: with the model's verdict on the same text it tells a two-class task's gold)."
    )
    status: ExampleStatus = strawberry.field(description="Where it is in its life.")
    tag: str | None = strawberry.field(
        description="The free label (at most 100 characters) its author gave it; null: none. With the task's "
        "oneExamplePerTag setting, a validator gets at most one example of each tag."
    )
    time_taken_ms: int | None = strawberry.field(
        description="How long its author took to write it, in milliseconds, as their client reported; null: not "
        "reported."
    )
    created_at: datetime = strawberry.field(description="When it was stored (UTC).")

    # What the caller read already (a page reads its rounds in the same query). These resolvers are synchronous
    # and hand GraphQL an awaitable only when they must load: an async resolver per row and field costs more than
    # the page's query.
    known_task_code: strawberry.Private[str | None] = None
    known_round: strawberry.Private[Round | None] = None  # built once per page for the rows of one round

    @strawberry.field(
        description="On a task whose judge model or validators decide (Task.verdictBy): who decided whether it "
        "fooled the model, and why; null on a task whose rule decides, and wherever `fooled` is hidden."
    )
    def verdict(self) -> Verdict | None:
        return Verdict.of(self.row.verdict)

    @strawberry.field(
        description="Why the task's rule decided `fooled` as it did, for a rule that compares a score with a "
        "threshold (word-overlap F1 for spans, chrF for translations); null for a rule that compares answers (the "
        "prediction shows it), while pending, for a judge's or validators' verdict, and when the task's threshold "
        "changed since the example was decided."
    )
    async def verdict_explanation(self, info: Info) -> VerdictExplanation | None:
        row = self.row
        if row.prediction is None or row.fooled is None or row.verdict is not None:
            return None
        plugin_task = await _plugin_task(info, row)
        if plugin_task is None or type(plugin_task).explain_verdict is PluginTask.explain_verdict:
            return None  # a rule that compares answers: no look-up of the task's settings
        view = await task_service.visible_task(*info.context.caller, row.task_id)  # with its owners' threshold
        context: dict[str, Any] = {}
        if row.context_id is not None:
            stored = await example_service.cached_context(info.context.platform, row.context_id)
            context = dict(stored.fields) if stored is not None else {}
        try:
            found = view.task.explain_verdict(dict(row.fields), dict(row.prediction), context)
        except Exception:  # noqa: BLE001 - a plugin that cannot explain an output explains nothing
            return None
        if found is None or found.fooled != row.fooled:
            return None
        return VerdictExplanation(
            measure=found.measure, score=found.score, threshold=found.threshold, fooled_below=found.fooled_below
        )

    @strawberry.field(description="The target model's answer (an ensemble's verdict); null while pending.")
    def prediction(self, info: Info) -> Prediction | None:
        if self.row.prediction is None:
            return None
        if self.known_task_code is not None:
            return Prediction.of(self.row.prediction, info.context.platform.plugins.task(self.known_task_code))
        return _prediction(info, self.row)  # type: ignore[return-value]  # an awaitable (see above)

    @strawberry.field(description="Each target model's own answer, verdict and latency, in the round's order.")
    def model_predictions(self, info: Info) -> list[ModelPrediction]:
        if not self.row.model_predictions:
            return []
        if self.known_task_code is not None:
            task = info.context.platform.plugins.task(self.known_task_code)
            return [ModelPrediction.of(m, task) for m in self.row.model_predictions]
        return _model_predictions(info, self.row)  # type: ignore[return-value]  # an awaitable (see above)

    @strawberry.field(description="The task it was written for.")
    def task(self, info: Info) -> Task:
        return _task(info, self.row.task_id, self.known_task_code)  # type: ignore[return-value]  # awaited (above)

    @strawberry.field(description="The round it was written in.")
    def round(self, info: Info) -> Round:
        if self.known_round is not None:
            return self.known_round
        return _round(info, self.row.round_id)  # type: ignore[return-value]  # an awaitable (see above)

    @strawberry.field(
        description="The context it was written against; null when the example holds its context fields itself."
    )
    def context(self, info: Info) -> ContextType | None:
        if self.row.context_id is None:
            return None
        return _context(info, self.row.context_id)  # type: ignore[return-value]  # awaited (see above)

    @strawberry.field(
        description="Who wrote it: for the author themself and the task's owners and admins; null for everyone else."
    )
    async def author(self, info: Info) -> User | None:
        review = await _review(info, self.row.id)
        return None if review is None or review.author is None else User.from_row(review.author)

    @strawberry.field(
        description="Why it was flagged (FLAGGED examples): for the author and the task's owners and admins."
    )
    async def flag_reason(self, info: Info) -> str | None:
        review = await _review(info, self.row.id)
        return None if review is None else review.flag_reason

    @strawberry.field(
        description="Why it still waits for a prediction (PENDING_PREDICTION examples): what the round's target "
        "answered that could not be read (a label outside the task's set, a missing field) and whether it is asked "
        "again, or that the target was down or too slow. For the author and the task's owners and admins; null "
        "for everyone else, and once it has a prediction."
    )
    async def pending_reason(self, info: Info) -> str | None:
        if self.row.status != Status.PENDING_PREDICTION or await _review(info, self.row.id) is None:
            return None
        round_ = await info.context.loaders["round"].load(self.row.round_id)
        return None if round_ is None else example_service.pending_reason(*info.context.caller, self.row, round_)

    @strawberry.field(
        description="Every vote with its validator, reason and correction, oldest first: for the task's owners and "
        "admins; null for everyone else (the counts are in `votes`)."
    )
    async def validations(self, info: Info) -> list[Validation] | None:
        review = await _review(info, self.row.id)
        if review is None or review.validations is None:
            return None
        return [Validation.of(vote, validator) for vote, validator in review.validations]

    @strawberry.field(
        description="The corrected target fields an owner applied from a validator's vote (the task's shape); the "
        "example's own `fields` stay as written. Null when none was applied."
    )
    def corrected_target(self) -> JSON | None:
        return None if self.row.corrected_target is None else JSON(self.row.corrected_target)

    @strawberry.field(
        description="The vote whose corrected target was applied: for the task's owners and admins (null for "
        "everyone else, and when none was applied)."
    )
    async def correction(self, info: Info) -> Validation | None:
        if self.row.correction_id is None:
            return None
        review = await _review(info, self.row.id)
        for vote, validator in (review.validations or []) if review is not None else []:
            if vote.id == self.row.correction_id:
                return Validation.of(vote, validator)
        return None

    @strawberry.field(
        description="Where it came from (HUMAN, ASSISTED, MACHINE): for its author, the task's owners and admins, "
        "validators who voted on it, and everyone once it is decided (ACCEPTED or REJECTED). Null for a validator "
        "who has not voted yet, so that the source cannot sway the vote."
    )
    async def source(self, info: Info) -> ExampleSource | None:
        if not await _sees_source(info, self.row):
            return None
        return ExampleSource(self.row.source)

    @strawberry.field(
        description="The machine adversary behind an ASSISTED or MACHINE example (its name, as `adversaries` lists "
        "it); null for a person's own example, and for whoever may not see `source`."
    )
    async def adversary(self, info: Info) -> str | None:
        if self.row.adversary is None or not await _sees_source(info, self.row):
            return None
        return self.row.adversary

    @strawberry.field(description="Validators' votes so far.")
    def votes(self) -> Votes:
        return Votes.of(self.row)

    @strawberry.field(
        description="Set when its author sent it although it was close to an earlier fooling example of the round "
        "(the task's nearDuplicateThreshold): how close, and which; null otherwise."
    )
    def near_duplicate(self) -> NearDuplicateMark | None:
        if self.row.near_duplicate_similarity is None:
            return None
        return NearDuplicateMark(
            similarity=round(self.row.near_duplicate_similarity, 4), example_key=self.row.near_duplicate_of
        )

    @classmethod
    def from_row(cls, row: ExampleRow, *, task_code: str | None = None, round_: Round | None = None) -> Example:
        return cls(
            known_task_code=task_code,
            known_round=round_,
            row=row,
            id=global_id("Example", row.id),
            fields=JSON(row.fields),
            fooled=row.fooled,
            status=ExampleStatus(row.status),
            tag=row.tag,
            time_taken_ms=row.time_taken_ms,
            created_at=as_utc(row.created_at),
        )


@strawberry.type(
    description="Someone else's example as a live event shows it to those who may not read it whole: without its "
    "gold fields, prediction, verdict, `fooled`, author and source. It has no `id` of its own, so a normalised "
    "cache never overwrites the example as example(id:) shows it to you with these gaps: `exampleId` names it."
)
class RedactedExample:
    row: strawberry.Private[ExampleRow]
    known_task_code: strawberry.Private[str | None] = None
    example_id: strawberry.ID = strawberry.field(description="The example's id (Example.id).")
    fields: JSON = strawberry.field(description="Its fields, less the gold ones (those with role TARGET).")
    status: ExampleStatus = strawberry.field(description="Where it is in its life.")
    tag: str | None = strawberry.field(description="The tag of the context it was written against, if any.")
    created_at: datetime = strawberry.field(description="When it was stored (UTC).")

    @strawberry.field(description="The task it was written for.")
    def task(self, info: Info) -> Task:
        return _task(info, self.row.task_id, self.known_task_code)  # type: ignore[return-value]  # awaited (above)

    @strawberry.field(description="The round it was written in.")
    def round(self, info: Info) -> Round:
        return _round(info, self.row.round_id)  # type: ignore[return-value]  # an awaitable (see above)

    @strawberry.field(
        description="The context it was written against; null when the example holds its context fields itself."
    )
    def context(self, info: Info) -> ContextType | None:
        if self.row.context_id is None:
            return None
        return _context(info, self.row.context_id)  # type: ignore[return-value]  # awaited (see above)

    @strawberry.field(description="Validators' votes so far.")
    def votes(self) -> Votes:
        return Votes.of(self.row)

    @classmethod
    def from_row(cls, row: ExampleRow, *, task_code: str | None = None) -> RedactedExample:
        """``row`` already redacted (``visibility.redact_payload``, read back by ``example_from_payload``)."""
        return cls(
            row=row,
            known_task_code=task_code,
            example_id=global_id("Example", row.id),
            fields=JSON(row.fields),
            status=ExampleStatus(row.status),
            tag=row.tag,
            created_at=as_utc(row.created_at),
        )


#: An example in a live event: whole for those who may read it, else redacted, in a type of its own.
ExampleEvent = Annotated[
    Example | RedactedExample,
    strawberry.union(
        "ExampleEvent",
        description="An example as a live event shows it to you: an Example when you may read it whole (your own; "
        "every one for the task's owners and admins), else a RedactedExample.",
    ),
]
