"""Signing keys in the database: ``signing_keys``.

The stream-token key lived in ``{data_dir}/keys/stream_ed25519.pem`` and agent tokens were
derived from it, so replicas had to share a disk: two replicas with their own folders refused
each other's stream tokens and agents. The key ring now lives here, sealed with the token
cipher; a deployment's existing key file is imported as generation 1 by the first replica that
starts (:meth:`control_plane.agent_hub.signing_keys.SigningKeyStore.ensure`), so tokens already
handed out stay valid.

Revision ID: 0015_signing_keys
Revises: 0014_relay_messages
Create Date: 2026-11-29 07:45:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_signing_keys"
down_revision: str | None = "0014_relay_messages"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create ``signing_keys``."""
    op.create_table(
        "signing_keys",
        sa.Column("generation", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("kid", sa.String(length=32), nullable=False),
        sa.Column("private_key_sealed", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("generation", name=op.f("pk_signing_keys")),
        sa.UniqueConstraint("kid", name=op.f("uq_signing_keys_kid")),
    )


def downgrade() -> None:
    """Drop ``signing_keys`` (the key file, if any, is still where it was)."""
    op.drop_table("signing_keys")
