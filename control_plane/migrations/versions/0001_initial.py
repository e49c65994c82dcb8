"""Initial schema: tenancy, meetings (bots), status audit, segments, idempotency records.

Timestamps are ``DateTime(timezone=True)`` (timestamptz on PostgreSQL; naive UTC on SQLite,
made aware by ``control_plane.db.base.UtcDateTime``).

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-21 10:47:58.191423
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create the tenancy, meeting, status audit, idempotency and segment tables and indexes."""
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("email", name=op.f("uq_users_email")),
    )
    op.create_table(
        "workspaces",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("recording_enabled", sa.Boolean(), nullable=False),
        sa.Column("transcribe_enabled", sa.Boolean(), nullable=False),
        sa.Column("default_prompt_version_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workspaces")),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("workspace_id", sa.Uuid(), nullable=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("permission", sa.String(length=8), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_api_keys_user_id_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_api_keys_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("digest", name=op.f("uq_api_keys_digest")),
    )
    op.create_index(
        "ix_api_keys_user_workspace", "api_keys", ["user_id", "workspace_id"], unique=False
    )
    op.create_index(op.f("ix_api_keys_workspace_id"), "api_keys", ["workspace_id"], unique=False)
    op.create_table(
        "meetings",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("bot_id", sa.Uuid(), nullable=False),
        sa.Column("workspace_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("native_meeting_id", sa.String(length=512), nullable=False),
        sa.Column("constructed_meeting_url", sa.Text(), nullable=False),
        sa.Column("passcode", sa.String(length=256), nullable=True),
        sa.Column("zoom_obf_token", sa.Text(), nullable=True),
        sa.Column("zoom_connection_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=24), nullable=False),
        sa.Column("status_reason", sa.String(length=64), nullable=True),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("scheduled_start_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("join_offset_seconds", sa.Integer(), nullable=False),
        sa.Column("launch_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("launch_claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("bot_container_id", sa.String(length=256), nullable=True),
        sa.Column("start_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("end_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("name", sa.String(length=300), nullable=True),
        sa.Column("participants", sa.JSON(), nullable=False),
        sa.Column("redacted", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_meetings_user_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_meetings_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_meetings")),
        sa.UniqueConstraint("bot_id", name=op.f("uq_meetings_bot_id")),
    )
    op.create_index(
        "ix_meetings_native",
        "meetings",
        ["workspace_id", "platform", "native_meeting_id"],
        unique=False,
    )
    op.create_index(
        "ix_meetings_status_launch_at",
        "meetings",
        ["status", "launch_claimed_at", "launch_at"],
        unique=False,
    )
    op.create_index(
        "ix_meetings_workspace_created",
        "meetings",
        ["workspace_id", "created_at", "id"],
        unique=False,
    )
    op.create_index(
        "ix_meetings_workspace_name", "meetings", ["workspace_id", "name"], unique=False
    )
    op.create_index(
        "ix_meetings_workspace_status", "meetings", ["workspace_id", "status"], unique=False
    )
    op.create_table(
        "memberships",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("workspace_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("joined_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_memberships_user_id_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_memberships_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memberships")),
        sa.UniqueConstraint("workspace_id", "user_id", name=op.f("uq_memberships_workspace_id")),
    )
    op.create_index(op.f("ix_memberships_user_id"), "memberships", ["user_id"], unique=False)
    op.create_index(
        op.f("ix_memberships_workspace_id"), "memberships", ["workspace_id"], unique=False
    )
    op.create_table(
        "bot_status_changes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("meeting_id", sa.Integer(), nullable=False),
        sa.Column("from_status", sa.String(length=24), nullable=True),
        sa.Column("to_status", sa.String(length=24), nullable=False),
        sa.Column("status_reason", sa.String(length=64), nullable=True),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["meeting_id"],
            ["meetings.id"],
            name=op.f("fk_bot_status_changes_meeting_id_meetings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bot_status_changes")),
    )
    op.create_index(
        op.f("ix_bot_status_changes_meeting_id"), "bot_status_changes", ["meeting_id"], unique=False
    )
    op.create_table(
        "idempotency_records",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("api_key_id", sa.Integer(), nullable=False),
        sa.Column("route", sa.String(length=200), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=False),
        sa.Column("request_digest", sa.String(length=64), nullable=False),
        sa.Column("response_status", sa.Integer(), nullable=False),
        sa.Column("response_body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["api_key_id"],
            ["api_keys.id"],
            name=op.f("fk_idempotency_records_api_key_id_api_keys"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_idempotency_records")),
        sa.UniqueConstraint(
            "api_key_id", "route", "idempotency_key", name=op.f("uq_idempotency_records_api_key_id")
        ),
    )
    op.create_index(
        "ix_idempotency_records_created_at", "idempotency_records", ["created_at"], unique=False
    )
    op.create_table(
        "segments",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("meeting_id", sa.Integer(), nullable=False),
        sa.Column("segment_id", sa.String(length=64), nullable=False),
        sa.Column("start", sa.Float(), nullable=False),
        sa.Column("end", sa.Float(), nullable=False),
        sa.Column("absolute_start_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("absolute_end_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("speaker", sa.String(length=300), nullable=True),
        sa.Column("language", sa.String(length=16), nullable=True),
        sa.Column("completed", sa.Boolean(), nullable=False),
        sa.Column("tier", sa.String(length=16), nullable=False),
        sa.ForeignKeyConstraint(
            ["meeting_id"],
            ["meetings.id"],
            name=op.f("fk_segments_meeting_id_meetings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_segments")),
        sa.UniqueConstraint("meeting_id", "segment_id", name=op.f("uq_segments_meeting_id")),
    )
    op.create_index("ix_segments_meeting_start", "segments", ["meeting_id", "start"], unique=False)


def downgrade() -> None:
    """Drop every table and index of the initial schema, dependants first."""
    op.drop_index("ix_segments_meeting_start", table_name="segments")
    op.drop_table("segments")
    op.drop_index("ix_idempotency_records_created_at", table_name="idempotency_records")
    op.drop_table("idempotency_records")
    op.drop_index(op.f("ix_bot_status_changes_meeting_id"), table_name="bot_status_changes")
    op.drop_table("bot_status_changes")
    op.drop_index(op.f("ix_memberships_workspace_id"), table_name="memberships")
    op.drop_index(op.f("ix_memberships_user_id"), table_name="memberships")
    op.drop_table("memberships")
    op.drop_index("ix_meetings_workspace_status", table_name="meetings")
    op.drop_index("ix_meetings_workspace_name", table_name="meetings")
    op.drop_index("ix_meetings_workspace_created", table_name="meetings")
    op.drop_index("ix_meetings_status_launch_at", table_name="meetings")
    op.drop_index("ix_meetings_native", table_name="meetings")
    op.drop_table("meetings")
    op.drop_index(op.f("ix_api_keys_workspace_id"), table_name="api_keys")
    op.drop_index("ix_api_keys_user_workspace", table_name="api_keys")
    op.drop_table("api_keys")
    op.drop_table("workspaces")
    op.drop_table("users")
