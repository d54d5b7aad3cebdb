"""Webhook resolvers: register URLs for a task's events, read their delivery log, rotate or delete them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from dynaforge.api.context import RequestContext
from dynaforge.api.errors import (
    Forbidden,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    RateLimited,
    errors_as_graphql,
    errors_as_union,
)
from dynaforge.api.node import Node, global_id, parse_id
from dynaforge.db.models import Webhook as WebhookRow
from dynaforge.db.models import WebhookDelivery as DeliveryRow
from dynaforge.db.models import as_utc
from dynaforge.services import webhooks as webhook_service

Info = strawberry.Info[RequestContext]


@strawberry.type(description="One event sent to a webhook: how many attempts, how the last one ended.")
class WebhookDelivery(Node):
    id: strawberry.ID = strawberry.field(description="The webhook-id header, the same on every retry.")
    event: str
    status: str = strawberry.field(description="PENDING (being retried), DELIVERED or FAILED.")
    attempts: int
    response_status: int | None = strawberry.field(description="The HTTP status of the last attempt.")
    error: str | None
    created_at: datetime
    last_attempt_at: datetime | None
    delivered_at: datetime | None

    @classmethod
    def from_row(cls, row: DeliveryRow) -> WebhookDelivery:
        return cls(
            id=global_id("WebhookDelivery", row.message_id),
            event=row.event,
            status=row.status,
            attempts=row.attempts,
            response_status=row.response_status,
            error=row.error,
            created_at=as_utc(row.created_at),
            last_attempt_at=as_utc(row.last_attempt_at),
            delivered_at=as_utc(row.delivered_at),
        )


@strawberry.type(description="A URL that receives a task's events, signed as Standard Webhooks specify.")
class Webhook(Node):
    row: strawberry.Private[WebhookRow]
    id: strawberry.ID
    url: str
    events: list[str]
    description: str
    active: bool
    created_at: datetime

    @strawberry.field(description="The newest deliveries first.")
    @errors_as_graphql
    async def deliveries(self, info: Info, first: int = 20) -> list[WebhookDelivery]:
        rows = await webhook_service.deliveries(info.context.platform, self.row.id, first=first)
        return [WebhookDelivery.from_row(r) for r in rows]

    @classmethod
    def from_row(cls, row: WebhookRow) -> Webhook:
        return cls(
            row=row,
            id=global_id("Webhook", row.id),
            url=row.url,
            events=list(row.events),
            description=row.description,
            active=row.active,
            created_at=as_utc(row.created_at),
        )


@strawberry.input
class CreateWebhookInput:
    task_code: str
    url: str = strawberry.field(description="An http(s) URL; in production, a public host.")
    events: list[str] = strawberry.field(
        description="Any of modelFooled, exampleCreated, exampleValidated, roundChanged."
    )
    description: str = ""


@strawberry.input(description="What to change on a webhook; fields left out stay as they are.")
class UpdateWebhookInput:
    id: strawberry.ID
    url: str | None = strawberry.field(default=None, description="The registrant only.")
    events: list[str] | None = strawberry.field(default=None, description="The registrant only.")
    description: str | None = strawberry.field(default=None, description="The registrant only.")
    active: bool | None = strawberry.field(
        default=None,
        description="false pauses deliveries, true resumes them: the registrant, the task's owners and admins.",
    )


@strawberry.type(description="The webhook as it is now.")
class WebhookUpdated:
    webhook: Webhook


@strawberry.input
class WebhookIdInput:
    id: strawberry.ID


@strawberry.type(description="The webhook and its signing secret, shown this once: keep it to verify signatures.")
class WebhookSecret:
    webhook: Webhook
    secret: str = strawberry.field(description="whsec_...: the key for webhook-signature (Standard Webhooks).")


@strawberry.type
class WebhookDeleted:
    id: strawberry.ID


CreateWebhookResult = Annotated[
    WebhookSecret | InvalidInput | NotAuthenticated | NotFound | RateLimited, strawberry.union("CreateWebhookResult")
]
RotateWebhookSecretResult = Annotated[
    WebhookSecret | InvalidInput | NotAuthenticated | NotFound, strawberry.union("RotateWebhookSecretResult")
]
UpdateWebhookResult = Annotated[
    WebhookUpdated | InvalidInput | NotAuthenticated | Forbidden | NotFound, strawberry.union("UpdateWebhookResult")
]
DeleteWebhookResult = Annotated[
    WebhookDeleted | InvalidInput | NotAuthenticated | NotFound, strawberry.union("DeleteWebhookResult")
]


@strawberry.type
class WebhookQuery:
    @strawberry.field(description="Your webhooks on a task (its owners and admins: everyone's), with their deliveries.")
    @errors_as_graphql
    async def webhooks(self, info: Info, task_code: str) -> list[Webhook]:
        return [Webhook.from_row(r) for r in await webhook_service.list_webhooks(*info.context.caller, task_code)]


@strawberry.type
class WebhookMutation:
    @strawberry.mutation(description="Register a URL for a task's events. The answer holds the signing secret, once.")
    @errors_as_union
    async def create_webhook(self, info: Info, input: CreateWebhookInput) -> CreateWebhookResult:
        made = await webhook_service.create(
            *info.context.caller, input.task_code, input.url, list(input.events), description=input.description
        )
        return WebhookSecret(webhook=Webhook.from_row(made.webhook), secret=made.secret)

    @strawberry.mutation(description="A new signing secret for a webhook (the old one stops working at once).")
    @errors_as_union
    async def rotate_webhook_secret(self, info: Info, input: WebhookIdInput) -> RotateWebhookSecretResult:
        made = await webhook_service.rotate_secret(*info.context.caller, parse_id(input.id, "id", "Webhook"))
        return WebhookSecret(webhook=Webhook.from_row(made.webhook), secret=made.secret)

    @strawberry.mutation(
        description="Change a webhook's URL, events or description (its registrant), or pause and resume it (also "
        "the task's owners and admins)."
    )
    @errors_as_union
    async def update_webhook(self, info: Info, input: UpdateWebhookInput) -> UpdateWebhookResult:
        row = await webhook_service.change(
            *info.context.caller,
            parse_id(input.id, "id", "Webhook"),
            url=input.url,
            events=None if input.events is None else list(input.events),
            description=input.description,
            active=input.active,
        )
        return WebhookUpdated(webhook=Webhook.from_row(row))

    @strawberry.mutation(description="Delete a webhook and its delivery log.")
    @errors_as_union
    async def delete_webhook(self, info: Info, input: WebhookIdInput) -> DeleteWebhookResult:
        gone = await webhook_service.delete(*info.context.caller, parse_id(input.id, "id", "Webhook"))
        return WebhookDeleted(id=global_id("Webhook", gone))
