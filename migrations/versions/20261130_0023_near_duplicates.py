"""Near-duplicate examples: the MinHash sketches of fooling examples (``example_sketches``, one row per value,
indexed per round, compared on the same context only) and, on an example its author sent although it was close to
an earlier one, which one and how close (``examples.near_duplicate_of``, ``examples.near_duplicate_similarity``).
Earlier examples have no sketch.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "example_sketches",
        sa.Column("example_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["example_id"], ["examples.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["round_id"], ["rounds.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("example_id", "value"),
    )
    op.create_index("ix_example_sketches_round_value", "example_sketches", ["round_id", "value"], unique=False)
    with op.batch_alter_table("examples") as batch:
        batch.add_column(sa.Column("near_duplicate_of", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("near_duplicate_similarity", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("examples") as batch:
        batch.drop_column("near_duplicate_similarity")
        batch.drop_column("near_duplicate_of")
    op.drop_index("ix_example_sketches_round_value", table_name="example_sketches")
    op.drop_table("example_sketches")
