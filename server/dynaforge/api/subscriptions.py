"""Live events over graphql-transport-ws at ``/graphql``.

Authentication: the ``connection_init`` payload's ``authorization`` (``"Bearer <token>"``, or the bare token; also
``Authorization`` or ``token``). What a subscriber may see is what the same person may query; who may follow which
events is decided in :mod:`dynaforge.services.subscriptions`.

A token is checked when a subscription starts and again at least every ``subscription_reauth_s`` seconds (a
setting) while events flow, so a revoked token stops receiving within that time. A subscriber that falls more than
``subscriber_buffer`` events behind is dropped with an error (subscribe again); so is every subscriber when the event
bus goes away. ``modelFooled(after:)`` resumes: it listens on the bus first, sends what the subscriber missed from
the database, then the live events it did not already send.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from typing import Annotated

import strawberry

from dynaforge.api.adversaries import AdversaryRun
from dynaforge.api.context import Info, TaskCode
from dynaforge.api.enums import EvaluationStatus, RoundChange
from dynaforge.api.errors import errors_as_graphql, query_error
from dynaforge.api.models import Evaluation
from dynaforge.api.node import global_id, parse_id, related
from dynaforge.api.training import TrainingJob, TrainingStatus
from dynaforge.api.types.example import Example, ExampleEvent, RedactedExample, ValidationLabel
from dynaforge.api.types.round import Round
from dynaforge.db.models import utcnow
from dynaforge.errors import DynaforgeError, ServiceUnavailable
from dynaforge.events import EventBusUnavailable, SubscriberTooSlow
from dynaforge.services import auth as auth_service
from dynaforge.services import examples as example_service
from dynaforge.services import replies as reply_service
from dynaforge.services import subscriptions as subscription_service
from dynaforge.services import tasks as task_service
from dynaforge.services import training as training_service
from dynaforge.services import visibility
from dynaforge.services.announce import UPDATE_EVENTS

_CURSOR = (
    "Subscribe again with `after` set to this to resume: what changed since comes first (an object may come twice)."
)
_AFTER = (
    "A cursor: the `cursor` of the last update received, or Task.updatesCursor read with the list the client "
    "shows. First sends, as they are now, the objects that changed since, and those queued or running; then live "
    "updates. Null: those queued or running, then live updates."
)


@strawberry.type(description="A validator's vote on an example, or an owner's decision.")
class ExampleValidated:
    example: ExampleEvent = strawberry.field(
        description="The example after the vote, with its new counts and status (redacted as in exampleCreated)."
    )
    label: ValidationLabel = strawberry.field(description="The vote (an owner's decision counts as one).")


@strawberry.type(description="A round of the task was opened, closed or edited.")
class RoundChanged:
    task_code: str = strawberry.field(description="The code of the task whose round changed.")
    change: RoundChange = strawberry.field(description="What happened to the round.")
    round: Round = strawberry.field(description="The round as it is now; for OPENED, the new round.")


@strawberry.type(description="A training job started, moved on, or ended.")
class TrainingProgress:
    job_id: strawberry.ID = strawberry.field(description="The id of the job (TrainingJob.id).")
    status: TrainingStatus = strawberry.field(description="RUNNING while it runs, then SUCCEEDED, FAILED or CANCELLED.")
    progress: float = strawberry.field(description="How far the recipe is, 0 to 1.")
    stage: str = strawberry.field(description="What the recipe is doing, in its own words.")
    error: str | None = strawberry.field(description="Why it FAILED.")
    candidate_id: strawberry.ID | None = strawberry.field(
        description="The registered candidate (RegisteredModel.id), once SUCCEEDED."
    )


@strawberry.type(
    description="A piece of the target's reply to your example, as it is written (replyStream). The first event "
    "(index 0, no model, empty text, not done) says the stream listens: send createExample after it."
)
class ReplyPiece:
    index: int = strawberry.field(
        description="The order of the piece: 0 for the first event, then one more per piece (join pieces in order)."
    )
    model: str | None = strawberry.field(description="The target model writing (a round can have several).")
    text: str = strawberry.field(description="What the model wrote since the last piece.")
    done: bool = strawberry.field(description="True on the last event: every model has answered or failed.")


@strawberry.type(description="An evaluation of the model started, finished a chunk, or ended.")
class EvaluationProgress:
    evaluation_id: strawberry.ID = strawberry.field(description="The id of the evaluation (Evaluation.id).")
    model_id: strawberry.ID = strawberry.field(description="The id of the model evaluated (Model.id).")
    dataset_id: strawberry.ID = strawberry.field(description="The id of the data set it is scored on (Dataset.id).")
    dataset_name: str = strawberry.field(description="The name of that data set.")
    status: EvaluationStatus = strawberry.field(
        description="RUNNING when it starts and after each chunk, then DONE or FAILED once, at the end."
    )
    progress: float = strawberry.field(description="The share of the data set's chunks done, 0 to 1.")
    error: str | None = strawberry.field(
        description="A failed evaluation's error, for its submitter, the task's "
        "owners and admins (as on Evaluation.error)."
    )


@strawberry.type(description="One of the task's evaluations changed: queued, started, after a chunk, or ended.")
class EvaluationUpdated:
    evaluation: Evaluation = strawberry.field(description="The evaluation as it is now.")
    cursor: str = strawberry.field(description=_CURSOR)


@strawberry.type(description="One of the task's training jobs changed: queued, started, moved on, or ended.")
class TrainingJobUpdated:
    job: TrainingJob = strawberry.field(description="The job as it is now.")
    cursor: str = strawberry.field(description=_CURSOR)


@strawberry.type(description="One of the task's generation runs changed: queued, started, moved on, or ended.")
class AdversaryRunUpdated:
    run: AdversaryRun = strawberry.field(description="The run as it is now.")
    cursor: str = strawberry.field(description=_CURSOR)


class _Watch:
    """The subscriber's identity, re-checked while the subscription lives."""

    def __init__(self, info: Info):
        self.info = info
        self.checked = time.monotonic()

    async def recheck(self) -> bool:
        """Re-read the token when it is due; True when it was (and still signs the subscriber in)."""
        context = self.info.context
        if context.token is None or time.monotonic() - self.checked < context.platform.settings.subscription_reauth_s:
            return False
        self.checked = time.monotonic()
        context.actor = await auth_service.authenticate(context.platform, context.token)
        subscription_service.check_still_signed_in(context.actor)
        return True


