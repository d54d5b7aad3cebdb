"""Live events over graphql-transport-ws at ``/graphql``.

Authentication: the ``connection_init`` payload's ``authorization`` (``"Bearer <token>"``, or the bare token; also
``Authorization`` or ``token``). What a subscriber may see is what the same person may query:

* ``modelFooled``, ``exampleCreated``, ``exampleValidated``: examples are shown to signed-in users (any user may
  validate others' examples), never to anonymous subscribers; a hidden task only to its owners and admins.
* ``roundChanged``: anyone who can see the task.
* ``evaluationProgress``: anyone who can see the model (a published one, or one's own; owners and admins).

A token is checked when a subscription starts and again at least every ``REAUTH_S`` seconds while events flow,
so a revoked token stops receiving within that time. A subscriber that falls more than ``SUBSCRIBER_BUFFER``
events behind is dropped with an error (subscribe again); so is every subscriber when the event bus goes away.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator

import strawberry

from dynaforge.api.context import RequestContext
from dynaforge.api.errors import parse_id, query_error
from dynaforge.api.types.example import Example
from dynaforge.api.types.round import Round
from dynaforge.db.models import Round as RoundRow
from dynaforge.errors import DynaforgeError, NotAuthenticated
from dynaforge.events import EventBusUnavailable, SubscriberTooSlow
from dynaforge.services import auth as auth_service
from dynaforge.services import examples as example_service
from dynaforge.services import submissions as submission_service
from dynaforge.services import tasks as task_service

Info = strawberry.Info[RequestContext]

#: How often a long-lived subscription checks that its token is still valid.
REAUTH_S = 30.0


@strawberry.type(description="A validator's vote on an example, or an owner's decision.")
class ExampleValidated:
    example: Example
    label: str = strawberry.field(description="CORRECT, INCORRECT or FLAGGED.")


@strawberry.type(description="A round of the task was opened, closed or edited.")
class RoundChanged:
    task_code: str
    change: str = strawberry.field(description="OPENED, CLOSED or UPDATED.")
    round: Round


@strawberry.type(description="An evaluation of the model started, finished a chunk, or ended.")
class EvaluationProgress:
    evaluation_id: strawberry.ID
    model_id: strawberry.ID
    dataset_id: strawberry.ID
    dataset_name: str
    status: str = strawberry.field(description="RUNNING, DONE or FAILED.")
    progress: float = strawberry.field(description="The share of the data set's chunks done, 0 to 1.")
    error: str | None = strawberry.field(
        description="A failed evaluation's error, for its submitter, the task's "
        "owners and admins (as on Evaluation.error)."
    )


class _Watch:
    """The subscriber's identity, re-checked while the subscription lives."""

    def __init__(self, info: Info):
        self.info = info
        self.checked = time.monotonic()

    async def recheck(self) -> None:
        context = self.info.context
        if context.token is None or time.monotonic() - self.checked < REAUTH_S:
            return
        self.checked = time.monotonic()
        context.actor = await auth_service.authenticate(context.platform, context.token)
        if context.actor.is_anonymous:
            raise NotAuthenticated(
                context.actor.sign_in_error or "The API token is no longer valid; sign in again and resubscribe"
            )


def _refuse_bad_token(info: Info) -> None:
    if info.context.actor.sign_in_error:
        raise query_error(NotAuthenticated(info.context.actor.sign_in_error))


async def _events(info: Info, topic: str):
    """The bus's events for ``topic``; bus failures become GraphQL errors that say what to do."""
    watch = _Watch(info)
    try:
        async for payload in info.context.platform.events.subscribe(topic):
            await watch.recheck()
            yield payload
    except (SubscriberTooSlow, EventBusUnavailable) as exc:
        raise query_error(DynaforgeError(str(exc))) from None
    except DynaforgeError as exc:
        raise query_error(exc) from None


def _example(payload: dict) -> Example:
    return Example.from_row(
        example_service.example_from_payload(payload), task_code=payload["task_code"], round_number=payload["round"]
    )


async def _task_topic(info: Info, event: str, task_code: str, *, signed_in: bool) -> str:
    """The topic of a task's ``event`` for this subscriber, who must see the task (and be signed in when the
    events show examples)."""
    _refuse_bad_token(info)
    if signed_in and info.context.actor.is_anonymous:
        raise query_error(
            NotAuthenticated(
                "Examples are shown to signed-in users: send your API token in the connection_init payload as "
                '{"authorization": "Bearer <token>"}'
            )
        )
    try:
        view = await task_service.get_task(info.context.platform, info.context.actor, task_code)
    except DynaforgeError as exc:
        raise query_error(exc) from None
    return f"{event}:{view.task.code}"


@strawberry.type
class Subscription:
    @strawberry.subscription(
        description="Examples that fooled the task's target model, as they are stored (or as "
        "a pending one gets its prediction). Signed-in users."
    )
    async def model_fooled(self, info: Info, task_code: str) -> AsyncGenerator[Example, None]:
        topic = await _task_topic(info, "modelFooled", task_code, signed_in=True)
        async for payload in _events(info, topic):
            yield _example(payload)

    @strawberry.subscription(description="Every example stored for the task, fooling or not. Signed-in users.")
    async def example_created(self, info: Info, task_code: str) -> AsyncGenerator[Example, None]:
        topic = await _task_topic(info, "exampleCreated", task_code, signed_in=True)
        async for payload in _events(info, topic):
            yield _example(payload)

    @strawberry.subscription(
        description="Validation votes, flags and owners' decisions on the task's examples. Signed-in users."
    )
    async def example_validated(self, info: Info, task_code: str) -> AsyncGenerator[ExampleValidated, None]:
        topic = await _task_topic(info, "exampleValidated", task_code, signed_in=True)
        async for payload in _events(info, topic):
            yield ExampleValidated(example=_example(payload), label=payload["label"])

    @strawberry.subscription(description="Rounds of the task opened, closed or edited. Anyone who can see the task.")
    async def round_changed(self, info: Info, task_code: str) -> AsyncGenerator[RoundChanged, None]:
        topic = await _task_topic(info, "roundChanged", task_code, signed_in=False)
        async for payload in _events(info, topic):
            async with info.context.platform.db.session() as s:
                row = await s.get(RoundRow, payload["round_id"])
            if row is None:
                continue
            yield RoundChanged(task_code=payload["task_code"], change=payload["change"], round=Round.from_row(row))

    @strawberry.subscription(
        description="Progress of the model's evaluations: when each starts, after each chunk, "
        "and when it is done or failed. Anyone who can see the model."
    )
    async def evaluation_progress(
        self, info: Info, model_id: strawberry.ID
    ) -> AsyncGenerator[EvaluationProgress, None]:
        _refuse_bad_token(info)
        try:
            model, privileged = await submission_service.get_model(
                info.context.platform, info.context.actor, parse_id(model_id, "modelId")
            )
        except DynaforgeError as exc:
            raise query_error(exc) from None
        async for payload in _events(info, f"evaluationProgress:{model.id}"):
            yield EvaluationProgress(
                evaluation_id=strawberry.ID(str(payload["evaluation_id"])),
                model_id=strawberry.ID(str(payload["model_id"])),
                dataset_id=strawberry.ID(str(payload["dataset_id"])),
                dataset_name=payload["dataset_name"],
                status=payload["status"],
                progress=float(payload["progress"]),
                error=payload.get("error") if privileged else None,
            )
