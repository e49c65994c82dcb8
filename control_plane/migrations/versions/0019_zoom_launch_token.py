"""A zoom bot's OBF token is minted at launch again: keep what the launch needs, never in clear.

docs/api.md Part 1: a ``zoom`` bot created without ``zoom_obf_token`` gets one minted from the
user's stored Zoom connection. 0016 dropped ``meetings.zoom_obf_token`` (plain text) and
``meetings.zoom_connection_id``; this adds back ``zoom_connection_id`` (the chosen connection,
not a secret: the launch mints from it) and ``zoom_obf_token_sealed`` (a given token, sealed by
the token cipher like the connections' tokens; the plain-text column stays dropped).

``op.add_column`` is an ``ALTER TABLE … ADD COLUMN`` on SQLite too: ``meetings`` is not rebuilt,
so the ``meetings_live_*`` triggers of 0009 stay.

Revision ID: 0019_zoom_launch_token
Revises: 0018_live_triggers_again
Create Date: 2026-11-29 08:45:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019_zoom_launch_token"
down_revision: str | None = "0018_live_triggers_again"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the two nullable columns (no rebuild of ``meetings``)."""
    op.add_column("meetings", sa.Column("zoom_connection_id", sa.Integer(), nullable=True))
    op.add_column("meetings", sa.Column("zoom_obf_token_sealed", sa.Text(), nullable=True))


def downgrade() -> None:
    """Drop them (``ALTER TABLE … DROP COLUMN``; SQLite 3.35 or later)."""
    op.drop_column("meetings", "zoom_obf_token_sealed")
    op.drop_column("meetings", "zoom_connection_id")
