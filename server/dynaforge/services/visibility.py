"""Who sees an example's gold, and what everyone else sees of it: one policy for queries, subscriptions, webhooks
and data sets alike.

An example's gold (its target fields and the fields its task declares ``reveals_gold``) is for its author, the
task's owners and admins: ``example(id)`` answers them and nobody else. Everyone else who may follow the task's
events (a subscription, a webhook) gets the example *redacted* (:func:`redact_payload`): its other fields, its
round and counters, but not the gold fields, not the model's prediction (with ``fooled``, the prediction tells
the gold of a two-class task), not a correction, and not the author. Data-set items whose gold the reader may not
see lose the same fields (:func:`without_gold`).

Uploaded predictions on a scoring set are scored at once on the set's public part only (:func:`public_part`); the
private part's figures are held until :func:`held_released`, so that repeated submissions cannot read the gold of
the items that decide the final ranking off the leaderboard.
"""

from __future__ import annotations

import random
from typing import Any

from dynaforge.db.models import Dataset, DatasetAccess
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
    redacted["redacted"] = True
    redacted.pop("corrected_target", None)
    redacted.pop("user_id", None)
    # where it came from, too: validators judge an example before they learn whether a machine wrote it
    redacted.pop("source", None)
    redacted.pop("adversary", None)
    return redacted


def public_part(dataset: Dataset, share: float) -> list[bool]:
    """Which items of a scoring set are its public part (True), for uploaded predictions: ``share`` of them (at
    least one, and at least one left private when the set has two or more), drawn by a generator seeded with the
    set's id and seed, so the split is the same for every submission and never changes."""
    size = dataset.size
    count = min(max(1, round(size * share)), size - 1) if size > 1 else size
    order = list(range(size))
    random.Random(f"public-part:{dataset.id}:{dataset.seed}").shuffle(order)
    chosen = set(order[:count])
    return [position in chosen for position in range(size)]


def held_released(dataset: Dataset, round_ended: bool) -> bool:
    """Whether the held (private-part) figures of uploaded predictions on ``dataset`` may be read: once the round
    it was built from has ended, or once it is no longer a scoring set (its gold is then no secret)."""
    return dataset.access != DatasetAccess.SCORING or round_ended
