"""Who may follow which live events, and the event-bus topic each subscription listens to.

What a subscriber may see is what the same person may query:

* events that show examples (:data:`EXAMPLE_EVENTS`) go to signed-in users, never to anonymous subscribers; a
  hidden task's only to its owners and admins. Each example comes whole to those who may read it with
  ``example(id)`` (its author, the task's owners and admins) and redacted to everyone else: no gold fields, no
  prediction, no author (:mod:`dynaforge.services.visibility`, the policy webhooks follow too);
* ``roundChanged``: anyone who can see the task;
* ``evaluationProgress``: anyone who can see the model (a published one, or one's own; owners and admins).

A subscriber who sent a token that was refused is told why, even for events that anonymous subscribers may follow:
a mistyped or revoked token should not pass for anonymity.
"""

from __future__ import annotations

from dynaforge.errors import NotAuthenticated, RateLimited
from dynaforge.services import submissions as submission_service
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform

#: Events that carry examples: signed-in subscribers only.
EXAMPLE_EVENTS = frozenset({"modelFooled", "exampleCreated", "examplePredicted", "exampleValidated"})
#: Every event a subscription follows per task.
TASK_EVENTS = EXAMPLE_EVENTS | {"roundChanged"}


def _refuse_refused_token(actor: Actor) -> None:
    if actor.sign_in_error:
        raise NotAuthenticated(actor.sign_in_error)


async def task_topic(p: Platform, actor: Actor, event: str, task_code: str) -> str:
    """The topic of a task's ``event`` for ``actor``, who must see the task (and be signed in for events that show
    examples); NotAuthenticated or NotFound otherwise."""
    if event not in TASK_EVENTS:
        raise ValueError(f"{event!r} is not a task event")
    _refuse_refused_token(actor)
    if event in EXAMPLE_EVENTS and actor.is_anonymous:
        raise NotAuthenticated(
            "Examples are shown to signed-in users: send your API token in the connection_init payload as "
            '{"authorization": "Bearer <token>"}'
        )
    view = await task_service.get_task(p, actor, task_code)
    return f"{event}:{view.task.code}"


async def sees_all_gold(p: Platform, actor: Actor, task_code: str) -> bool:
    """Whether ``actor`` sees the gold of every example of the task (its owners and admins); others see their own
    examples' gold and the rest redacted (:mod:`dynaforge.services.visibility`). Checked when a subscription starts
    and again whenever its token is (an owner removed stops seeing gold within ``subscription_reauth_s``)."""
    if actor.is_anonymous:
        return False
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        return await task_service.is_owner(s, actor, view.row.id)


def open_subscription(p: Platform, actor: Actor, client: str | None, on_connection: int) -> str:
    """Admit one more subscription for ``actor`` (whose connection already holds ``on_connection``): RateLimited
    past ``subscriptions_per_connection`` on the connection or ``subscriptions_per_user`` for the person (anonymous
    subscribers: their address). Returns the key to hand back to :func:`close_subscription` when it ends."""
    settings = p.settings
    if on_connection >= settings.subscriptions_per_connection:
        raise RateLimited(
            f"Too many subscriptions on this connection: at most {settings.subscriptions_per_connection} at once; "
            "end one first",
            1.0,
        )
    key = f"user:{actor.user_id}" if actor.user_id is not None else f"client:{client or 'unknown'}"
    p.subscriptions.acquire(key, settings.subscriptions_per_user, "subscriptions for you")
    return key


def close_subscription(p: Platform, key: str) -> None:
    p.subscriptions.release(key)


def check_still_signed_in(actor: Actor) -> None:
    """A running subscription re-reads its token at least every ``subscription_reauth_s`` seconds; once the token
    signs no one in (revoked, the account disabled) the subscription ends, saying why."""
    if actor.is_anonymous:
        raise NotAuthenticated(actor.sign_in_error or "The API token is no longer valid; sign in again and resubscribe")


async def evaluation_topic(p: Platform, actor: Actor, model_id: int) -> tuple[str, bool]:
    """The topic of a model's evaluation progress for ``actor``, who must see the model, and whether they may see
    everything about it (a failed evaluation's error: its submitter, the task's owners and admins)."""
    _refuse_refused_token(actor)
    model, privileged = await submission_service.get_model(p, actor, model_id)
    return f"evaluationProgress:{model.id}", privileged
