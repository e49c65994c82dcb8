"""Launch leases: a scheduler's claim of a due bot names its owner and expires.

``launch_claim_owner`` is the claiming scheduler's id and ``launch_lease_until`` when its claim
lapses: a bot still without a ``bot_container_id`` after that (its claimer died between the
claim and the launch) is claimed and launched again (docs/api.md 2.4), and the launchers are
idempotent by bot id, so a launch that did happen is not repeated. Claims made before this
revision have no lease and count as lapsed.

Revision ID: 0007_launch_leases
Revises: 0006_ws_max_meeting_duration
Create Date: 2026-11-23 20:15:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_launch_leases"
down_revision: str | None = "0006_ws_max_meeting_duration"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the lease columns (nullable: old claims count as lapsed)."""
    with op.batch_alter_table("meetings") as batch:
        batch.add_column(sa.Column("launch_claim_owner", sa.String(128), nullable=True))
        batch.add_column(sa.Column("launch_lease_until", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    """Drop the lease columns."""
    with op.batch_alter_table("meetings") as batch:
        batch.drop_column("launch_lease_until")
        batch.drop_column("launch_claim_owner")
