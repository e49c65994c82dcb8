"""When a meeting's transcript was complete: ``meetings.transcript_ready_at``.

Set when the agent's ``transcription_ready`` frame is stored; every final segment the agent
sent before it is stored by then (a link's frames are stored in the order sent). The summary
worker waits for it, up to its wait limit after the end, so finals that arrive after the bot
is final are in the summary (docs/api.md 2.14). Meetings that ended before this migration
count as complete: their summaries are written or were due long ago.

A plain ``ADD COLUMN`` on both dialects (no rebuild of ``meetings``, so SQLite keeps its
triggers, migration 0018).

Revision ID: 0023_transcript_ready
Revises: 0022_agent_token_at_delivery
Create Date: 2026-11-29 17:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023_transcript_ready"
down_revision: str | None = "0022_agent_token_at_delivery"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the column; a meeting already ended counts as complete from its end."""
    op.add_column(
        "meetings", sa.Column("transcript_ready_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.execute(
        sa.text("UPDATE meetings SET transcript_ready_at = end_time WHERE end_time IS NOT NULL")
    )


def downgrade() -> None:
    """Drop the column (``ALTER TABLE … DROP COLUMN``: SQLite 3.35+ needs no rebuild)."""
    op.drop_column("meetings", "transcript_ready_at")
