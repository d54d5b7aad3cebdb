"""Validator weights (``validator_weights``): how much each validator's votes count in a task's quorum, as its
owners set it after reading their agreement; no row means 1, and 0 excludes the validator from the crowd queue.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "validator_weights",
        sa.Column("task_id", sa.Integer(), sa.ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.Column("set_by", sa.Integer(), sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True),
        sa.Column("set_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_validator_weights_user_id", "validator_weights", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_validator_weights_user_id", table_name="validator_weights")
    op.drop_table("validator_weights")
