"""Webhooks: a task's events POSTed to URLs that users register, signed as Standard Webhooks specify.

Who may register: any signed-in user, for the task events a subscription would show them (``modelFooled``,
``exampleCreated``, ``exampleValidated``, ``roundChanged``). Each event is sent only to registrants who may see it
at that moment (a hidden task's events to its owners and admins only; disabled accounts get nothing), and payloads
name the example's author (``user_id``) only for registrants who own the task (or are admins) at that moment. At
most ``MAX_PER_USER_AND_TASK`` webhooks per user and task. The registrant, the task's owners and admins may delete a
webhook; only the registrant may rotate its secret.

Each delivery is a row (the log the registrant reads) and one job message, both made after the event's commit by
the announcer (``services/announce.py``); the job POSTs the body with the headers
``webhook-id`` (the message id, the same on every retry, for idempotent receivers), ``webhook-timestamp`` (Unix
seconds) and ``webhook-signature`` (``v1,`` + base64 HMAC-SHA256 of ``{id}.{timestamp}.{body}`` under the secret's
key). A 2xx answer delivers it; anything else is retried by the job system with exponential backoff, up to
``webhook_max_attempts`` attempts, then the delivery is FAILED with the last status or error.

Secrets (``whsec_`` + base64 of 32 bytes) are shown once and never stored: each is derived from the server's
``SECRET_KEY`` and a random salt kept on the row. Rotating the secret draws a new salt.

Where a delivery may go: the outbound policy (:mod:`dynaforge.outbound`), in every environment: http(s) URLs only,
never to loopback, private, link-local or otherwise internal addresses unless the operator allowlists them
(``OUTBOUND_ALLOW``); checked when registering and again when sending, after DNS resolution (off the event loop),
and the request goes to the address that was checked, without following redirects. A delivery's recorded error
names the status or the failure, never what the receiver answered.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
import time
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlmodel import col

from dynaforge.db.models import Webhook, WebhookDelivery, utcnow
from dynaforge.db.models import WebhookDeliveryStatus as D
from dynaforge.errors import Conflict, FieldError, Forbidden, InvalidInput, NotFound, QuotaExceeded
from dynaforge.outbound import OutboundPolicy, OutboundRefused, Target
from dynaforge.services import cursors
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human
from dynaforge.services.announce import WEBHOOK_EVENTS
from dynaforge.services.job_queue import BrokerUnavailable
from dynaforge.services.platform import Platform
from dynaforge.settings import Settings

log = logging.getLogger(__name__)

EVENTS = WEBHOOK_EVENTS
MAX_PER_USER_AND_TASK = 10
MAX_PAGE = 100
TIMEOUT_S = 10.0


# --------------------------------------------------------------------------- signing (Standard Webhooks)


def secret_for(settings: Settings, webhook_id: int, salt: str) -> str:
    key = hmac.new(settings.secret_key.encode(), f"webhook:{webhook_id}:{salt}".encode(), hashlib.sha256).digest()
    return "whsec_" + base64.b64encode(key).decode()


def sign(secret: str, message_id: str, timestamp: int, body: str) -> str:
    """The ``webhook-signature`` header value for ``body``."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{message_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def verify(
    secret: str, headers: dict[str, str], body: str, *, tolerance_s: int = 300, now: float | None = None
) -> bool:
    """What a receiver does (and the tests): the signature matches and the timestamp is recent."""
    message_id, timestamp = headers.get("webhook-id", ""), headers.get("webhook-timestamp", "")
    if not timestamp.isdigit() or abs((now or time.time()) - int(timestamp)) > tolerance_s:
        return False
    expected = sign(secret, message_id, int(timestamp), body).split(",", 1)[1]
    return any(
        hmac.compare_digest(expected, part.split(",", 1)[1])
        for part in headers.get("webhook-signature", "").split()
        if part.startswith("v1,")
    )


# --------------------------------------------------------------------------- where deliveries may go


def _policy(settings: Settings) -> OutboundPolicy:
    return OutboundPolicy(settings.outbound_allow)


