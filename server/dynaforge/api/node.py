"""Global object identification: opaque ids and the ``Node`` interface every cached object implements.

An id is ``base64url("<Type>:<key>")`` without padding, e.g. ``Example:42`` -> ``RXhhbXBsZTo0Mg``. Clients treat it
as opaque: they store it, pass it back as an argument, and hand it to ``node(id:)`` to refetch the object. Because the
type is inside the id, an id of one kind passed where another is expected is refused with a clear error instead of
silently naming a different row, and a normalised cache (urql graphcache, Apollo) can key objects on ``id`` alone.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from typing import Any

import strawberry

from dynaforge import errors as domain
from dynaforge import ids

#: Every type that implements Node, in the order the documentation lists them.
NODE_TYPES = (
    "AdversaryRun",
    "ApiToken",
    "Context",
    "CrowdStudy",
    "Dataset",
    "DatasetItem",
    "Evaluation",
    "Example",
    "LeaderboardFork",
    "LeaderboardSnapshot",
    "Model",
    "RegisteredModel",
    "Round",
    "Suggestion",
    "Task",
    "TaskProposal",
    "TrainingJob",
    "User",
    "Validation",
    "Webhook",
    "WebhookDelivery",
)


#: Each Node type's fetcher: the object of a key, read through the service that authorises reading it (the same rules
#: as the object's own query). ``api/nodes.py`` fills it; the schema always includes it.
FETCHERS: dict[str, Callable[[Any, str], Awaitable[Any]]] = {}


async def related(info: Any, type_name: str, key: int | str | None) -> Any:
    """The ``type_name`` object whose key is ``key``, as ``node(id:)`` answers it: None when there is none or the
    caller may not see it. What a field that links one object to another returns (``Evaluation.model``...), so a
    client follows the link in the same request, and the object comes with its own id and shape."""
    if key is None:
        return None
    try:
        return await FETCHERS[type_name](info, str(key))
    except (domain.NotFound, domain.Forbidden, domain.NotAuthenticated):
        return None


@strawberry.interface(
    description="An object with a global id: refetch it with `node(id:)`; a normalised client cache keys it on `id`."
)
class Node:
    id: strawberry.ID = strawberry.field(
        description="Opaque and global: unique across every type, stable for the object's life. Pass it back as "
        "given; do not build or parse it."
    )


def global_id(type_name: str, key: int | str) -> strawberry.ID:
    """The opaque id of the ``type_name`` object whose key (row id, task code, ...) is ``key``
    (:func:`dynaforge.ids.global_id`, the spelling exports use too)."""
    return strawberry.ID(ids.global_id(type_name, key))


def decode_global_id(value: object) -> tuple[str, str] | None:
    """``(type name, key)`` of an id this server made, or None for anything else."""
    text = str(value)
    if not text or len(text) > 200 or not text.isascii():
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    type_name, sep, key = decoded.partition(":")
    if not sep or type_name not in NODE_TYPES or not key or global_id(type_name, key) != text:
        return None  # the last test refuses other spellings of the same bytes (padding, stray characters)
    return type_name, key


def _refused(value: object, field: str, expected: str) -> domain.InvalidInput:
    expected = ("an " if expected[0] in "AEIOU" else "a ") + expected
    return domain.InvalidInput.from_errors(
        [
            domain.FieldError(
                field,
                "id",
                f"{str(value)[:80]!r} is not the id of {expected}: pass the `id` field of {expected} as the API "
                "returned it.",
            )
        ]
    )


def parse_id(value: object, field: str, type_name: str) -> int:
    """The row id inside the global id of a ``type_name``; InvalidInput (naming ``field``) for anything else."""
    decoded = decode_global_id(value)
    if decoded is None or decoded[0] != type_name:
        raise _refused(value, field, type_name)
    key = decoded[1]
    if not (key.isascii() and key.isdigit()) or not 0 < int(key) <= domain.MAX_ID:
        raise _refused(value, field, type_name)
    return int(key)


def parse_item_key(value: object, field: str) -> tuple[int, int]:
    """The (data set id, position) inside a ``DatasetItem`` global id; InvalidInput (naming ``field``) otherwise."""
    decoded = decode_global_id(value)
    if decoded is None or decoded[0] != "DatasetItem":
        raise _refused(value, field, "DatasetItem")
    dataset, _, position = decoded[1].partition(":")
    if not all(part.isascii() and part.isdigit() for part in (dataset, position)) or not (
        0 < int(dataset) <= domain.MAX_ID and int(position) <= domain.MAX_ID
    ):
        raise _refused(value, field, "DatasetItem")
    return int(dataset), int(position)


def parse_key(value: object, field: str, type_name: str) -> str:
    """The key inside a global id whose key is not a row id (a task's code, a delivery's message id)."""
    decoded = decode_global_id(value)
    if decoded is None or decoded[0] != type_name:
        raise _refused(value, field, type_name)
    return decoded[1]
