"""How long a validator took over a vote (``validations.time_taken_ms``), as examples record their writer's time:
the client sends it with validateExample, the server bounds it. Existing votes have none.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("validations") as batch:
        batch.add_column(sa.Column("time_taken_ms", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("validations") as batch:
        batch.drop_column("time_taken_ms")
