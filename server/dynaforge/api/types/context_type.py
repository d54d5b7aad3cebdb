"""Context type (a passage or prompt to write against)."""

from __future__ import annotations

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.node import Node, global_id
from dynaforge.db.models import Context as ContextRow


@strawberry.type(name="Context", description="What an annotator writes against: the task's context fields.")
class ContextType(Node):
    row: strawberry.Private[ContextRow]
    id: strawberry.ID
    fields: JSON
    tag: str | None
    total_used: int

    @classmethod
    def from_row(cls, row: ContextRow) -> ContextType:
        return cls(
            row=row, id=global_id("Context", row.id), fields=JSON(row.fields), tag=row.tag, total_used=row.total_used
        )
