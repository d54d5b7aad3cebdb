"""Who sees an example's gold, and what everyone else sees of it: one policy for queries, subscriptions, webhooks
and data sets alike.

An example's gold (its target fields and the fields its task declares ``reveals_gold``) is for its author, the
task's owners and admins: ``example(id)`` answers them and nobody else. Everyone else who may follow the task's
events (a subscription, a webhook) gets the example *redacted* (:func:`redact_payload`): its other fields, its
round and counters, but not the gold fields, not the model's prediction (with ``fooled``, the prediction tells
the gold of a two-class task), not a correction, and not the author. Data-set items whose gold the reader may not
see lose the same fields (:func:`without_gold`).
"""

from __future__ import annotations

from typing import Any

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
    return redacted