async def check_url(
    settings: Settings, url: str, *, registering: bool = False, detailed: bool = False
) -> Target | None:
    """The URL pinned to its checked address, or InvalidInput (on ``url``) for one the outbound policy refuses.
    ``registering``: a host that does not resolve yet is accepted (None; the receiver may not be up yet): every
    delivery checks it again, and an internal address is refused then. ``detailed`` (an admin asks): the refusal
    names the host's addresses; otherwise it only says refused, and the log has the reason."""
    try:
        return await _policy(settings).resolve_async(url)
    except OutboundRefused as exc:
        if registering and exc.rule == "dns":
            return None
        log.info("outbound policy: refused a webhook url: %s", exc.message)
        message = exc.message if detailed else exc.public
        raise InvalidInput.from_errors([FieldError("url", exc.rule, message)]) from None


# --------------------------------------------------------------------------- registration


@dataclass(frozen=True)
class Registered:
    webhook: Webhook
    secret: str


def _check_events(events: list[str]) -> list[str]:
    chosen = sorted(set(events or []))
    unknown = [e for e in chosen if e not in EVENTS]
    if not chosen or unknown:
        raise InvalidInput.from_errors(
            [
                FieldError(
                    "events",
                    "choice",
                    f"choose one or more of {', '.join(EVENTS)}"
                    + (f"; unknown: {', '.join(unknown)}" if unknown else ""),
                )
            ]
        )
    return chosen


async def create(
    p: Platform,
    actor: Actor,
    task_code: str,
    url: str,
    events: list[str],
    *,
    description: str = "",
) -> Registered:
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    chosen = _check_events(events)
    if len(description or "") > 500:
        raise InvalidInput.from_errors([FieldError("description", "max_length", "must have at most 500 characters")])
    await check_url(p.settings, url, registering=True, detailed=actor.is_admin)
    async with p.db.write() as s:
        count = await s.scalar(
            select(func.count())
            .select_from(Webhook)
            .where(col(Webhook.task_id) == view.row.id, col(Webhook.user_id) == actor.user_id)
        )
        count = count or 0
        if count >= MAX_PER_USER_AND_TASK:
            raise QuotaExceeded(
                f"You have {count} webhooks on {task_code}, the most allowed; delete one first",
                quota="WEBHOOKS_PER_TASK",
                limit=MAX_PER_USER_AND_TASK,
                retry_after_s=None,
            )
        webhook = Webhook(
            task_id=view.row.id,
            user_id=actor.person_id,
            url=url,
            events=chosen,
            description=description or "",
            secret_salt=secrets.token_hex(16),
        )
        s.add(webhook)
        await s.flush()
    p.caches.webhooks.pop(view.row.id)
    return Registered(webhook, secret_for(p.settings, webhook.id, webhook.secret_salt))


async def _own(s, actor: Actor, webhook_id: int) -> Webhook:
    webhook = await s.get(Webhook, webhook_id)
    if webhook is None or (
        webhook.user_id != actor.user_id and not await task_service.is_owner(s, actor, webhook.task_id)
    ):
        raise NotFound(f"No webhook {webhook_id} of yours; list them with Task.webhooks")
    return webhook


async def delete(p: Platform, actor: Actor, webhook_id: int) -> int:
    """The registrant (or the task's owners and admins) deletes a webhook and its delivery log."""
    actor = require_human(actor)
    async with p.db.write() as s:
        webhook = await _own(s, actor, webhook_id)
        task_id = webhook.task_id
        await s.delete(webhook)
    p.caches.webhooks.pop(task_id)
    return webhook_id


