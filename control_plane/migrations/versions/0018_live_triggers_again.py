"""SQLite: the live-bot triggers of 0009 again, and the counts they keep recounted.

0016 rebuilt ``meetings`` on SQLite (``batch_alter_table`` to drop two columns), which dropped
``meetings_live_insert``/``_update``/``_delete`` with the old table, as 0009's docstring warns:
from then on ``workspace_live_bots`` stopped following creations and status changes, and the
``max_concurrent_bots`` check let every bot through (tests/api/test_live_counts.py). This creates
them again with 0009's own statements and recounts. PostgreSQL keeps no such counts.

Revision ID: 0018_live_triggers_again
Revises: 0017_webhook_secrets_sealed
Create Date: 2026-11-29 08:40:00
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from alembic import op

revision: str = "0018_live_triggers_again"
down_revision: str | None = "0017_webhook_secrets_sealed"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_LIVE_COUNTS = importlib.import_module("control_plane.migrations.versions.0009_mixed_load")


def upgrade() -> None:
    """Drop what is left of the triggers, recount, and create them again (SQLite only)."""
    if op.get_bind().dialect.name != "sqlite":
        return
    for trigger in _LIVE_COUNTS.TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    op.execute("DELETE FROM workspace_live_bots")
    # 0009's statements after its CREATE TABLE: the recount, then the three triggers.
    for statement in _LIVE_COUNTS._SQLITE_UP[1:]:
        op.execute(statement)


def downgrade() -> None:
    """Nothing: the triggers belong to 0009 and stay until it is undone."""
