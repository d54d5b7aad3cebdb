"""Plugin type: what is loaded, and what is broken."""

from __future__ import annotations

import strawberry


@strawberry.type(description="A loaded plugin, or one that failed to load (then `error` says why).")
class Plugin:
    name: str
    version: str | None
    hooks: list[str]
    is_default: bool = strawberry.field(description="Part of the core, registered before installed plugins.")
    error: str | None
