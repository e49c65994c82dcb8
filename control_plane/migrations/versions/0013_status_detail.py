"""A bot's status gets human-readable words: ``meetings.status_detail``.

The bot record's ``status_detail`` (docs/api.md 2.3): why a launch failed in the cloud
provider's own words (EC2's error code and message), null otherwise. Cleared by the next
status change.

Revision ID: 0013_status_detail
Revises: 0012_bootstrap_tokens
Create Date: 2026-11-24 08:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_status_detail"
down_revision: str | None = "0012_bootstrap_tokens"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add ``meetings.status_detail``."""
    with op.batch_alter_table("meetings") as batch:
        batch.add_column(sa.Column("status_detail", sa.Text(), nullable=True))


def downgrade() -> None:
    """Drop ``meetings.status_detail``."""
    with op.batch_alter_table("meetings") as batch:
        batch.drop_column("status_detail")