async def _events(
    info: Info,
    topic: str,
    on_recheck=None,
    missed: AsyncGenerator[dict, None] | None = None,
    listening: dict | None = None,
    first: AsyncGenerator[dict, None] | None = None,
):
    """The bus's events for ``topic``; bus failures become GraphQL errors that say what to do. ``on_recheck`` is
    awaited after each re-check of the token (to re-read what depends on who the subscriber is). ``missed``: events
    read from the database, sent first while the bus already listens (``subscription_service.resumed``).
    ``listening``: an event sent first, once the bus listens (so the subscriber knows nothing is missed after it).
    ``first``: like ``missed``, but the live events are all sent after it (state snapshots, which may repeat)."""
    watch = _Watch(info)
    context = info.context
    client = getattr(getattr(context.request, "client", None), "host", None)
    try:
        key = subscription_service.open_subscription(*context.caller, client, context.open_subscriptions)
    except DynaforgeError as exc:
        raise query_error(exc) from None
    context.open_subscriptions += 1
    resuming: AsyncGenerator[dict, None] | None = None
    try:
        async with info.context.platform.events.listen(topic) as live:
            if missed is not None:
                resuming = subscription_service.resumed(missed, live)
            if listening is not None:
                yield listening
            if first is not None:
                async for payload in first:
                    yield payload
            async for payload in resuming or live:
                if await watch.recheck() and on_recheck is not None:
                    await on_recheck()
                yield payload
    except (SubscriberTooSlow, EventBusUnavailable) as exc:
        # a new subscription fixes both (modelFooled resumes with `after`): say so with a code clients can act on
        raise query_error(ServiceUnavailable(str(exc))) from None
    except DynaforgeError as exc:
        raise query_error(exc) from None
    finally:
        if resuming is not None:
            await resuming.aclose()
        elif missed is not None:
            await missed.aclose()
        if first is not None:
            await first.aclose()
        context.open_subscriptions -= 1
        subscription_service.close_subscription(context.platform, key)


