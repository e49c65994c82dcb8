"""Bootstrap tokens: a bot machine trades a one-time token from its user-data for its config.

``bootstrap_tokens`` holds one row per bot launched on a machine of its own (the qemu launcher;
the cloud launchers reuse it): the token's SHA-256 digest (the token itself is never stored),
the ``BotConfig`` without its agent token, when the token expires and when it was used
(docs/architecture.md §5, "Bootstrap").

Revision ID: 0010_bootstrap_tokens
Revises: 0009_mixed_load
Create Date: 2026-11-24 01:45:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_bootstrap_tokens"
down_revision: str | None = "0011_harden"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create ``bootstrap_tokens``."""
    op.create_table(
        "bootstrap_tokens",
        sa.Column("meeting_id", sa.Integer(), nullable=False),
        sa.Column("token_digest", sa.String(length=64), nullable=False),
        sa.Column("config", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["meeting_id"],
            ["meetings.id"],
            name=op.f("fk_bootstrap_tokens_meeting_id_meetings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("meeting_id", name=op.f("pk_bootstrap_tokens")),
        sa.UniqueConstraint("token_digest", name=op.f("uq_bootstrap_tokens_token_digest")),
    )


def downgrade() -> None:
    """Drop ``bootstrap_tokens``."""
    op.drop_table("bootstrap_tokens")
