"""Which actions the bot's agent put on its stream: ``meeting_actions.streamed_at``.

Set when the agent answers ``announce_action`` with success (docs/architecture.md §5). An action
without it (detected after the agent left, or offered to an agent from an image older than the
command, which answers ``unknown_command``) is sent by the control plane's stream after the
agent's last event (docs/api.md 2.7). Actions stored before this migration count as streamed:
their meetings' streams are over.

Revision ID: 0024_streamed_actions
Revises: 0023_transcript_ready
Create Date: 2026-11-29 17:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024_streamed_actions"
down_revision: str | None = "0023_transcript_ready"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the column; mark the actions stored so far as streamed."""
    op.add_column(
        "meeting_actions", sa.Column("streamed_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.execute(sa.text("UPDATE meeting_actions SET streamed_at = detected_at"))


def downgrade() -> None:
    """Drop the column."""
    op.drop_column("meeting_actions", "streamed_at")