async def _updates(
    info: Info, event: str, task_code: str, after: str | None
) -> AsyncGenerator[tuple[object, str], None]:
    """The task's objects that change (an update event), each as the subscriber may see it (``node(id:)``), with
    the cursor to resume from: first the current ones (``subscription_service.current_updates``), then live ones."""
    caller = info.context.caller
    try:
        since = None if after is None else subscription_service.read_update_cursor(after)
        topic, task_id = await subscription_service.update_topic(*caller, event, task_code)
    except DynaforgeError as exc:
        raise query_error(exc) from None
    type_name = UPDATE_EVENTS[event]
    platform = info.context.platform

    async def current() -> AsyncGenerator[dict, None]:
        ids = await subscription_service.current_updates(platform, event, task_id, since)
        if ids:
            yield {"task_id": task_id, "ids": ids}

    @errors_as_graphql
    async def recheck() -> None:  # an owner removed since stops following training jobs and runs
        await subscription_service.update_topic(*info.context.caller, event, task_code)

    async for payload in _events(info, topic, recheck, first=current()):
        cursor = subscription_service.update_cursor(utcnow())  # before the read: later changes come on resuming
        for key in payload.get("ids") or []:
            shown = await related(info, type_name, key)
            if shown is not None:
                yield shown, cursor


def _example(payload: dict) -> Example:
    return Example.from_row(example_service.example_from_payload(payload), task_code=payload["task_code"])


def _shown(payload: dict) -> Example | RedactedExample:
    """The example of an event as this subscriber may see it: whole, or redacted in a type of its own."""
    row = example_service.example_from_payload(payload)
    if payload.get("redacted"):
        return RedactedExample.from_row(row, task_code=payload["task_code"])
    return Example.from_row(row, task_code=payload["task_code"])


async def _example_events(
    info: Info, event: str, task_code: str, missed: AsyncGenerator[dict, None] | None = None
) -> AsyncGenerator[dict, None]:
    """A task's example events as this subscriber may see each (whole, redacted, or not at all:
    ``visibility.event_for``); the ``missed`` ones first, alike."""
    topic = await _task_topic(info, event, task_code)
    context = info.context
    privileged = await _sees_all_gold(info, task_code)

    async def refresh() -> None:
        nonlocal privileged
        privileged = await _sees_all_gold(info, task_code)

    async for payload in _events(info, topic, refresh, missed):
        await _task_topic(info, event, task_code)  # hidden since (and not the subscriber's): the subscription ends
        task = context.platform.plugins.task(payload["task_code"])
        shown = visibility.event_for(event, task, payload, privileged=privileged, viewer_id=context.actor.user_id)
        if shown is not None:
            yield shown


@errors_as_graphql
async def _sees_all_gold(info: Info, task_code: str) -> bool:
    return await subscription_service.sees_all_gold(*info.context.caller, task_code)


@errors_as_graphql
async def _task_topic(info: Info, event: str, task_code: str) -> str:
    return await subscription_service.task_topic(*info.context.caller, event, task_code)


@errors_as_graphql
async def _evaluation_topic(info: Info, model_id: strawberry.ID) -> tuple[str, bool]:
    return await subscription_service.evaluation_topic(*info.context.caller, parse_id(model_id, "modelId", "Model"))


