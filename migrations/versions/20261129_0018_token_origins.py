"""How each API token was issued (REGISTRATION, LOGIN, API, OPERATOR), so that a token list says where a token came
from without reading its name. Existing tokens are read from the names the platform gave them; others are API.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("origin", sa.String(length=16), nullable=False, server_default="API"))
    op.execute("UPDATE api_tokens SET origin = 'REGISTRATION' WHERE name = 'registration'")
    op.execute("UPDATE api_tokens SET origin = 'LOGIN' WHERE name = 'login'")


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("origin")
