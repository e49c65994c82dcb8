"""The stream relay: agents no longer announce a stream URL of their own.

A bot's SSE stream is served by the control plane (``GET /api/v1/bots/{bot_id}/stream``, any
replica) and fed over the agent link, so ``agent_links.stream_url`` (the agent's own stream
endpoint) has no writer or reader any more; subscribe waits on ``registered_at`` instead.

Revision ID: 0010_stream_relay
Revises: 0009_mixed_load
Create Date: 2026-11-24 02:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_stream_relay"
down_revision: str | None = "0009_mixed_load"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Drop ``agent_links.stream_url``."""
    with op.batch_alter_table("agent_links") as batch:
        batch.drop_column("stream_url")


def downgrade() -> None:
    """Add the column back (empty: agents registered since announced no URL)."""
    with op.batch_alter_table("agent_links") as batch:
        batch.add_column(sa.Column("stream_url", sa.Text(), nullable=True))
