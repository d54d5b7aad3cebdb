"""Email addresses are not unique: an unverified contact, never reported as used at registration.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The initial schema left the constraint unnamed: PostgreSQL named it users_email_key; on SQLite the batch copy
# reflects it without a name, and this convention gives it one to drop.
_CONVENTION = {"uq": "uq_%(table_name)s_%(column_0_name)s"}


def _name() -> str:
    return "uq_users_email" if op.get_bind().dialect.name == "sqlite" else "users_email_key"


def upgrade() -> None:
    with op.batch_alter_table("users", naming_convention=_CONVENTION) as batch:
        batch.drop_constraint(_name(), type_="unique")


def downgrade() -> None:
    # Fails where two accounts share an address by then: merge or change them first.
    with op.batch_alter_table("users", naming_convention=_CONVENTION) as batch:
        batch.create_unique_constraint(_name(), ["email"])
