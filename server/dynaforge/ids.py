"""The API's global ids, spelt once for every place that hands them out: the GraphQL API (``Node.id``) and the files
the platform writes (exports, leaderboard CSVs), so that an id read in a file is the id ``node(id:)`` takes.

An id is the URL-safe base64 (unpadded) of ``"<Type>:<key>"``; clients treat it as opaque. Parsing one back, with
the types the API serves, is ``dynaforge.api.node.decode_global_id``'s.
"""

from __future__ import annotations

import base64


def global_id(type_name: str, key: int | str) -> str:
    """The opaque id of the ``type_name`` object whose key (row id, task code, ...) is ``key``."""
    raw = f"{type_name}:{key}".encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def optional_id(type_name: str, key: int | str | None) -> str | None:
    """:func:`global_id`, or None for no key."""
    return None if key is None else global_id(type_name, key)
