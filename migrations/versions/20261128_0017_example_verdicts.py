"""Verdicts that wait: an example of a task whose judge model or validators decide whether it fooled the model is
stored as PENDING_VERDICT (a status, stored as text like the others) and its verdict (who decided, the judge's
rationale, an owner's overruling) is kept beside it.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("examples") as batch:
        batch.add_column(
            sa.Column(
                "verdict", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=True
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("examples") as batch:
        batch.drop_column("verdict")
