"""Scored attempts at a leaderboard, kept when their model is deleted: the submission allowance counts them; each
data set's public share (a scoring set's items whose figures are shown before its round ends) and a perturbed
copy's effect on the gold; and why a pending example waits, with how many unreadable answers in a row it got.

Existing submissions (models that are not a registry entry's) become attempts, so that a window open when this
runs keeps its count.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.add_column(sa.Column("public_share", sa.Float(), nullable=True))
        batch.add_column(sa.Column("perturbation_gold", sa.String(length=16), nullable=True))
    with op.batch_alter_table("examples") as batch:
        batch.add_column(sa.Column("pending_reason", sa.String(length=2000), nullable=True))
        batch.add_column(sa.Column("prediction_attempts", sa.Integer(), nullable=False, server_default="0"))
    op.create_table(
        "submission_attempts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["model_id"], ["models.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_submission_attempts_task_user_created", "submission_attempts", ["task_id", "user_id", "created_at"]
    )
    op.execute(
        "INSERT INTO submission_attempts (task_id, user_id, kind, model_id, created_at) "
        "SELECT task_id, user_id, CASE WHEN backend IS NULL THEN 'predictions' ELSE 'model' END, id, created_at "
        "FROM models WHERE id NOT IN (SELECT model_id FROM registered_models WHERE model_id IS NOT NULL)"
    )


def downgrade() -> None:
    op.drop_index("ix_submission_attempts_task_user_created", table_name="submission_attempts")
    op.drop_table("submission_attempts")
    with op.batch_alter_table("examples") as batch:
        batch.drop_column("prediction_attempts")
        batch.drop_column("pending_reason")
    with op.batch_alter_table("datasets") as batch:
        batch.drop_column("perturbation_gold")
        batch.drop_column("public_share")
