"""Example type and its connection."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import RequestContext
from dynaforge.api.node import Node, global_id
from dynaforge.api.types.context_type import ContextType
from dynaforge.api.types.round import Round
from dynaforge.api.types.task import Task
from dynaforge.api.types.user import User
from dynaforge.db.models import Example as ExampleRow
from dynaforge.db.models import ExampleStatus as Status
from dynaforge.db.models import Round as RoundRow
from dynaforge.db.models import User as UserRow
from dynaforge.db.models import Validation as ValidationRow
from dynaforge.db.models import as_utc
from dynaforge.services import examples as example_service
from dynaforge.services import tasks as task_service


@strawberry.enum(description="Where an example is in its life.")
class ExampleStatus(Enum):
    PENDING_PREDICTION = Status.PENDING_PREDICTION
    CREATED = Status.CREATED
    RETRACTED = Status.RETRACTED
    FLAGGED = Status.FLAGGED
    ACCEPTED = Status.ACCEPTED
    REJECTED = Status.REJECTED


@strawberry.type(description="Validators' votes on an example.")
class Votes:
    correct: int
    incorrect: int
    flagged: int


async def _round(info: strawberry.Info[RequestContext], round_id: int) -> Round:
    return Round.from_row(await info.context.loaders["round"].load(round_id))


async def _task(info: strawberry.Info[RequestContext], task_id: int, code: str | None) -> Task:
    if code is None:
        code = await info.context.loaders["task_code"].load(task_id)
    return Task.from_view(await task_service.get_task(*info.context.caller, code))


async def _context(info: strawberry.Info[RequestContext], context_id: int) -> ContextType | None:
    row = await example_service.cached_context(info.context.platform, context_id)
    return None if row is None else ContextType.from_row(row)


@strawberry.enum(description="A validator's verdict on an example.")
class ValidationLabel(Enum):
    CORRECT = "CORRECT"
    INCORRECT = "INCORRECT"
    FLAGGED = "FLAGGED"


@strawberry.type(description="One validator's vote on an example, as the task's owners and admins see it.")
class Validation(Node):
    id: strawberry.ID
    label: ValidationLabel
    reason: str | None = strawberry.field(description="Why, in the validator's words (required for FLAGGED).")
    corrected_target: JSON | None = strawberry.field(
        description="With INCORRECT: the target fields as the validator says they should be (the task's shape)."
    )
    by_owner: bool = strawberry.field(description="Whether an owner or admin cast it (such a vote decides alone).")
    created_at: datetime
    validator: User

    @classmethod
    def of(cls, vote: ValidationRow, validator: UserRow) -> Validation:
        return cls(
            id=global_id("Validation", vote.id),
            label=ValidationLabel(vote.label),
            reason=vote.reason,
            corrected_target=None if vote.corrected_target is None else JSON(vote.corrected_target),
            by_owner=vote.by_owner,
            created_at=as_utc(vote.created_at),
            validator=User.from_row(validator),
        )


async def _review(info: strawberry.Info[RequestContext], example_id: int) -> example_service.Review | None:
    review: example_service.Review | None = await info.context.loaders["review"].load(example_id)
    return review


@strawberry.type(description="An example written against a target model.")
class Example(Node):
    row: strawberry.Private[ExampleRow]
    id: strawberry.ID
    fields: JSON = strawberry.field(description="The annotator's input, target and metadata fields.")
    prediction: JSON | None = strawberry.field(description="The target model's prediction (null while pending).")
    model_predictions: JSON = strawberry.field(description="Each target model's prediction and latency.")
    fooled: bool | None = strawberry.field(description="Whether the model was fooled (null while pending).")
    status: ExampleStatus
    tag: str | None
    time_taken_ms: int | None
    created_at: datetime

    # What the caller read already (a page reads its rounds in the same query). These resolvers are synchronous
    # and hand GraphQL an awaitable only when they must load: an async resolver per row and field costs more than
    # the page's query.
    known_task_code: strawberry.Private[str | None] = None
    known_round: strawberry.Private[RoundRow | None] = None

    @strawberry.field(description="The task it was written for.")
    def task(self, info: strawberry.Info[RequestContext]) -> Task:
        return _task(info, self.row.task_id, self.known_task_code)  # type: ignore[return-value]  # awaited (above)

    @strawberry.field(description="The round it was written in.")
    def round(self, info: strawberry.Info[RequestContext]) -> Round:
        if self.known_round is not None:
            return Round.from_row(self.known_round)
        return _round(info, self.row.round_id)  # type: ignore[return-value]  # an awaitable (see above)

    @strawberry.field(
        description="The context it was written against; null when the example holds its context fields itself."
    )
    def context(self, info: strawberry.Info[RequestContext]) -> ContextType | None:
        if self.row.context_id is None:
            return None
        return _context(info, self.row.context_id)  # type: ignore[return-value]  # awaited (see above)

    @strawberry.field(
        description="Who wrote it: for the author themself and the task's owners and admins; null for everyone else."
    )
    async def author(self, info: strawberry.Info[RequestContext]) -> User | None:
        review = await _review(info, self.row.id)
        return None if review is None or review.author is None else User.from_row(review.author)

    @strawberry.field(
        description="Why it was flagged (FLAGGED examples): for the author and the task's owners and admins."
    )
    async def flag_reason(self, info: strawberry.Info[RequestContext]) -> str | None:
        review = await _review(info, self.row.id)
        return None if review is None else review.flag_reason

    @strawberry.field(
        description="Every vote with its validator, reason and correction, oldest first: for the task's owners and "
        "admins; null for everyone else (the counts are in `votes`)."
    )
    async def validations(self, info: strawberry.Info[RequestContext]) -> list[Validation] | None:
        review = await _review(info, self.row.id)
        if review is None or review.validations is None:
            return None
        return [Validation.of(vote, validator) for vote, validator in review.validations]

    @strawberry.field(description="Validators' votes so far.")
    def votes(self) -> Votes:
        return Votes(
            correct=self.row.validations_correct,
            incorrect=self.row.validations_incorrect,
            flagged=self.row.validations_flagged,
        )

    @classmethod
    def from_row(cls, row: ExampleRow, *, task_code: str | None = None, round_row: RoundRow | None = None) -> Example:
        return cls(
            known_task_code=task_code,
            known_round=round_row,
            row=row,
            id=global_id("Example", row.id),
            fields=JSON(row.fields),
            prediction=None if row.prediction is None else JSON(row.prediction),
            model_predictions=JSON(row.model_predictions),
            fooled=row.fooled,
            status=ExampleStatus(row.status),
            tag=row.tag,
            time_taken_ms=row.time_taken_ms,
            created_at=as_utc(row.created_at),
        )


@strawberry.type
class ExampleEdge:
    node: Example
    cursor: str


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


@strawberry.type(description="A page of examples, newest first; pass pageInfo.endCursor as `after` for the next.")
class ExampleConnection:
    edges: list[ExampleEdge]
    page_info: PageInfo

    @classmethod
    def from_page(cls, page: example_service.Page) -> ExampleConnection:
        return cls(
            edges=[
                ExampleEdge(
                    node=Example.from_row(r, task_code=page.task_code, round_row=page.rounds.get(r.round_id)),
                    cursor=example_service.encode_cursor(r.id),
                )
                for r in page.items
            ],
            page_info=PageInfo(has_next_page=page.has_next, end_cursor=page.end_cursor),
        )
