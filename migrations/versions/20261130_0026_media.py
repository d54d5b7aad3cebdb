"""Media: uploaded images, cleaned and stored by content hash (``media``: one row per uploader and hash), and the
images examples name (``example_media``).

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "media",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("content_type", sa.String(length=40), nullable=False),
        sa.Column("width", sa.Integer(), nullable=False),
        sa.Column("height", sa.Integer(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("source_format", sa.String(length=16), nullable=False),
        sa.Column("uploaded_by", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["uploaded_by"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("sha256", "uploaded_by", name="uq_media_sha256_uploader"),
    )
    op.create_index("ix_media_sha256", "media", ["sha256"], unique=False)
    op.create_table(
        "example_media",
        sa.Column("example_id", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(["example_id"], ["examples.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("example_id", "sha256"),
    )
    op.create_index("ix_example_media_sha256", "example_media", ["sha256"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_example_media_sha256", table_name="example_media")
    op.drop_table("example_media")
    op.drop_index("ix_media_sha256", table_name="media")
    op.drop_table("media")
