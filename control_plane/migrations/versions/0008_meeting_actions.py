"""Meeting actions: what live action detection found, stored with the meeting.

One row per ``action`` frame of a bot's agent (unique by meeting and the agent's action id, so
a resent frame stores nothing twice), listed by ``GET /api/v1/meetings/{meeting_id}/actions``
and in the full meeting record, deleted with the meeting's other content on purge
(docs/api.md 2.9).

Revision ID: 0008_meeting_actions
Revises: 0007_launch_leases
Create Date: 2026-11-23 23:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_meeting_actions"
down_revision: str | None = "0007_launch_leases"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create ``meeting_actions`` and its per-meeting time index."""
    op.create_table(
        "meeting_actions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("meeting_id", sa.Integer(), nullable=False),
        sa.Column("action_id", sa.String(length=64), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("owner", sa.String(length=100), nullable=True),
        sa.Column("due", sa.String(length=100), nullable=True),
        sa.Column("segment_ids", sa.JSON(), nullable=False),
        sa.Column("detected_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["meeting_id"],
            ["meetings.id"],
            name=op.f("fk_meeting_actions_meeting_id_meetings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_meeting_actions")),
        sa.UniqueConstraint("meeting_id", "action_id", name=op.f("uq_meeting_actions_meeting_id")),
    )
    op.create_index(
        "ix_meeting_actions_meeting_detected", "meeting_actions", ["meeting_id", "detected_at"]
    )


def downgrade() -> None:
    """Drop ``meeting_actions``."""
    op.drop_index("ix_meeting_actions_meeting_detected", table_name="meeting_actions")
    op.drop_table("meeting_actions")
