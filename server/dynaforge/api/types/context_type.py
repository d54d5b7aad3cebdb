"""Context type (a passage or prompt to write against)."""

from __future__ import annotations

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import Info
from dynaforge.api.node import Node, global_id, related
from dynaforge.db.models import Context as ContextRow


@strawberry.type(
    name="Context",
    description="What an annotator writes against (a passage, a prompt): the values of the task's CONTEXT fields, "
    "added by its owners to one round. Anyone who can see the task can read it.",
)
class ContextType(Node):
    row: strawberry.Private[ContextRow]
    fields: JSON = strawberry.field(
        description="The context's values keyed by field name: one per CONTEXT field of the task (see Task.fields)."
    )
    tag: str | None = strawberry.field(
        description="The label the owners gave it when they added it (nextContext can keep to one tag); null: none."
    )
    total_used: int = strawberry.field(
        description="How many examples have been written against it so far, retracted ones included."
    )

    @strawberry.field(
        description="Whether an owner retired it (replaced it with an edited successor, or deleted it): it is no "
        "longer served or listed, and stays for the examples written against it."
    )
    def retired(self) -> bool:
        return self.row.retired_at is not None

    @strawberry.field(
        description="The context that replaced it after an owner's edit; null otherwise (or when you may not see it)."
    )
    async def successor(self, info: Info) -> ContextType | None:
        found: ContextType | None = await related(info, "Context", self.row.successor_id)
        return found

    @strawberry.field(
        description="The id of the context that replaced it after an owner's edit; null otherwise.",
        deprecation_reason="Use successor { id }.",
    )
    def successor_id(self) -> strawberry.ID | None:
        return None if self.row.successor_id is None else global_id("Context", self.row.successor_id)

    @classmethod
    def from_row(cls, row: ContextRow) -> ContextType:
        return cls(
            row=row, id=global_id("Context", row.id), fields=JSON(row.fields), tag=row.tag, total_used=row.total_used
        )
