"""Workspaces get ``max_meeting_duration_seconds``, the bots' default cap in a meeting.

The cap is the bots' default limit on their time in a meeting (null: the built-in default
of ``agent.contracts.bot_config``).

Revision ID: 0006_ws_max_meeting_duration
Revises: 0005_meeting_list_indexes
Create Date: 2026-11-23 20:50:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_ws_max_meeting_duration"
down_revision: str | None = "0005_meeting_list_indexes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the nullable column."""
    op.add_column(
        "workspaces", sa.Column("max_meeting_duration_seconds", sa.Integer(), nullable=True)
    )


def downgrade() -> None:
    """Drop the column."""
    with op.batch_alter_table("workspaces") as batch:
        batch.drop_column("max_meeting_duration_seconds")
