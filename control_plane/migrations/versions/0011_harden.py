"""PostgreSQL's live-bot counts: a base row per workspace plus appended changes.

``POST /api/v1/bots`` checks ``max_concurrent_bots`` by counting the workspace's live bots
(``requested`` … ``stopping``). PostgreSQL counted the rows: about 22 ms of server CPU per
creation with 15,000 live bots (an index-only scan with thousands of heap visits, as new rows
are not yet all-visible) — the bulk of the database's work in bench/api.py's mixed run, where
creations reached 18–32/s.

SQLite keeps one counter row per workspace (migration 0009); on PostgreSQL one row would
serialise every creation and every final status of a workspace on its row lock until commit.
Here a trigger on ``meetings`` instead *appends* ``+1``/``-1`` to
``workspace_live_bot_changes`` (appends never wait on each other), the count is the base row
of ``workspace_live_bots`` plus the sum of the workspace's changes, and the scheduler folds the
changes into the base every few seconds in one statement
(:func:`control_plane.bots.live_count.fold_live_changes`), so a count reads one row and a few
hundred changes at most.

The live statuses are written out here, as of this revision (as in 0009).

Revision ID: 0010_harden
Revises: 0009_mixed_load
Create Date: 2026-11-24 02:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0011_harden"
down_revision: str | None = "0010_stream_relay"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_POSTGRESQL_UP = (
    """CREATE TABLE workspace_live_bots (
        workspace_id UUID NOT NULL PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
        live INTEGER NOT NULL
    )""",
    # No foreign key: a deleted workspace's meetings append their -1 while it goes away; the
    # fold drops changes of workspaces that no longer exist.
    """CREATE TABLE workspace_live_bot_changes (
        id BIGSERIAL PRIMARY KEY,
        workspace_id UUID NOT NULL,
        change INTEGER NOT NULL
    )""",
    "CREATE INDEX ix_workspace_live_bot_changes_workspace "
    "ON workspace_live_bot_changes (workspace_id)",
    """INSERT INTO workspace_live_bots (workspace_id, live)
        SELECT workspace_id, count(*) FROM meetings
        WHERE status IN ('requested', 'joining', 'awaiting_admission', 'active', 'stopping')
        GROUP BY workspace_id""",
    """CREATE FUNCTION meetings_live_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            IF NEW.status
                IN ('requested', 'joining', 'awaiting_admission', 'active', 'stopping')
            THEN
                INSERT INTO workspace_live_bot_changes (workspace_id, change)
                VALUES (NEW.workspace_id, 1);
            END IF;
        ELSIF TG_OP = 'DELETE' THEN
            IF OLD.status
                IN ('requested', 'joining', 'awaiting_admission', 'active', 'stopping')
            THEN
                INSERT INTO workspace_live_bot_changes (workspace_id, change)
                VALUES (OLD.workspace_id, -1);
            END IF;
        ELSIF (OLD.status IN ('requested', 'joining', 'awaiting_admission', 'active', 'stopping'))
            <> (NEW.status IN ('requested', 'joining', 'awaiting_admission', 'active', 'stopping'))
        THEN
            INSERT INTO workspace_live_bot_changes (workspace_id, change)
            VALUES (
                NEW.workspace_id,
                CASE WHEN NEW.status
                    IN ('requested', 'joining', 'awaiting_admission', 'active', 'stopping')
                    THEN 1 ELSE -1 END
            );
        END IF;
        RETURN NULL;
    END
    $$""",
    """CREATE TRIGGER meetings_live_change
        AFTER INSERT OR DELETE OR UPDATE OF status ON meetings
        FOR EACH ROW EXECUTE FUNCTION meetings_live_change()""",
)


def upgrade() -> None:
    """On PostgreSQL: the count tables, their initial counts and the trigger."""
    if op.get_bind().dialect.name == "postgresql":
        for statement in _POSTGRESQL_UP:
            op.execute(statement)


def downgrade() -> None:
    """Drop what :func:`upgrade` created."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS meetings_live_change ON meetings")
        op.execute("DROP FUNCTION IF EXISTS meetings_live_change()")
        op.execute("DROP TABLE IF EXISTS workspace_live_bot_changes")
        op.execute("DROP TABLE IF EXISTS workspace_live_bots")
