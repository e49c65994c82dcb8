"""The control plane's closed sets of strings (and Svix's status integers).

Stored in its tables, checked in its queries and shown in its schemas: one home, below the database
models.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Permission(StrEnum):
    """What a key may do: ``read`` keys may only GET (and subscribe)."""

    EDIT = "edit"
    READ = "read"


class Role(StrEnum):
    """A user's role in a workspace."""

    OWNER = "owner"
    MEMBER = "member"


class InvitationStatus(StrEnum):
    """Where an invitation stands: ``pending`` until accepted or revoked."""

    PENDING = "pending"
    ACCEPTED = "accepted"
    REVOKED = "revoked"


class AttemptStatus(IntEnum):
    """``status`` of a delivery attempt: Svix's MessageStatus integers (docs/api.md 2.8)."""

    SUCCESS = 0
    PENDING = 1
    FAILED = 2
    SENDING = 3
