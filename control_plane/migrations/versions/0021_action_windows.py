"""Action cursors: live action detection moves from the agents into the control plane.

One row per meeting whose bot detects actions (issue 34, docs/api.md 2.9): the detection
worker of one replica holds it by ``owner`` and ``lease_until`` (a conditional ``UPDATE``, or
``SELECT … FOR UPDATE SKIP LOCKED`` on PostgreSQL, as the scheduler claims launches); the
cursor (``last_row``: the highest ``segments.id`` analysed; ``context_ids``: the previous
window's segment ids) moves in the transaction that stores the window's actions. Deleted with
the meeting (``ON DELETE CASCADE``).

``op.create_table`` only: no existing table is rebuilt on SQLite.

Revision ID: 0021_action_windows
Revises: 0020_meeting_summaries
Create Date: 2026-11-29 10:45:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021_action_windows"
down_revision: str | None = "0020_meeting_summaries"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create ``action_cursors`` and the worker's claim index."""
    op.create_table(
        "action_cursors",
        sa.Column("meeting_id", sa.Integer(), nullable=False),
        sa.Column("last_row", sa.Integer(), nullable=False),
        sa.Column("context_ids", sa.JSON(), nullable=False),
        sa.Column("windows", sa.Integer(), nullable=False),
        sa.Column("windows_failed", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(length=128), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["meeting_id"],
            ["meetings.id"],
            name=op.f("fk_action_cursors_meeting_id_meetings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("meeting_id", name=op.f("pk_action_cursors")),
    )
    op.create_index(
        "ix_action_cursors_finished_lease", "action_cursors", ["finished_at", "lease_until"]
    )


def downgrade() -> None:
    """Drop ``action_cursors``."""
    op.drop_index("ix_action_cursors_finished_lease", table_name="action_cursors")
    op.drop_table("action_cursors")
