"""When each example was found fooling its target (``examples.fooled_at``): the order ``modelFooled`` announced them
in, so that a resumed subscription also replays an example stored before its cursor that was still pending (or
waiting for its verdict) and fooled later. Existing examples that announced ``modelFooled`` (fooled, and predicted
by the platform rather than imported) take their creation time.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("examples") as batch:
        batch.add_column(sa.Column("fooled_at", sa.DateTime(timezone=True), nullable=True))
    examples = sa.table(
        "examples",
        sa.column("fooled", sa.Boolean()),
        sa.column("inference_ms", sa.Float()),
        sa.column("created_at", sa.DateTime(timezone=True)),
        sa.column("fooled_at", sa.DateTime(timezone=True)),
    )
    op.execute(
        examples.update()
        .where(examples.c.fooled.is_(True), examples.c.inference_ms.is_not(None))
        .values(fooled_at=examples.c.created_at)
    )
    op.create_index("ix_examples_task_fooled_at", "examples", ["task_id", "fooled_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_examples_task_fooled_at", table_name="examples")
    with op.batch_alter_table("examples") as batch:
        batch.drop_column("fooled_at")
