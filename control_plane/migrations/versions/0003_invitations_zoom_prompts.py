"""Invitations, Zoom connections (sealed OAuth tokens) and versioned action prompts.

Revision ID: 0003_invitations_zoom_prompts
Revises: 0002_webhooks
Create Date: 2026-11-21 11:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_invitations_zoom_prompts"
down_revision: str | None = "0002_webhooks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create the action prompt, invitation and Zoom connection tables with their indexes."""
    op.create_table(
        "action_prompts",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("workspace_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("instructions", sa.Text(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("created_by_user_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by_user_id"],
            ["users.id"],
            name=op.f("fk_action_prompts_created_by_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_action_prompts_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_action_prompts")),
        sa.UniqueConstraint(
            "workspace_id", "name", "version", name=op.f("uq_action_prompts_workspace_id")
        ),
    )
    op.create_index(
        "ix_action_prompts_workspace_created",
        "action_prompts",
        ["workspace_id", "created_at"],
        unique=False,
    )
    op.create_table(
        "invitations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("workspace_id", sa.Uuid(), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("token_digest", sa.String(length=64), nullable=False),
        sa.Column("invited_by_user_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("accepted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["invited_by_user_id"],
            ["users.id"],
            name=op.f("fk_invitations_invited_by_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_invitations_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invitations")),
        sa.UniqueConstraint("token_digest", name=op.f("uq_invitations_token_digest")),
    )
    op.create_index(
        "ix_invitations_workspace_status_created",
        "invitations",
        ["workspace_id", "status", "created_at"],
        unique=False,
    )
    op.create_table(
        "zoom_connections",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("workspace_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("zoom_user_id", sa.String(length=128), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("access_token_sealed", sa.Text(), nullable=False),
        sa.Column("refresh_token_sealed", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_zoom_connections_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_zoom_connections_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_zoom_connections")),
        sa.UniqueConstraint(
            "workspace_id", "zoom_user_id", name=op.f("uq_zoom_connections_workspace_id")
        ),
    )
    op.create_index(
        "ix_zoom_connections_workspace_user",
        "zoom_connections",
        ["workspace_id", "user_id"],
        unique=False,
    )


def downgrade() -> None:
    """Drop the Zoom connection, invitation and action prompt tables and their indexes."""
    op.drop_index("ix_zoom_connections_workspace_user", table_name="zoom_connections")
    op.drop_table("zoom_connections")
    op.drop_index("ix_invitations_workspace_status_created", table_name="invitations")
    op.drop_table("invitations")
    op.drop_index("ix_action_prompts_workspace_created", table_name="action_prompts")
    op.drop_table("action_prompts")
