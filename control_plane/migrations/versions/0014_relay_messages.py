"""Relay messages of any size: ``relay_messages``.

A command relayed between replicas through PostgreSQL ``NOTIFY`` was limited to the payload
limit (about 8,000 bytes): a long non-ASCII speech text got 503 on a replica without the bot's
link. A larger message is now stored here and only its key is notified
(:mod:`control_plane.agent_hub.relay`).

Revision ID: 0014_relay_messages
Revises: 0013_status_detail
Create Date: 2026-11-29 07:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_relay_messages"
down_revision: str | None = "0013_status_detail"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create ``relay_messages``."""
    op.create_table(
        "relay_messages",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_relay_messages")),
    )
    op.create_index("ix_relay_messages_created_at", "relay_messages", ["created_at"])


def downgrade() -> None:
    """Drop ``relay_messages``."""
    op.drop_index("ix_relay_messages_created_at", table_name="relay_messages")
    op.drop_table("relay_messages")
