"""Meeting summaries: the summary, decisions and action items of a whole meeting, at its end.

One row per meeting whose bot reached a final status with ``enable_actions`` true (issue 34,
docs/api.md 2.14): ``pending`` until the summary worker of one replica has written it
(``ready``) or given up after its attempts (``failed``). The worker claims a row by setting
``claim_owner`` and ``lease_until`` in one conditional ``UPDATE`` (as the scheduler claims
launches), so exactly one replica works on a meeting while its lease holds; ``next_attempt_at``
holds the retry backoff. Deleted with the meeting (``ON DELETE CASCADE``) and by purge.

``op.create_table`` only: no existing table is rebuilt on SQLite.

Revision ID: 0020_meeting_summaries
Revises: 0019_zoom_launch_token
Create Date: 2026-11-29 10:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020_meeting_summaries"
down_revision: str | None = "0019_zoom_launch_token"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create ``meeting_summaries`` and the worker's claim index."""
    op.create_table(
        "meeting_summaries",
        sa.Column("meeting_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("decisions", sa.JSON(), nullable=True),
        sa.Column("action_items", sa.JSON(), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("claim_owner", sa.String(length=128), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ready_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["meeting_id"],
            ["meetings.id"],
            name=op.f("fk_meeting_summaries_meeting_id_meetings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("meeting_id", name=op.f("pk_meeting_summaries")),
    )
    op.create_index(
        "ix_meeting_summaries_status_next", "meeting_summaries", ["status", "next_attempt_at"]
    )


def downgrade() -> None:
    """Drop ``meeting_summaries``."""
    op.drop_index("ix_meeting_summaries_status_next", table_name="meeting_summaries")
    op.drop_table("meeting_summaries")
