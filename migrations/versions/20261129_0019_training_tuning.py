"""Training jobs that tune hyper-parameters on a development set: the set (``tuneOn``) and the combinations tried.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("training_jobs") as batch:
        batch.add_column(sa.Column("tuning_dataset_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("tuning_grid", JSON, nullable=False, server_default="[]"))
        batch.create_foreign_key(
            "fk_training_jobs_tuning_dataset_id_datasets",
            "datasets",
            ["tuning_dataset_id"],
            ["id"],
            ondelete="SET NULL",
        )


def downgrade() -> None:
    with op.batch_alter_table("training_jobs") as batch:
        batch.drop_constraint("fk_training_jobs_tuning_dataset_id_datasets", type_="foreignkey")
        batch.drop_column("tuning_grid")
        batch.drop_column("tuning_dataset_id")
