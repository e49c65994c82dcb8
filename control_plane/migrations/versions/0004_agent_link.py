"""Agent link: per-bot link credentials and liveness, frame receipts, chat, artifacts.

Revision ID: 0004_agent_link
Revises: 0003_invitations_zoom_prompts
Create Date: 2026-11-21 11:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_agent_link"
down_revision: str | None = "0003_invitations_zoom_prompts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MEETING_FK = "meetings.id"


def upgrade() -> None:
    """Create the agent link, frame receipt, chat message and artifact tables with their indexes."""
    op.create_table(
        "agent_links",
        sa.Column("meeting_id", sa.Integer(), nullable=False),
        sa.Column("token_digest", sa.String(length=64), nullable=False),
        sa.Column("stream_url", sa.Text(), nullable=True),
        sa.Column("agent_version", sa.String(length=64), nullable=True),
        sa.Column("launched_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("registered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["meeting_id"],
            [_MEETING_FK],
            name=op.f("fk_agent_links_meeting_id_meetings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("meeting_id", name=op.f("pk_agent_links")),
        sa.UniqueConstraint("token_digest", name=op.f("uq_agent_links_token_digest")),
    )
    op.create_table(
        "agent_frame_receipts",
        sa.Column("meeting_id", sa.Integer(), nullable=False),
        sa.Column("frame_id", sa.String(length=64), nullable=False),
        sa.Column("frame_type", sa.String(length=32), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["meeting_id"],
            [_MEETING_FK],
            name=op.f("fk_agent_frame_receipts_meeting_id_meetings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("meeting_id", "frame_id", name=op.f("pk_agent_frame_receipts")),
    )
    op.create_table(
        "chat_messages",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("meeting_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.String(length=64), nullable=False),
        sa.Column("sender", sa.String(length=300), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=False),
        sa.Column("from_bot", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["meeting_id"],
            [_MEETING_FK],
            name=op.f("fk_chat_messages_meeting_id_meetings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chat_messages")),
        sa.UniqueConstraint("meeting_id", "message_id", name=op.f("uq_chat_messages_meeting_id")),
    )
    op.create_index(
        "ix_chat_messages_meeting_timestamp", "chat_messages", ["meeting_id", "timestamp"]
    )
    op.create_table(
        "artifacts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("meeting_id", sa.Integer(), nullable=False),
        sa.Column("artifact_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("storage_key", sa.String(length=512), nullable=False),
        sa.Column("content_type", sa.String(length=100), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("format", sa.String(length=16), nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("width", sa.Integer(), nullable=True),
        sa.Column("height", sa.Integer(), nullable=True),
        sa.Column("captured_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["meeting_id"],
            [_MEETING_FK],
            name=op.f("fk_artifacts_meeting_id_meetings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_artifacts")),
        sa.UniqueConstraint("meeting_id", "artifact_id", name=op.f("uq_artifacts_meeting_id")),
    )
    op.create_index("ix_artifacts_meeting_kind", "artifacts", ["meeting_id", "kind", "created_at"])


def downgrade() -> None:
    """Drop the artifact, chat message, frame receipt and agent link tables."""
    op.drop_index("ix_artifacts_meeting_kind", table_name="artifacts")
    op.drop_table("artifacts")
    op.drop_index("ix_chat_messages_meeting_timestamp", table_name="chat_messages")
    op.drop_table("chat_messages")
    op.drop_table("agent_frame_receipts")
    op.drop_table("agent_links")
