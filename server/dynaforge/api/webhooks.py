"""Webhook resolvers: register URLs for a task's events, read their delivery log, rotate or delete them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from dynaforge.api.context import Info, TaskCode
from dynaforge.api.enums import WebhookDeliveryStatus, WebhookEvent, raw
from dynaforge.api.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    QuotaExceeded,
    errors_as_graphql,
    errors_as_union,
)
from dynaforge.api.node import Node, global_id, parse_id, parse_key, related
from dynaforge.api.task_lists import task_list
from dynaforge.api.types.connection import After, Before, Connection, First, Last
from dynaforge.api.types.user import User
from dynaforge.db.models import Webhook as WebhookRow
from dynaforge.db.models import WebhookDelivery as DeliveryRow
from dynaforge.db.models import as_utc
from dynaforge.services import webhooks as webhook_service


@strawberry.type(
    description="One event sent to a webhook: how many attempts, how the last one ended. Readable by those who may "
    "read the webhook."
)
class WebhookDelivery(Node):
    id: strawberry.ID = strawberry.field(description="The webhook-id header, the same on every retry.")
    event: WebhookEvent = strawberry.field(description="The event delivered.")
    status: WebhookDeliveryStatus = strawberry.field(description="Where the delivery is.")
    attempts: int = strawberry.field(
        description="Attempts made so far; after the last allowed one (8 unless configured otherwise) a failing "
        "delivery is FAILED."
    )
    response_status: int | None = strawberry.field(
        description="The HTTP status of the last attempt; null before the first, or when no HTTP answer came."
    )
    error: str | None = strawberry.field(
        description="Why the last attempt failed (the receiver's status, a network error, or an address webhooks "
        "may not call); null when it succeeded or none was made."
    )
    created_at: datetime = strawberry.field(description="When the event was queued for this webhook (ISO 8601, UTC).")
    last_attempt_at: datetime | None = strawberry.field(
        description="When the last attempt was made (ISO 8601, UTC); null before the first."
    )
    delivered_at: datetime | None = strawberry.field(
        description="When the receiver accepted it with a 2xx answer (ISO 8601, UTC); null until then."
    )

    @classmethod
    def from_row(cls, row: DeliveryRow) -> WebhookDelivery:
        return cls(
            id=global_id("WebhookDelivery", row.message_id),
            event=WebhookEvent(row.event),
            status=WebhookDeliveryStatus(row.status),
            attempts=row.attempts,
            response_status=row.response_status,
            error=row.error,
            created_at=as_utc(row.created_at),
            last_attempt_at=as_utc(row.last_attempt_at),
            delivered_at=as_utc(row.delivered_at),
        )


@strawberry.type(
    description="A URL that receives a task's events, signed as Standard Webhooks specify. Readable by its "
    "registrant and the task's owners and admins."
)
class Webhook(Node):
    row: strawberry.Private[WebhookRow]
    url: str = strawberry.field(description="Where the events are POSTed.")
    events: list[WebhookEvent] = strawberry.field(description="The events it receives, in alphabetical order.")
    description: str = strawberry.field(description="The registrant's note about it; may be empty.")
    active: bool = strawberry.field(
        description="Whether it receives events; false while paused with updateWebhook (no deliveries are made)."
    )
    created_at: datetime = strawberry.field(description="When it was registered (ISO 8601, UTC).")

    @strawberry.field(description="Who registered it; null when you may not see that account.")
    async def registrant(self, info: Info) -> User | None:
        found: User | None = await related(info, "User", self.row.user_id)
        return found

    @strawberry.field(description="Its deliveries, newest first (pages of up to 100).")
    @errors_as_graphql
    async def deliveries(
        self,
        info: Info,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[WebhookDelivery]:
        listing = await webhook_service.deliveries(
            info.context.platform, self.row.id, first=first, after=after, last=last, before=before
        )
        return Connection.from_listing(listing, WebhookDelivery.from_row)

    @classmethod
    def from_row(cls, row: WebhookRow) -> Webhook:
        return cls(
            row=row,
            id=global_id("Webhook", row.id),
            url=row.url,
            events=[WebhookEvent(e) for e in row.events],
            description=row.description,
            active=row.active,
            created_at=as_utc(row.created_at),
        )


@strawberry.input(description="A URL to register for a task's events.")
class CreateWebhookInput:
    task_code: str = strawberry.field(description="The code of the task (Task.code).")
    url: str = strawberry.field(
        description="An absolute http(s) URL of at most 2000 characters, without a user name or password; in "
        "production its host must resolve to public addresses only."
    )
    events: list[WebhookEvent] = strawberry.field(description="What it receives (at least one event).")
    description: str = strawberry.field(default="", description="A note for yourself, at most 500 characters.")


@strawberry.input(description="What to change on a webhook; fields left out stay as they are.")
class UpdateWebhookInput:
    id: strawberry.ID = strawberry.field(description="The webhook's id (Webhook.id).")
    url: str | None = strawberry.field(
        default=None, description="A new URL, under createWebhook's rules. The registrant only."
    )
    events: list[WebhookEvent] | None = strawberry.field(
        default=None, description="The new list of events (at least one). The registrant only."
    )
    description: str | None = strawberry.field(
        default=None, description="A new note, at most 500 characters. The registrant only."
    )
    active: bool | None = strawberry.field(
        default=None,
        description="false pauses deliveries, true resumes them: the registrant, the task's owners and admins.",
    )


@strawberry.type(description="The webhook as it is now.")
class WebhookUpdated:
    webhook: Webhook = strawberry.field(description="The webhook, with the changes made.")


@strawberry.input(description="The webhook whose signing secret is drawn again.")
class RotateWebhookSecretInput:
    id: strawberry.ID = strawberry.field(description="The webhook's id (Webhook.id).")


@strawberry.input(description="The webhook to delete, with its deliveries.")
class DeleteWebhookInput:
    id: strawberry.ID = strawberry.field(description="The webhook's id (Webhook.id).")


@strawberry.type(description="The webhook and its signing secret, shown this once: keep it to verify signatures.")
class WebhookSecret:
    webhook: Webhook = strawberry.field(description="The webhook the secret signs for.")
    secret: str = strawberry.field(description="whsec_...: the key for webhook-signature (Standard Webhooks).")


@strawberry.type(description="The webhook and its delivery log are deleted; no more events go to its URL.")
class WebhookDeleted:
    id: strawberry.ID = strawberry.field(description="The id the deleted webhook had.")


@strawberry.input(description="The delivery to send again.")
class RedeliverWebhookInput:
    id: strawberry.ID = strawberry.field(description="The delivery's id (WebhookDelivery.id).")


@strawberry.type(description="The delivery is queued again, under its own message id.")
class WebhookRedelivered:
    delivery: WebhookDelivery = strawberry.field(description="The delivery, PENDING again with no attempt made.")


CreateWebhookResult = Annotated[
    WebhookSecret | InvalidInput | NotAuthenticated | NotFound | QuotaExceeded,
    strawberry.union(
        "CreateWebhookResult",
        description="WebhookSecret: the webhook is registered; keep its secret. The other members are the expected "
        "failures: InvalidInput (a URL, event list or description that breaks the rules), NotAuthenticated, "
        "NotFound (no such task you can see), QuotaExceeded (you have 10 webhooks on this task: delete one first).",
    ),
]
RotateWebhookSecretResult = Annotated[
    WebhookSecret | InvalidInput | NotAuthenticated | NotFound,
    strawberry.union(
        "RotateWebhookSecretResult",
        description="WebhookSecret: the new secret is in force. The other members are the expected failures: "
        "InvalidInput (the id is not a Webhook's), NotAuthenticated, NotFound (no webhook of yours with that id: "
        "only its registrant rotates a secret).",
    ),
]
UpdateWebhookResult = Annotated[
    WebhookUpdated | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "UpdateWebhookResult",
        description="WebhookUpdated: the changes are made. The other members are the expected failures, and change "
        "nothing: InvalidInput (a field breaks createWebhook's rules), NotAuthenticated, Forbidden (an owner or "
        "admin who is not the registrant changing more than `active`), NotFound (no such webhook you may manage).",
    ),
]
RedeliverWebhookResult = Annotated[
    WebhookRedelivered | InvalidInput | NotAuthenticated | NotFound | Conflict,
    strawberry.union(
        "RedeliverWebhookResult",
        description="WebhookRedelivered: the delivery is queued again. The other members are the expected failures, "
        "and send nothing: InvalidInput (the id is not a WebhookDelivery's), NotAuthenticated, NotFound (no such "
        "delivery of a webhook you may manage), Conflict (it is still being sent, or its webhook is paused).",
    ),
]
DeleteWebhookResult = Annotated[
    WebhookDeleted | InvalidInput | NotAuthenticated | NotFound,
    strawberry.union(
        "DeleteWebhookResult",
        description="WebhookDeleted: the webhook is gone. The other members are the expected failures: "
        "InvalidInput (the id is not a Webhook's), NotAuthenticated, NotFound (no such webhook you may manage).",
    ),
]


@task_list("webhooks")
async def webhooks_of(info: Info, task_code: str) -> list[Webhook]:
    """Task.webhooks (and the deprecated root field)."""
    return [Webhook.from_row(r) for r in await webhook_service.list_webhooks(*info.context.caller, task_code)]


@strawberry.type
class WebhookQuery:
    @strawberry.field(
        description="Your webhooks on a task (its owners and admins: everyone's), oldest first, with their "
        "deliveries. Signed-in users (anonymous callers get a NOT_AUTHENTICATED error).",
        deprecation_reason="Use Task.webhooks (task(code:) { ... }).",
    )
    @errors_as_graphql
    async def webhooks(self, info: Info, task_code: TaskCode) -> list[Webhook] | None:
        return await webhooks_of(info, task_code)


@strawberry.type
class WebhookMutation:
    @strawberry.mutation(
        description="Signed-in users register a URL for the events of a task they can see (at most 10 webhooks per "
        "task each). The answer holds the signing secret, once. Each event goes only to registrants who may see it "
        "then; a payload names the example's author only for the task's owners and admins."
    )
    @errors_as_union
    async def create_webhook(
        self, info: Info, input: Annotated[CreateWebhookInput, strawberry.argument(description="The webhook.")]
    ) -> CreateWebhookResult:
        made = await webhook_service.create(
            *info.context.caller,
            input.task_code,
            input.url,
            [raw(e) for e in input.events],
            description=input.description,
        )
        return WebhookSecret(webhook=Webhook.from_row(made.webhook), secret=made.secret)

    @strawberry.mutation(
        description="Its registrant only: a new signing secret for a webhook (the old one stops working at once)."
    )
    @errors_as_union
    async def rotate_webhook_secret(
        self, info: Info, input: Annotated[RotateWebhookSecretInput, strawberry.argument(description="The webhook.")]
    ) -> RotateWebhookSecretResult:
        made = await webhook_service.rotate_secret(*info.context.caller, parse_id(input.id, "id", "Webhook"))
        return WebhookSecret(webhook=Webhook.from_row(made.webhook), secret=made.secret)

    @strawberry.mutation(
        description="Change a webhook's URL, events or description (its registrant), or pause and resume it (also "
        "the task's owners and admins)."
    )
    @errors_as_union
    async def update_webhook(
        self,
        info: Info,
        input: Annotated[UpdateWebhookInput, strawberry.argument(description="The webhook and what to change.")],
    ) -> UpdateWebhookResult:
        row = await webhook_service.change(
            *info.context.caller,
            parse_id(input.id, "id", "Webhook"),
            url=input.url,
            events=None if input.events is None else [raw(e) for e in input.events],
            description=input.description,
            active=input.active,
        )
        return WebhookUpdated(webhook=Webhook.from_row(row))

    @strawberry.mutation(
        description="Send a delivery again (its webhook's registrant, the task's owners and admins): a FAILED one "
        "once its receiver is fixed, or a DELIVERED one its receiver lost. It keeps its webhook-id header, so a "
        "receiver that deduplicates on it acts once; its attempts count from zero again."
    )
    @errors_as_union
    async def redeliver_webhook(
        self, info: Info, input: Annotated[RedeliverWebhookInput, strawberry.argument(description="The delivery.")]
    ) -> RedeliverWebhookResult:
        message_id = parse_key(input.id, "id", "WebhookDelivery")
        row = await webhook_service.redeliver(*info.context.caller, message_id)
        return WebhookRedelivered(delivery=WebhookDelivery.from_row(row))

    @strawberry.mutation(
        description="Its registrant, the task's owners and admins delete a webhook and its delivery log."
    )
    @errors_as_union
    async def delete_webhook(
        self, info: Info, input: Annotated[DeleteWebhookInput, strawberry.argument(description="The webhook.")]
    ) -> DeleteWebhookResult:
        gone = await webhook_service.delete(*info.context.caller, parse_id(input.id, "id", "Webhook"))
        return WebhookDeleted(id=global_id("Webhook", gone))
