"""Opaque keyset cursors for the API's pages: a kind and a row id, base64-encoded.

A cursor names the last row of a page; the next page starts after it. The kind (``example``, ``model``, ...) keeps a
cursor of one list from being replayed on another, and a malformed or foreign one is an ``InvalidInput`` on the
``after`` argument that says to pass ``pageInfo.endCursor`` back unchanged.
"""

from __future__ import annotations

import base64

from dynaforge.errors import MAX_ID, FieldError, InvalidInput


def encode(kind: str, row_id: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{row_id}".encode()).decode()


def decode(kind: str, cursor: str) -> int:
    """The row id in a cursor of ``kind``; InvalidInput (on ``after``) for anything else."""
    prefix = f"{kind}:"
    try:
        raw = base64.urlsafe_b64decode(cursor.encode()).decode()
        if not raw.startswith(prefix):
            raise ValueError
        number = int(raw[len(prefix) :])
        if not 0 < number <= MAX_ID + 1:
            raise ValueError
        return number
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput.from_errors(
            [FieldError("after", "cursor", "is not a cursor from this list; pass pageInfo.endCursor unchanged")]
        ) from exc
