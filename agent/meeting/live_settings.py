"""The ``update_settings`` command: a PATCH of a launched bot, applied all or nothing.

:class:`SettingsApplier` checks every changed field against what the bot is doing before it
applies any, so a change is never half-applied:

- ``bot_name``: never (no platform adapter renames a bot in a meeting; the name is typed at
  the join);
- ``language``, ``transcribe_enabled``: until the bot is admitted (the transcriber opens then);
- ``recording_enabled``: any time; on starts the recorder, off stops its capture (what was
  recorded is still uploaded); a stopped recording is not resumed;
- ``capture_modes``, ``recording_format``: until the recording began;
- ``voice_agent_enabled``: any time (the control plane enforces it).

A field given with its current value is no change and always accepted. A bot that is leaving
refuses every change with ``bot_not_active``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from agent.contracts.bot_config import BotSettings
from agent.contracts.link import CommandErrorCode, SettingsChange
from agent.contracts.status import FINAL_STATUSES, BotStatus
from agent.media_in.meeting_media import MeetingMedia
from agent.process.errors import CommandError

log = logging.getLogger(__name__)

_LEAVING = FINAL_STATUSES | {BotStatus.STOPPING}


class SettingsApplier:
    """Applies settings changes to a running bot.

    Args:
        media: The meeting's transcription and recording (holds the settings in effect).
        status: Returns the bot's current status.
    """

    def __init__(self, media: MeetingMedia, status: Callable[[], BotStatus]) -> None:
        self._media = media
        self._status = status

    async def apply(self, change: SettingsChange) -> dict[str, Any]:
        """Check the whole of ``change``, then apply it.

        Returns:
            ``{"settings": {...}}``: every setting now in effect (JSON values).

        Raises:
            CommandError: ``bot_not_active`` when the bot is leaving; ``setting_not_live`` with
                ``field`` for the first field that cannot change now (nothing applied).
        """
        status = self._status()
        if status in _LEAVING:
            raise CommandError(CommandErrorCode.BOT_NOT_ACTIVE, f"the bot is {status.value}")
        old = self._media.settings
        merged = old.model_dump()
        merged.update(change.model_dump(exclude_none=True))
        new = BotSettings.model_validate(merged)
        if new.bot_name != old.bot_name:
            raise CommandError(
                CommandErrorCode.SETTING_NOT_LIVE,
                "no platform lets a bot rename itself in a meeting",
                field="bot_name",
            )
        refusal = self._media.live_refusal(new)
        if refusal is not None:
            field, reason = refusal
            raise CommandError(CommandErrorCode.SETTING_NOT_LIVE, reason, field=field)
        await self._media.apply(new)
        log.info("settings changed", extra={"fields": sorted(change.given())})
        return {"settings": new.model_dump(mode="json")}