@strawberry.type(
    description="Live events, over the graphql-transport-ws protocol at /graphql. Send your API token in the "
    'connection_init payload as {"authorization": "Bearer <token>"}; it is checked again while events flow (every '
    "30 seconds unless configured otherwise), and once it is revoked the subscription ends with an error saying "
    "why. A subscriber that falls too far behind (or whose server loses its event bus) is dropped with an error "
    "coded SERVICE_UNAVAILABLE: subscribe again (modelFooled resumes with `after`, sending what was missed first)."
)
class Subscription:
    @strawberry.subscription(
        description="Examples that fooled the task's target model, as they are stored (or as "
        "a pending one gets its prediction). Signed-in users receive their own, and the task's owners and admins "
        "every one, whole; nobody receives someone else's otherwise: that an example fooled the target, with the "
        "target's verdict on the same text (which anyone may ask for), tells a two-class task's gold. "
        "To resume after a dropped connection (or after being dropped for falling behind), subscribe again with "
        "`after`: the examples missed since come first, in the order they fooled and by the same rules, then the "
        "live ones, none twice. An example may fool after examples stored later than it (its prediction or its "
        "verdict came late): it comes when it fooled, and its id may be smaller than those before it."
    )
    async def model_fooled(
        self,
        info: Info,
        task_code: TaskCode,
        after: Annotated[
            strawberry.ID | None,
            strawberry.argument(
                description="The id (Example.id) of the last example received. First sends every example of the "
                "task that fooled the model after that one did, was not retracted since and is the subscriber's to "
                "receive, in the order they fooled, each as it is now (its status and votes may have moved on); then "
                "live ones. An example stored earlier whose prediction or verdict came while the subscriber was away "
                "is among them. Only its position counts: the id of an example that did not fool, or of another "
                "task's, resumes from when it was stored. A long replay may outrun the subscriber's buffer: it is "
                "then dropped with an error, and subscribes again after the last example it got. Null: live events "
                "only."
            ),
        ] = None,
    ) -> AsyncGenerator[Example, None]:
        missed = None
        if after is not None:
            try:
                after_id = parse_id(after, "after", "Example")
            except DynaforgeError as exc:
                raise query_error(exc) from None
            missed = subscription_service.missed_fooled(*info.context.caller, task_code, after_id)
        async for payload in _example_events(info, "modelFooled", task_code, missed):
            yield _example(payload)

    @strawberry.subscription(
        description="Examples of the task that were stored while their prediction was pending (createExample "
        "answered PredictionPending), as each gets it, fooling or not: `prediction` and `fooled` are set. Signed-in "
        "users, redacted as in exampleCreated."
    )
    async def example_predicted(self, info: Info, task_code: TaskCode) -> AsyncGenerator[ExampleEvent, None]:
        async for payload in _example_events(info, "examplePredicted", task_code):
            yield _shown(payload)

    @strawberry.subscription(
        description="Examples of the task whose verdict waited (createExample answered VerdictPending: the task's "
        "judge model or its validators decide whether it fooled the model), as each is decided, or an owner "
        "overrules the judge: `fooled` and `verdict` are set. Signed-in users, redacted as in exampleCreated."
    )
    async def verdict_decided(self, info: Info, task_code: TaskCode) -> AsyncGenerator[ExampleEvent, None]:
        async for payload in _example_events(info, "verdictDecided", task_code):
            yield _shown(payload)

    @strawberry.subscription(
        description="Every example stored for the task, fooling or not. Signed-in users: an Example to its author, "
        "the task's owners and admins; to everyone else a RedactedExample (no gold fields, prediction, verdict, "
        "`fooled`, author or source, and no `id` of its own: `exampleId`)."
    )
    async def example_created(self, info: Info, task_code: TaskCode) -> AsyncGenerator[ExampleEvent, None]:
        async for payload in _example_events(info, "exampleCreated", task_code):
            yield _shown(payload)

    @strawberry.subscription(
        description="Validation votes, flags and owners' decisions on the task's examples. Signed-in users, the "
        "example redacted as in exampleCreated."
    )
    async def example_validated(self, info: Info, task_code: TaskCode) -> AsyncGenerator[ExampleValidated, None]:
        async for payload in _example_events(info, "exampleValidated", task_code):
            yield ExampleValidated(example=_shown(payload), label=ValidationLabel(payload["label"]))

    @strawberry.subscription(description="Rounds of the task opened, closed or edited. Anyone who can see the task.")
    async def round_changed(self, info: Info, task_code: TaskCode) -> AsyncGenerator[RoundChanged, None]:
        topic = await _task_topic(info, "roundChanged", task_code)
        async for payload in _events(info, topic):
            await _task_topic(info, "roundChanged", task_code)  # a task hidden since ends the subscription
            row = await task_service.round_by_id(info.context.platform, payload["round_id"])
            if row is None:
                continue
            yield RoundChanged(
                task_code=payload["task_code"], change=RoundChange(payload["change"]), round=Round.from_row(row)
            )

    @strawberry.subscription(
        description="The target's reply to your next example as it is written: pick a stream id, subscribe, wait "
        "for the first event, then send createExample with replyStream set to the id. Ends after the event with "
        "done. Your own streams only (signed-in users); a model that does not stream sends only done."
    )
    async def reply_stream(
        self,
        info: Info,
        stream_id: Annotated[
            str,
            strawberry.argument(description="Your stream id: 8 to 64 letters, digits, '-' or '_' (a random UUID)."),
        ],
    ) -> AsyncGenerator[ReplyPiece, None]:
        try:
            topic = reply_service.topic(info.context.actor, stream_id)
        except DynaforgeError as exc:
            raise query_error(exc) from None
        async for payload in _events(info, topic, listening={"index": 0, "model": None, "text": "", "done": False}):
            yield ReplyPiece(
                index=int(payload["index"]),
                model=payload.get("model"),
                text=str(payload.get("text") or ""),
                done=bool(payload.get("done")),
            )
            if payload.get("done"):
                return

    @strawberry.subscription(
        description="Progress of a training job: as it starts, as its recipe reports stages, and when it ends. The "
        "task's owners and admins."
    )
    async def training_progress(
        self,
        info: Info,
        job_id: Annotated[strawberry.ID, strawberry.argument(description="The id of the job (TrainingJob.id).")],
    ) -> AsyncGenerator[TrainingProgress, None]:
        try:
            topic = await training_service.progress_topic(
                *info.context.caller, parse_id(job_id, "jobId", "TrainingJob")
            )
        except DynaforgeError as exc:
            raise query_error(exc) from None
        async for payload in _events(info, topic):
            candidate = payload.get("candidate_id")
            yield TrainingProgress(
                job_id=global_id("TrainingJob", payload["job_id"]),
                status=TrainingStatus(payload["status"]),
                progress=float(payload.get("progress") or 0.0),
                stage=str(payload.get("stage") or ""),
                error=payload.get("error"),
                candidate_id=None if candidate is None else global_id("RegisteredModel", candidate),
            )

    @strawberry.subscription(
        description="The task's evaluations as they change: queued, started, after each chunk, done or failed, "
        "each as `node(id:)` shows it to you (none of a model you may not see). On subscribing, first those queued "
        "or running (and, with `after`, those that changed since). Anyone who can see the task."
    )
    async def evaluation_updated(
        self,
        info: Info,
        task_code: TaskCode,
        after: Annotated[str | None, strawberry.argument(description=_AFTER)] = None,
    ) -> AsyncGenerator[EvaluationUpdated, None]:
        async for shown, cursor in _updates(info, "evaluationUpdated", task_code, after):
            assert isinstance(shown, Evaluation)
            yield EvaluationUpdated(evaluation=shown, cursor=cursor)

    @strawberry.subscription(
        description="The task's training jobs as they change: queued, started, as the recipe moves on (about "
        "once a second), and when they end. On subscribing, first those queued or running (and, with `after`, those "
        "that changed since). The task's owners and admins."
    )
    async def training_job_updated(
        self,
        info: Info,
        task_code: TaskCode,
        after: Annotated[str | None, strawberry.argument(description=_AFTER)] = None,
    ) -> AsyncGenerator[TrainingJobUpdated, None]:
        async for shown, cursor in _updates(info, "trainingJobUpdated", task_code, after):
            assert isinstance(shown, TrainingJob)
            yield TrainingJobUpdated(job=shown, cursor=cursor)

    @strawberry.subscription(
        description="The task's generation runs as they change: queued, started, after each context, and when "
        "they end. On subscribing, first those queued or running (and, with `after`, those that changed since). The "
        "task's owners and admins."
    )
    async def adversary_run_updated(
        self,
        info: Info,
        task_code: TaskCode,
        after: Annotated[str | None, strawberry.argument(description=_AFTER)] = None,
    ) -> AsyncGenerator[AdversaryRunUpdated, None]:
        async for shown, cursor in _updates(info, "adversaryRunUpdated", task_code, after):
            assert isinstance(shown, AdversaryRun)
            yield AdversaryRunUpdated(run=shown, cursor=cursor)

    @strawberry.subscription(
        description="Progress of the model's evaluations: when each starts, after each chunk, "
        "and when it is done or failed. Anyone who can see the model."
    )
    async def evaluation_progress(
        self,
        info: Info,
        model_id: Annotated[strawberry.ID, strawberry.argument(description="The id of the model (Model.id).")],
    ) -> AsyncGenerator[EvaluationProgress, None]:
        topic, privileged = await _evaluation_topic(info, model_id)
        async for payload in _events(info, topic):
            yield EvaluationProgress(
                evaluation_id=global_id("Evaluation", payload["evaluation_id"]),
                model_id=global_id("Model", payload["model_id"]),
                dataset_id=global_id("Dataset", payload["dataset_id"]),
                dataset_name=payload["dataset_name"],
                status=EvaluationStatus(payload["status"]),
                progress=float(payload["progress"]),
                error=payload.get("error") if privileged else None,
            )
