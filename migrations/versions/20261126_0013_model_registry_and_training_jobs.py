"""The model registry, training jobs, and the registry entries of each round's target models.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "registered_models",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("backend", sa.String(length=60), nullable=False),
        sa.Column("config", JSON, nullable=False),
        sa.Column("spec_sha256", sa.String(length=64), nullable=False),
        sa.Column("weights", sa.String(length=64), nullable=True),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("recipe", sa.String(length=100), nullable=True),
        sa.Column("hyperparameters", JSON, nullable=False),
        sa.Column("seed", sa.Integer(), nullable=True),
        sa.Column("training_data", JSON, nullable=False),
        sa.Column("metrics", JSON, nullable=False),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.Column("model_id", sa.Integer(), nullable=True),
        sa.Column("training_job_id", sa.Integer(), nullable=True),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["parent_id"], ["registered_models.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["model_id"], ["models.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["created_by"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("training_job_id"),
    )
    op.create_index("ix_registered_models_task_id", "registered_models", ["task_id"], unique=False)
    op.create_table(
        "training_jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("recipe", sa.String(length=100), nullable=False),
        sa.Column("hyperparameters", JSON, nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("dataset_ids", JSON, nullable=False),
        sa.Column("include_base_data", sa.Boolean(), nullable=False),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("stage", sa.String(length=100), nullable=False),
        sa.Column("error", sa.String(length=4000), nullable=True),
        sa.Column("log_tail", sa.String(length=20000), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("candidate_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["parent_id"], ["registered_models.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["candidate_id"], ["registered_models.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_training_jobs_task_id", "training_jobs", ["task_id"], unique=False)
    with op.batch_alter_table("rounds") as batch:
        batch.add_column(sa.Column("target_registry_ids", JSON, nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("rounds") as batch:
        batch.drop_column("target_registry_ids")
    op.drop_index("ix_training_jobs_task_id", table_name="training_jobs")
    op.drop_table("training_jobs")
    op.drop_index("ix_registered_models_task_id", table_name="registered_models")
    op.drop_table("registered_models")
