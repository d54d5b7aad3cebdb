"""Plugin type: what is loaded, and what is broken."""

from __future__ import annotations

import strawberry


@strawberry.type(
    description="A loaded plugin, or one that failed to load (then `error` says why). Anyone may list them."
)
class Plugin:
    name: str = strawberry.field(
        description="The name it is registered under: a core plugin's module (dynaforge.defaults...), an installed "
        "plugin's entry-point name."
    )
    version: str | None = strawberry.field(
        description="The version of the installed package that provides it; null for core plugins and where none "
        "is known."
    )
    hooks: list[str] = strawberry.field(
        description="The hooks it implements, by name in alphabetical order; empty for a plugin that failed to load."
    )
    is_default: bool = strawberry.field(description="Part of the core, registered before installed plugins.")
    error: str | None = strawberry.field(
        description="Why it failed to load (it could not be imported or registered, or one of its hooks raised: "
        "admins see the error, everyone else that it failed); null when it loaded."
    )
