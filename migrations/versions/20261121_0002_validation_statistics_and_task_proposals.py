"""Validation votes and decisions on examples, accepted/flagged counters, task proposals.

New integer columns start at 0 on existing rows (nothing had been validated before this revision).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "task_proposals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("code", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("description", sqlmodel.sql.sqltypes.AutoString(length=5000), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("decision_note", sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=True),
        sa.Column("decided_by", sa.Integer(), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["decided_by"], ["users.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("task_proposals", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_task_proposals_user_id"), ["user_id"], unique=False)

    with op.batch_alter_table("examples", schema=None) as batch_op:
        batch_op.add_column(sa.Column("validations_correct", sa.Integer(), nullable=False, server_default=sa.text("0")))
        batch_op.add_column(
            sa.Column("validations_incorrect", sa.Integer(), nullable=False, server_default=sa.text("0"))
        )
        batch_op.add_column(sa.Column("validations_flagged", sa.Integer(), nullable=False, server_default=sa.text("0")))
        batch_op.add_column(sa.Column("validations_total", sa.Integer(), nullable=False, server_default=sa.text("0")))
        batch_op.add_column(sa.Column("flag_reason", sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=True))
        batch_op.add_column(sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index("ix_examples_task_user_created", ["task_id", "user_id", "created_at"], unique=False)
        batch_op.create_index(
            "ix_examples_to_validate", ["task_id", "status", "fooled", "validations_total", "id"], unique=False
        )

    with op.batch_alter_table("round_user_stats", schema=None) as batch_op:
        batch_op.add_column(sa.Column("accepted", sa.Integer(), nullable=False, server_default=sa.text("0")))
        batch_op.add_column(sa.Column("flagged", sa.Integer(), nullable=False, server_default=sa.text("0")))

    with op.batch_alter_table("rounds", schema=None) as batch_op:
        batch_op.add_column(sa.Column("accepted", sa.Integer(), nullable=False, server_default=sa.text("0")))
        batch_op.add_column(sa.Column("flagged", sa.Integer(), nullable=False, server_default=sa.text("0")))


def downgrade() -> None:
    with op.batch_alter_table("rounds", schema=None) as batch_op:
        batch_op.drop_column("flagged")
        batch_op.drop_column("accepted")

    with op.batch_alter_table("round_user_stats", schema=None) as batch_op:
        batch_op.drop_column("flagged")
        batch_op.drop_column("accepted")

    with op.batch_alter_table("examples", schema=None) as batch_op:
        batch_op.drop_index("ix_examples_to_validate")
        batch_op.drop_index("ix_examples_task_user_created")
        batch_op.drop_column("decided_at")
        batch_op.drop_column("flag_reason")
        batch_op.drop_column("validations_total")
        batch_op.drop_column("validations_flagged")
        batch_op.drop_column("validations_incorrect")
        batch_op.drop_column("validations_correct")

    with op.batch_alter_table("task_proposals", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_task_proposals_user_id"))

    op.drop_table("task_proposals")
