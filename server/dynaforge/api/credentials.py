"""The bearer token a request sends, read the same way by ``/graphql`` (HTTP and websockets) and ``/export``."""

from __future__ import annotations

from collections.abc import Mapping


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of 'Authorization: Bearer <token>'; any other non-empty header is passed on to fail as invalid."""
    value = (headers.get("authorization") or "").strip()
    scheme, _, token = value.partition(" ")
    if scheme.lower() == "bearer":
        return token.strip() or None
    return value or None
