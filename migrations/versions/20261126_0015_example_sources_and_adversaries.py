"""Machine adversaries: where each example came from (HUMAN, ASSISTED, MACHINE) and which adversary helped, the
suggestions made to annotators, generation runs, and machine accounts.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("is_machine", sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table("examples") as batch:
        batch.add_column(sa.Column("source", sa.String(length=16), nullable=False, server_default="HUMAN"))
        batch.add_column(sa.Column("adversary", sa.String(length=60), nullable=True))
        batch.add_column(sa.Column("suggestion_id", sa.Integer(), nullable=True))
    op.create_index("ix_examples_round_source", "examples", ["round_id", "source"])
    op.create_table(
        "suggestions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.Integer(), nullable=True),
        sa.Column("adversary", sa.String(length=60), nullable=False),
        sa.Column("draft", JSON, nullable=False),
        sa.Column("draft_prediction", JSON, nullable=False),
        sa.Column("fields", JSON, nullable=False),
        sa.Column("prediction", JSON, nullable=False),
        sa.Column("edits", JSON, nullable=False),
        sa.Column("rationale", sa.String(length=2000), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["round_id"], ["rounds.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["context_id"], ["contexts.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_suggestions_user_created", "suggestions", ["user_id", "created_at"])
    op.create_table(
        "adversary_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=False),
        sa.Column("adversary", sa.String(length=60), nullable=False),
        sa.Column("requested_by", sa.Integer(), nullable=True),
        sa.Column("budget", sa.Integer(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("queries", sa.Integer(), nullable=False),
        sa.Column("items_total", sa.Integer(), nullable=False),
        sa.Column("items_done", sa.Integer(), nullable=False),
        sa.Column("candidates", sa.Integer(), nullable=False),
        sa.Column("error", sa.String(length=2000), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["round_id"], ["rounds.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["requested_by"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_adversary_runs_task_created", "adversary_runs", ["task_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_adversary_runs_task_created", table_name="adversary_runs")
    op.drop_table("adversary_runs")
    op.drop_index("ix_suggestions_user_created", table_name="suggestions")
    op.drop_table("suggestions")
    op.drop_index("ix_examples_round_source", table_name="examples")
    with op.batch_alter_table("examples") as batch:
        batch.drop_column("suggestion_id")
        batch.drop_column("adversary")
        batch.drop_column("source")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("is_machine")
