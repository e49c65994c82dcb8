"""Cheaper look-ups under mixed load: a reaper index, and SQLite's live-bot counts.

* ``ix_meetings_ended_with_handle``: a partial index on ``meetings.end_time`` over rows with a
  launcher handle. Every sweep (5 s) the reaper looks for bots that ended in the last hour and
  still have one; without the index SQLite visited every finished meeting (about 70 ms at
  100,000 meetings).
* SQLite only: ``workspace_live_bots`` holds each workspace's number of bots in a live status
  (``requested`` … ``stopping``), kept by triggers on ``meetings`` (insert, status update,
  delete), so the ``max_concurrent_bots`` check of a creation reads one row instead of counting
  index entries — on SQLite that count ran on the event loop's thread inside the write
  transaction (:mod:`control_plane.db.inline_sqlite`): about 3 ms per creation with 15,000
  live bots, a quarter of the loop's time in bench/api.py's mixed run. PostgreSQL keeps
  counting (in the server, without blocking the loop; a counter row would serialise every
  status change of a workspace on its lock).

The live statuses are written out here, as of this revision: a change to ``LIVE_STATUSES``
needs a migration that recreates the triggers and recounts. A later migration that rebuilds
``meetings`` on SQLite (``batch_alter_table``) drops the triggers with the old table and must
create them again (tests/api/test_live_counts.py checks they exist at head).

Revision ID: 0009_mixed_load
Revises: 0008_meeting_actions
Create Date: 2026-11-23 22:45:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_mixed_load"
down_revision: str | None = "0008_meeting_actions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WITH_HANDLE = sa.text("bot_container_id IS NOT NULL")
TRIGGERS = ("meetings_live_insert", "meetings_live_update", "meetings_live_delete")
"""The SQLite triggers that keep ``workspace_live_bots``."""

_SQLITE_UP = (
    """CREATE TABLE workspace_live_bots (
        workspace_id CHAR(32) NOT NULL PRIMARY KEY
            REFERENCES workspaces (id) ON DELETE CASCADE,
        live INTEGER NOT NULL
    )""",
    """INSERT INTO workspace_live_bots (workspace_id, live)
        SELECT workspace_id, count(*) FROM meetings
        WHERE status IN ('requested', 'joining', 'awaiting_admission', 'active', 'stopping')
        GROUP BY workspace_id""",
    """CREATE TRIGGER meetings_live_insert AFTER INSERT ON meetings
        WHEN NEW.status IN ('requested', 'joining', 'awaiting_admission', 'active', 'stopping')
        BEGIN
            INSERT INTO workspace_live_bots (workspace_id, live) VALUES (NEW.workspace_id, 1)
            ON CONFLICT (workspace_id) DO UPDATE SET live = live + 1;
        END""",
    """CREATE TRIGGER meetings_live_update AFTER UPDATE OF status ON meetings
        WHEN (OLD.status IN ('requested', 'joining', 'awaiting_admission', 'active', 'stopping'))
            <> (NEW.status IN ('requested', 'joining', 'awaiting_admission', 'active', 'stopping'))
        BEGIN
            INSERT INTO workspace_live_bots (workspace_id, live)
            VALUES (
                NEW.workspace_id,
                CASE WHEN NEW.status
                    IN ('requested', 'joining', 'awaiting_admission', 'active', 'stopping')
                    THEN 1 ELSE -1 END
            )
            ON CONFLICT (workspace_id) DO UPDATE SET live = live + excluded.live;
        END""",
    """CREATE TRIGGER meetings_live_delete AFTER DELETE ON meetings
        WHEN OLD.status IN ('requested', 'joining', 'awaiting_admission', 'active', 'stopping')
        BEGIN
            UPDATE workspace_live_bots SET live = live - 1
            WHERE workspace_id = OLD.workspace_id;
        END""",
)


def upgrade() -> None:
    """Create the reaper's partial index; on SQLite the live-bot counts and their triggers."""
    op.create_index(
        "ix_meetings_ended_with_handle",
        "meetings",
        ["end_time"],
        unique=False,
        sqlite_where=_WITH_HANDLE,
        postgresql_where=_WITH_HANDLE,
    )
    if op.get_bind().dialect.name == "sqlite":
        for statement in _SQLITE_UP:
            op.execute(statement)


def downgrade() -> None:
    """Drop what :func:`upgrade` created."""
    if op.get_bind().dialect.name == "sqlite":
        for trigger in TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS workspace_live_bots")
    op.drop_index("ix_meetings_ended_with_handle", table_name="meetings")
