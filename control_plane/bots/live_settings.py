"""PATCH of a launched bot: the agent applies the change first, the control plane stores it after.

A bot is *launched* once the scheduler claimed it (``launch_claimed_at``): its ``BotConfig``
was built from the settings then, so a later change must reach the agent. Part 1 lets PATCH
touch only ``requested`` and ``scheduled`` bots; a launched ``requested`` bot's agent may
already be further along (its status reports trail it), so the agent accepts a change in any
state before it leaves.

:func:`apply_live`:

1. the changed fields only (``SettingsChange``; none changed → nothing to do);
2. waits up to ``agent_command_timeout_seconds`` for the agent to register (a bot just launched
   is still starting), sends ``update_settings`` and waits for its result;
3. the agent checks every field before applying any (``agent/meeting/live_settings.py``), so a
   refusal leaves the bot as it was: ``setting_not_live`` → 409 :class:`SettingNotLive` naming the
   field (``errors[0].loc == ["body", field]``); ``bot_not_active`` (the bot is leaving) → 409
   ``bot_not_updatable``; no agent → 503 ``agent_unavailable``; no answer → 504 ``agent_timeout``;
   any other refusal → 502 ``agent_command_failed``;
4. only after the agent confirmed, the changed fields are stored, in one transaction.

Nothing is stored on any error, so the stored settings never claim what the bot does not do.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from agent.contracts.bot_config import BotSettings
from agent.contracts.link import (
    CommandErrorCode,
    CommandName,
    SettingsChange,
    UpdateSettingsCommand,
)
from control_plane.bots.live_commands import LiveCommands, refusal_error
from control_plane.bots.status import lock_meeting
from control_plane.db.engine import Database
from control_plane.db.models.bot import Meeting
from control_plane.errors import Conflict, NotFound

R = TypeVar("R")


def is_launched(meeting: Meeting) -> bool:
    """Whether the bot's config went (or is going) to a launcher: changes must go live."""
    return meeting.launch_claimed_at is not None or meeting.bot_container_id is not None


def settings_change(current: BotSettings, wanted: BotSettings) -> SettingsChange | None:
    """The fields a PATCH may change that differ between ``current`` and ``wanted``, or None."""
    now = current.model_dump(mode="json")
    then = wanted.model_dump(mode="json")
    changed = {
        name: then[name]
        for name in SettingsChange.model_fields
        if then.get(name) != now.get(name) and then.get(name) is not None
    }
    return SettingsChange.model_validate(changed) if changed else None


def not_updatable(detail: str) -> Conflict:
    """409 ``bot_not_updatable``."""
    return Conflict(detail, code="bot_not_updatable")


async def apply_live(
    live: LiveCommands,
    db: Database,
    bot_id: uuid.UUID,
    change: SettingsChange,
    render: Callable[[Meeting], R],
    *,
    wait_seconds: float,
) -> R:
    """Have the bot's agent apply ``change``, then store it (see the module docstring).

    Args:
        live: Sends the command.
        db: Where the confirmed change is stored.
        bot_id: The bot.
        change: The changed fields.
        render: Turns the updated row into the answer, inside the storing transaction.
        wait_seconds: How long to wait for a starting agent to register.

    Returns:
        ``render`` of the updated row.

    Raises:
        SettingNotLive: 409 with the field. Conflict: 409 ``bot_not_updatable``.
        AgentUnavailable: 503. AgentTimeout: 504. AgentCommandFailed: 502.
        NotFound: 404 when the row disappeared meanwhile.
    """
    await live.wait_for_agent(bot_id, wait_seconds)
    result = await live.run(bot_id, UpdateSettingsCommand(changes=change))
    if not result.ok:
        if result.error is CommandErrorCode.BOT_NOT_ACTIVE:
            raise not_updatable(result.detail or "the bot is leaving the meeting")
        raise refusal_error(result, CommandName.UPDATE_SETTINGS)
    async with db.sessions.begin() as session:
        meeting = await lock_meeting(session, bot_id=bot_id)
        if meeting is None:
            raise NotFound("no such bot in this workspace", code="bot_not_found")
        merged: dict[str, Any] = dict(meeting.settings)
        merged.update(change.given())
        meeting.settings = BotSettings.model_validate(merged).model_dump(mode="json")
        meeting.updated_at = datetime.now(UTC)
        return render(meeting)