async def change(
    p: Platform,
    actor: Actor,
    webhook_id: int,
    *,
    url: str | None = None,
    events: list[str] | None = None,
    description: str | None = None,
    active: bool | None = None,
) -> Webhook:
    """Change a webhook; fields left out (None) stay. Where deliveries go and what they carry (``url``, ``events``,
    ``description``) only its registrant changes; the task's owners and admins may also pause or resume it
    (``active``), as they may delete it. A paused webhook gets no new deliveries."""
    actor = require_human(actor)
    chosen = _check_events(events) if events is not None else None
    if description is not None and len(description) > 500:
        raise InvalidInput.from_errors([FieldError("description", "max_length", "must have at most 500 characters")])
    if url is not None:
        await check_url(p.settings, url, registering=True, detailed=actor.is_admin)
    async with p.db.write() as s:
        webhook = await _own(s, actor, webhook_id)
        if webhook.user_id != actor.user_id and (url is not None or chosen is not None or description is not None):
            raise Forbidden(f"Only the registrant of webhook {webhook_id} changes where it sends and what")
        if url is not None:
            webhook.url = url
        if chosen is not None:
            webhook.events = chosen
        if description is not None:
            webhook.description = description
        if active is not None:
            webhook.active = active
        task_id = webhook.task_id
    p.caches.webhooks.pop(task_id)
    return webhook


async def rotate_secret(p: Platform, actor: Actor, webhook_id: int) -> Registered:
    """Only the registrant: whoever holds the secret can sign deliveries their receiver trusts."""
    actor = require_human(actor)
    async with p.db.write() as s:
        webhook = await s.get(Webhook, webhook_id)
        if webhook is None or webhook.user_id != actor.user_id:
            raise NotFound(f"No webhook {webhook_id} of yours; list them with Task.webhooks")
        webhook.secret_salt = secrets.token_hex(16)
        await s.flush()
    return Registered(webhook, secret_for(p.settings, webhook.id, webhook.secret_salt))


async def list_webhooks(p: Platform, actor: Actor, task_code: str) -> list[Webhook]:
    """Yours on the task; the task's owners and admins see everyone's."""
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        where = [col(Webhook.task_id) == view.row.id]
        if not await task_service.is_owner(s, actor, view.row.id):
            where.append(col(Webhook.user_id) == actor.user_id)
        return list(await s.scalars(select(Webhook).where(*where).order_by(col(Webhook.id))))


async def deliveries(
    p: Platform,
    webhook_id: int,
    *,
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
) -> cursors.Listing:
    """A page of a webhook's deliveries, newest first, for a reader already shown the webhook (see list_webhooks)."""
    request = cursors.PageRequest.of("delivery", first=first, after=after, last=last, before=before, max_size=MAX_PAGE)
    statement = select(WebhookDelivery).where(col(WebhookDelivery.webhook_id) == webhook_id)
    async with p.db.session() as s:
        page = await cursors.window(s, statement, col(WebhookDelivery.id), "delivery", request)
    return cursors.Listing(page, cursors.counter(p, statement))


# --------------------------------------------------------------------------- deliveries left pending


async def pending_ids(p: Platform) -> list[int]:
    async with p.db.session() as s:
        return list(
            await s.scalars(
                select(col(WebhookDelivery.id))
                .where(col(WebhookDelivery.status) == D.PENDING)
                .order_by(col(WebhookDelivery.id))
            )
        )


# --------------------------------------------------------------------------- sending (in the job)


class DeliveryFailed(Exception):
    """This attempt failed; the job system retries it later."""


