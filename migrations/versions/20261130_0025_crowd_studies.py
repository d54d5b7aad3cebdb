"""Crowd studies: a task's studies on crowd platforms (``crowd_studies``), their pseudonymous participants
(``crowd_participants``) and the bonuses paid to them (``crowd_payments``).

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "crowd_studies",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(length=40), nullable=False),
        sa.Column("external_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("completion_code", sa.String(length=64), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("pay_per_verified_fooling", sa.Integer(), nullable=False),
        sa.Column("pay_per_agreeing_validation", sa.Integer(), nullable=False),
        sa.Column("minimum_examples", sa.Integer(), nullable=False),
        sa.Column("minimum_validations", sa.Integer(), nullable=False),
        sa.Column("is_open", sa.Boolean(), nullable=False),
        sa.Column("paying_since", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["created_by"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("platform", "external_id", name="uq_crowd_studies_platform_external"),
    )
    op.create_index("ix_crowd_studies_task_id", "crowd_studies", ["task_id"], unique=False)
    op.create_table(
        "crowd_participants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("external_id", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=True),
        sa.Column("joined_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["study_id"], ["crowd_studies.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("user_id"),
        sa.UniqueConstraint("study_id", "external_id", name="uq_crowd_participants_study_external"),
    )
    op.create_index("ix_crowd_participants_study_id", "crowd_participants", ["study_id"], unique=False)
    op.create_table(
        "crowd_payments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("participant_id", sa.Integer(), nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reference", sa.String(length=100), nullable=True),
        sa.Column("paid_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["participant_id"], ["crowd_participants.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["paid_by"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_crowd_payments_participant_id", "crowd_payments", ["participant_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_crowd_payments_participant_id", table_name="crowd_payments")
    op.drop_table("crowd_payments")
    op.drop_index("ix_crowd_participants_study_id", table_name="crowd_participants")
    op.drop_table("crowd_participants")
    op.drop_index("ix_crowd_studies_task_id", table_name="crowd_studies")
    op.drop_table("crowd_studies")
