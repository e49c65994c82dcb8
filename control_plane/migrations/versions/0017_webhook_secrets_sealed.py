"""Webhook endpoint secrets are stored sealed: ``webhook_endpoints.secret`` becomes TEXT.

Whoever holds an endpoint's ``whsec_`` secret can forge deliveries to its receiver; it was
stored in plain text. It is now sealed by the token cipher (a Fernet token of about 140
characters, over the 128 the column held). Alembic has no access to the cipher's key, so the
rows stored in plain text are sealed by the control plane when it starts
(:func:`control_plane.webhooks.sealed_secrets.seal_stored_secrets`), in one transaction.

Revision ID: 0017_webhook_secrets_sealed
Revises: 0016_zoom_tokens_unused
Create Date: 2026-11-29 07:45:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017_webhook_secrets_sealed"
down_revision: str | None = "0016_zoom_tokens_unused"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Widen ``webhook_endpoints.secret`` to TEXT."""
    with op.batch_alter_table("webhook_endpoints") as batch:
        batch.alter_column(
            "secret", existing_type=sa.String(length=128), type_=sa.Text(), nullable=False
        )


def downgrade() -> None:
    """Back to VARCHAR(128): only secrets in plain text fit (open them before downgrading)."""
    with op.batch_alter_table("webhook_endpoints") as batch:
        batch.alter_column(
            "secret", existing_type=sa.Text(), type_=sa.String(length=128), nullable=False
        )
