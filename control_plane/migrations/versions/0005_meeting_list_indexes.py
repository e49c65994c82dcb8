"""Meeting-list indexes measured with bench/api.py at 100,000 meetings.

* ``(workspace_id, status, created_at, id)`` serves ``status`` filters in list order directly
  (it replaces ``(workspace_id, status)``, which left a sort of every matching row).
* ``(workspace_id, created_at, id, name)`` replaces ``(workspace_id, created_at, id)`` and
  ``(workspace_id, name)``: the same order, and a ``name`` substring filter (``ILIKE '%…%'``,
  which no b-tree can seek) scans index entries only instead of visiting every table row.
* PostgreSQL with ``pg_trgm`` available: a trigram GIN index on ``name``, so rare substrings
  need no scan at all. Where the extension cannot be created, the scan above remains.

Revision ID: 0005_meeting_list_indexes
Revises: 0004_agent_link
Create Date: 2026-11-21 11:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_meeting_list_indexes"
down_revision: str | None = "0004_agent_link"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _trigram_available(bind: sa.Connection) -> bool:
    row = bind.execute(
        sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")
    ).first()
    if row is None:
        return False
    superuser = bind.execute(sa.text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"))
    installed = bind.execute(sa.text("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'"))
    return installed.first() is not None or bool(superuser.scalar())


def upgrade() -> None:
    """Replace the meeting-list indexes; add the trigram index where PostgreSQL allows it."""
    op.drop_index("ix_meetings_workspace_status", table_name="meetings")
    op.drop_index("ix_meetings_workspace_name", table_name="meetings")
    op.drop_index("ix_meetings_workspace_created", table_name="meetings")
    op.create_index(
        "ix_meetings_workspace_status_created",
        "meetings",
        ["workspace_id", "status", "created_at", "id"],
        unique=False,
    )
    op.create_index(
        "ix_meetings_workspace_created",
        "meetings",
        ["workspace_id", "created_at", "id", "name"],
        unique=False,
    )
    bind = op.get_bind()
    if bind.dialect.name == "postgresql" and _trigram_available(bind):
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        op.execute(
            "CREATE INDEX IF NOT EXISTS ix_meetings_name_trgm "
            "ON meetings USING gin (name gin_trgm_ops)"
        )


def downgrade() -> None:
    """Restore the 0004 meeting-list indexes; drop the trigram index on PostgreSQL if present."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_meetings_name_trgm")
    op.drop_index("ix_meetings_workspace_created", table_name="meetings")
    op.drop_index("ix_meetings_workspace_status_created", table_name="meetings")
    op.create_index(
        "ix_meetings_workspace_created",
        "meetings",
        ["workspace_id", "created_at", "id"],
        unique=False,
    )
    op.create_index("ix_meetings_workspace_name", "meetings", ["workspace_id", "name"])
    op.create_index("ix_meetings_workspace_status", "meetings", ["workspace_id", "status"])
