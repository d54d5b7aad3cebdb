"""An owner's applied correction on an example: the validator's corrected target, kept beside the example's own.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("examples") as batch:
        batch.add_column(sa.Column("corrected_target", JSON, nullable=True))
        batch.add_column(sa.Column("correction_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("examples") as batch:
        batch.drop_column("correction_id")
        batch.drop_column("corrected_target")
