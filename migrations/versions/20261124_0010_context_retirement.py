"""Contexts are retired instead of edited or deleted: an owner's edit adds a successor.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("contexts") as batch:
        batch.add_column(sa.Column("retired_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("successor_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("contexts") as batch:
        batch.drop_column("successor_id")
        batch.drop_column("retired_at")