async def attempt(settings: Settings, db, delivery_id: int, *, max_attempts: int) -> str:
    """One attempt at a delivery; returns its status after the attempt. Raises DeliveryFailed when it should be
    retried (fewer than ``max_attempts`` made)."""
    import httpx

    async with db.session() as s:
        delivery = await s.get(WebhookDelivery, delivery_id)
        webhook = None if delivery is None else await s.get(Webhook, delivery.webhook_id)
    if delivery is None or webhook is None or delivery.status != D.PENDING:
        return delivery.status if delivery is not None else "GONE"
    timestamp = int(time.time())
    secret = secret_for(settings, webhook.id, webhook.secret_salt)
    headers = {
        "content-type": "application/json",
        "user-agent": "Dynaforge-Webhooks/1",
        "webhook-id": delivery.message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, delivery.message_id, timestamp, delivery.body),
    }
    status_code, error = None, None
    try:
        target = await check_url(settings, webhook.url)
        assert target is not None
        async with httpx.AsyncClient(timeout=TIMEOUT_S, follow_redirects=False, trust_env=False) as client:
            response = await client.post(
                target.pinned_url,
                content=delivery.body.encode(),
                headers={**headers, **target.headers()},
                extensions=target.extensions(),
            )
        status_code = response.status_code
        if not 200 <= status_code < 300:
            error = f"the receiver answered HTTP {status_code}"
    except InvalidInput as exc:
        error = exc.message
    except httpx.TimeoutException:
        error = f"the receiver did not answer within {TIMEOUT_S:g}s"
    except httpx.HTTPError as exc:
        error = f"the request failed ({type(exc).__name__})"
    attempts = delivery.attempts + 1
    status = D.DELIVERED if error is None else (D.FAILED if attempts >= max_attempts else D.PENDING)
    async with db.write() as s:
        await s.execute(
            update(WebhookDelivery)
            .where(col(WebhookDelivery.id) == delivery_id)
            .values(
                attempts=attempts,
                response_status=status_code,
                error=error,
                status=status,
                last_attempt_at=utcnow(),
                delivered_at=utcnow() if status == D.DELIVERED else None,
            )
        )
    if status == D.PENDING:
        raise DeliveryFailed(f"delivery {delivery_id} attempt {attempts}: {error}")
    return status


async def redeliver(p: Platform, actor: Actor, message_id: str) -> WebhookDelivery:
    """Send a delivery again (its registrant, the task's owners and admins): a FAILED one after its receiver was
    fixed, or a DELIVERED one its receiver lost. It keeps its message id (the webhook-id header), so a receiver that
    deduplicates on it acts once; its attempts start again from zero. A delivery still PENDING is being sent
    (Conflict), and a paused webhook sends nothing (Conflict: resume it first)."""
    row = await get_delivery(p, actor, message_id)
    async with p.db.write() as s:
        webhook = await s.get(Webhook, row.webhook_id)
        if webhook is None:
            raise NotFound(f"No webhook delivery {message_id!r}")
        if not webhook.active:
            raise Conflict("The webhook is paused; resume it with updateWebhook(active: true), then redeliver")
        result = await s.execute(
            update(WebhookDelivery)
            .where(col(WebhookDelivery.id) == row.id, col(WebhookDelivery.status) != D.PENDING)
            .values(status=D.PENDING, attempts=0, response_status=None, error=None, delivered_at=None)
        )
        if not result.rowcount:  # type: ignore[attr-defined]
            raise Conflict(f"Delivery {message_id!r} is still being sent; wait for it to end")
    if p.jobs is not None:
        try:
            p.jobs.send_webhooks([row.id])
        except BrokerUnavailable as exc:  # stored PENDING: sent again at the next start
            log.error("webhook delivery %s stays pending: %s", row.id, exc)
    async with p.db.session() as s:
        fresh = await s.get(WebhookDelivery, row.id)
    if fresh is None:
        raise NotFound(f"No webhook delivery {message_id!r}")
    return fresh


async def get_webhook(p: Platform, actor: Actor, webhook_id: int) -> Webhook:
    """A webhook, for its registrant and the task's owners and admins (as list_webhooks)."""
    actor = require_human(actor)
    async with p.db.session() as s:
        return await _own(s, actor, webhook_id)


async def get_delivery(p: Platform, actor: Actor, message_id: str) -> WebhookDelivery:
    """A delivery by its message id, for those who may read its webhook."""
    actor = require_human(actor)
    async with p.db.session() as s:
        row = await s.scalar(select(WebhookDelivery).where(col(WebhookDelivery.message_id) == message_id))
        if row is None:
            raise NotFound(f"No webhook delivery {message_id!r}")
        try:
            await _own(s, actor, row.webhook_id)
        except NotFound:
            raise NotFound(f"No webhook delivery {message_id!r}") from None
    return row
