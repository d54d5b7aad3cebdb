"""Who sees an example's gold, and what everyone else sees of it: one policy for queries, subscriptions, webhooks
and data sets alike.

An example's gold (its target fields and the fields its task declares ``reveals_gold``) is for its author, the
task's owners and admins: ``example(id)`` answers them and nobody else. Everyone else who may follow the task's
events (a subscription, a webhook) gets the example *redacted* (:func:`redact_payload`): its other fields, its
round and counters, but not the gold fields, not the model's prediction, not whether it fooled the model, not a
correction, and not the author. ``fooled`` goes too because the target's verdict on a text is no secret (anyone may
write the same text as an example or a draft of their own and read the verdict), and on a two-class task the gold of
an example that fooled the target is the label the target did not give; for the same reason they receive no
``modelFooled`` event of someone else's example at all (:func:`event_for`), whose very arrival says it fooled.
Data-set items whose gold the reader may not see lose the gold fields (:func:`without_gold`).

Every evaluation on a scoring set (a model's, uploaded predictions', a data selection's; on the set and on its
perturbed copies alike) shows the figures of the set's public part only (:func:`public_part`); the private part's
figures are held until :func:`held_released`, so that repeated submissions cannot read the gold of the items that
decide the final ranking off the leaderboard.
"""

from __future__ import annotations

import random
from typing import Any

from sqlmodel import col, select

from dynaforge.db.models import Dataset, DatasetAccess, Round
from dynaforge.tasks.base import Task


def without_gold(task: Task | None, fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` without the task's gold fields; none at all when the task is unknown (its gold fields cannot be
    named, so nothing is shown rather than too much)."""
    if task is None:
        return {}
    hidden = task.gold_field_names()
    return {k: v for k, v in fields.items() if k not in hidden}


def sees_gold(*, privileged: bool, viewer_id: int | None, author_id: int | None) -> bool:
    """Whether a viewer sees an example's gold: the task's owners and admins (``privileged``) and its author."""
    return privileged or (viewer_id is not None and viewer_id == author_id)


def redact_payload(task: Task | None, payload: dict[str, Any]) -> dict[str, Any]:
    """An example event's payload (``announce.example_payload``) as a viewer without its gold may see it."""
    redacted = dict(payload)
    redacted["fields"] = without_gold(task, payload.get("fields") or {})
    redacted["prediction"] = None
    redacted["model_predictions"] = []
    redacted["fooled"] = None  # with the target's verdict on the same text, a two-class task's gold
    redacted["redacted"] = True
    redacted.pop("corrected_target", None)
    redacted.pop("verdict", None)  # it says whether the model was fooled, and why
    redacted.pop("user_id", None)
    # where it came from, too: validators judge an example before they learn whether a machine wrote it
    redacted.pop("source", None)
    redacted.pop("adversary", None)
    return redacted


#: Example events whose arrival alone says the example fooled the model: whole or not at all (:func:`event_for`).
FOOLING_EVENTS = frozenset({"modelFooled"})


def event_for(
    event: str, task: Task | None, payload: dict[str, Any], *, privileged: bool, viewer_id: int | None
) -> dict[str, Any] | None:
    """An example event's payload as one viewer receives it: whole when they see its gold (:func:`sees_gold`),
    else redacted, or None (not at all) for an event in :data:`FOOLING_EVENTS`."""
    if sees_gold(privileged=privileged, viewer_id=viewer_id, author_id=payload.get("user_id")):
        return payload
    if event in FOOLING_EVENTS:
        return None
    return redact_payload(task, payload)


def public_part(root: Dataset, share: float, positions: list[int] | None = None) -> list[bool]:
    """Which items of a scoring set are its public part (True): ``share`` of the items of ``root`` (at least one, and
    at least one left private when it has two or more), drawn by a generator seeded with its id and seed, so the
    split is the same for every model and every submission and never changes. ``root`` is the set itself, or for a
    perturbed copy the set it was made from: ``positions`` then gives each of the copy's items' original position,
    so that a copy's item is public exactly when its original is (each copy drawing a split of its own would let
    public figures of the copies, over the same gold, uncover the original's private part)."""
    size = root.size
    count = min(max(1, round(size * share)), size - 1) if size > 1 else size
    order = list(range(size))
    random.Random(f"public-part:{root.id}:{root.seed}").shuffle(order)
    chosen = set(order[:count])
    if positions is None:
        return [position in chosen for position in range(size)]
    return [position in chosen for position in positions]


def public_share(root: Dataset, default: float) -> float:
    """The share of a scoring set's items in its public part: its own (1 for a published benchmark, say), else the
    server's ``SCORING_PUBLIC_SHARE``."""
    return root.public_share if root.public_share is not None else default


async def ended_rounds(s: Any, datasets: list[Dataset]) -> set[int]:
    """The ids of the rounds that ``datasets`` were built from and that have ended (for :func:`held_released`)."""
    round_ids = {d.round_id for d in datasets if d.round_id is not None}
    if not round_ids:
        return set()
    return set(
        await s.scalars(select(col(Round.id)).where(col(Round.id).in_(round_ids), col(Round.ended_at).is_not(None)))
    )


def held_released(dataset: Dataset, round_ended: bool) -> bool:
    """Whether the held (private-part) figures of evaluations on ``dataset`` may be read: once the round
    it was built from has ended, or once it is no longer a scoring set (its gold is then no secret)."""
    return dataset.access != DatasetAccess.SCORING or round_ended
