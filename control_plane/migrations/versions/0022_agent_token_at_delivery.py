"""A bot machine's agent token is minted at its bootstrap exchange, not at its launch.

A launch on a machine of its own (``qemu``, ``ec2``, ``kubernetes``) adds the bot's
``agent_links`` row (``launched_at`` drives the reaper's connect timeout) before any agent
token exists: the token is minted where it is delivered, at the exchange, which stores its
digest then. So ``agent_links.token_digest`` may be NULL until then; a NULL digest matches no
token. (A unique column holds any number of NULLs on SQLite and PostgreSQL alike.)

``batch_alter_table`` rebuilds ``agent_links`` on SQLite (no trigger is defined on it).

Revision ID: 0022_agent_token_at_delivery
Revises: 0021_action_windows
Create Date: 2026-11-29 14:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022_agent_token_at_delivery"
down_revision: str | None = "0021_action_windows"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Let ``agent_links.token_digest`` be NULL (no token minted yet)."""
    with op.batch_alter_table("agent_links") as batch:
        batch.alter_column("token_digest", existing_type=sa.String(length=64), nullable=True)


def downgrade() -> None:
    """Make the digest required again; a row without one gets a value no token hashes to."""
    op.execute(
        sa.text(
            "UPDATE agent_links SET token_digest = 'unminted-' || meeting_id"
            " WHERE token_digest IS NULL"
        )
    )
    with op.batch_alter_table("agent_links") as batch:
        batch.alter_column("token_digest", existing_type=sa.String(length=64), nullable=False)
