"""Zoom bots keep no OBF token: drop ``meetings.zoom_obf_token`` and ``zoom_connection_id``.

The bots join Zoom through its web client, which takes no on-behalf-of token (Zoom requires one
of Meeting SDK apps only; docs/api.md 2.3, "Zoom"): the token a client passed, or one minted at
launch from a stored connection, was stored in plain text and never used. Existing values are
erased with their columns, and from the configs waiting in ``bootstrap_tokens`` (where a minted
token sat in plain text too). Stored Zoom connections keep their tokens sealed, as they were
since 0003.

Revision ID: 0016_zoom_tokens_unused
Revises: 0015_signing_keys
Create Date: 2026-11-29 08:00:00
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_zoom_tokens_unused"
down_revision: str | None = "0015_signing_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Erase the tokens, drop the two columns, strip ``zoom_obf_token`` from bootstrap configs.

    On SQLite, ``secure_delete`` zeroes the pages the old rows leave free, so the tokens do not
    linger in the file; on PostgreSQL the old row versions are gone after the next ``VACUUM``.
    """
    connection = op.get_bind()
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql("PRAGMA secure_delete = ON")
    connection.execute(
        sa.text("UPDATE meetings SET zoom_obf_token = NULL WHERE zoom_obf_token IS NOT NULL")
    )
    with op.batch_alter_table("meetings") as batch:
        batch.drop_column("zoom_obf_token")
        batch.drop_column("zoom_connection_id")
    rows = connection.execute(
        sa.text("SELECT meeting_id, config FROM bootstrap_tokens WHERE config LIKE :marker"),
        {"marker": '%"zoom_obf_token"%'},
    ).all()
    for meeting_id, config in rows:
        stored = json.loads(config)
        if stored.pop("zoom_obf_token", None) is None:
            continue
        connection.execute(
            sa.text("UPDATE bootstrap_tokens SET config = :config WHERE meeting_id = :id"),
            {"config": json.dumps(stored, separators=(",", ":")), "id": meeting_id},
        )


def downgrade() -> None:
    """Add the columns back, empty (the erased tokens are gone)."""
    with op.batch_alter_table("meetings") as batch:
        batch.add_column(sa.Column("zoom_obf_token", sa.Text(), nullable=True))
        batch.add_column(sa.Column("zoom_connection_id", sa.Integer(), nullable=True))
