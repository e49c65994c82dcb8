"""Bot status values, the one table of legal moves, and the documented ``status_reason`` codes.

Source: docs/architecture.md §3. The table is data; callers ask :func:`can_transition` instead of
writing
if-chains, and the API's 404/409 rules read from the same sets.
"""

from __future__ import annotations

from enum import StrEnum


class BotStatus(StrEnum):
    """Public ``status`` of a bot (docs/api.md Part 1 "Bot statuses", docs/architecture.md §3)."""

    SCHEDULED = "scheduled"
    REQUESTED = "requested"
    JOINING = "joining"
    AWAITING_ADMISSION = "awaiting_admission"
    ACTIVE = "active"
    STOPPING = "stopping"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


LEGAL_TRANSITIONS: dict[BotStatus, frozenset[BotStatus]] = {
    BotStatus.SCHEDULED: frozenset({BotStatus.REQUESTED, BotStatus.CANCELLED}),
    BotStatus.REQUESTED: frozenset({BotStatus.JOINING, BotStatus.STOPPING, BotStatus.FAILED}),
    BotStatus.JOINING: frozenset(
        {BotStatus.AWAITING_ADMISSION, BotStatus.ACTIVE, BotStatus.STOPPING, BotStatus.FAILED}
    ),
    BotStatus.AWAITING_ADMISSION: frozenset(
        {BotStatus.ACTIVE, BotStatus.STOPPING, BotStatus.FAILED}
    ),
    BotStatus.ACTIVE: frozenset({BotStatus.STOPPING, BotStatus.FAILED}),
    BotStatus.STOPPING: frozenset({BotStatus.COMPLETED, BotStatus.FAILED}),
    BotStatus.COMPLETED: frozenset(),
    BotStatus.FAILED: frozenset(),
    BotStatus.CANCELLED: frozenset(),
}

FINAL_STATUSES: frozenset[BotStatus] = frozenset(
    status for status, targets in LEGAL_TRANSITIONS.items() if not targets
)

# Statuses in which a bot is in (or entering) a meeting: purge answers 409 here.
LIVE_STATUSES: frozenset[BotStatus] = frozenset(
    {
        BotStatus.REQUESTED,
        BotStatus.JOINING,
        BotStatus.AWAITING_ADMISSION,
        BotStatus.ACTIVE,
        BotStatus.STOPPING,
    }
)

# Statuses in which a bot has not launched yet: PATCH may change its options, the scheduler
# launches it once its launch_at is due.
UPDATABLE_STATUSES: frozenset[BotStatus] = frozenset({BotStatus.REQUESTED, BotStatus.SCHEDULED})
DUE_STATUSES: frozenset[BotStatus] = UPDATABLE_STATUSES

# Statuses in which the agent has (or is about to have) a stream to subscribe to.
STREAMING_STATUSES: frozenset[BotStatus] = frozenset(
    {BotStatus.REQUESTED, BotStatus.JOINING, BotStatus.AWAITING_ADMISSION, BotStatus.ACTIVE}
)

# Statuses in which the bot never started joining (no chat to read yet).
NOT_JOINED_STATUSES: frozenset[BotStatus] = frozenset(
    {BotStatus.SCHEDULED, BotStatus.REQUESTED, BotStatus.CANCELLED}
)


def can_transition(current: BotStatus, target: BotStatus) -> bool:
    """Return whether ``current → target`` is a legal move of docs/architecture.md §3."""
    return target in LEGAL_TRANSITIONS[current]


class StatusReason(StrEnum):
    """Documented ``status_reason`` codes. The set is open-ended: new codes may appear."""

    LAUNCHED = "launched"
    SCHEDULED_LAUNCH = "scheduled_launch"
    CANCELLED_BY_API = "cancelled_by_api"
    STOPPED_BY_API = "stopped_by_api"
    JOIN_STARTED = "join_started"
    LOBBY = "lobby"
    ADMITTED = "admitted"
    JOINED = "joined"
    LEFT_ALONE = "left_alone"
    STARTUP_ALONE = "startup_alone"
    ADMISSION_TIMEOUT = "admission_timeout"
    ADMISSION_DENIED = "admission_denied"
    REMOVED_BY_HOST = "removed_by_host"
    MEETING_ENDED = "meeting_ended"
    MEETING_NOT_FOUND = "meeting_not_found"
    LAUNCH_FAILED = "launch_failed"
    AGENT_LOST = "agent_lost"
    JOIN_ERROR = "join_error"
    LOGIN_REQUIRED = "login_required"
    JOIN_REFUSED_BY_PLATFORM = "join_refused_by_platform"
    ZOOM_REQUIRES_RTMS = "zoom_requires_rtms"
    BOTS_BLOCKED_BY_POLICY = "bots_blocked_by_policy"
    MAX_DURATION = "max_duration"
    PAGE_LOST = "page_lost"
    SIGTERM = "sigterm"
    INTERNAL_ERROR = "internal_error"
