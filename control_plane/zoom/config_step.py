"""The ``zoom_obf_token`` config step: a Zoom bot without a token gets one minted at launch."""

from __future__ import annotations

from agent.contracts.bot_config import BotConfig, Platform
from control_plane.bots.config_builder import NetworkRun
from control_plane.db.models.bot import Meeting
from control_plane.hooks import ZoomTokenSource
from control_plane.launchers.base import LaunchError


def zoom_token_step(source: ZoomTokenSource | None) -> NetworkRun:
    """A network step minting the meeting's OBF token from its stored Zoom connection.

    Args:
        source: The Zoom integration's token source; None when it is absent.

    Returns:
        The step; it raises ``LaunchError`` for a Zoom bot with neither a token nor a
        connection, and ``control_plane.errors.ProviderError`` when Zoom refuses.
    """

    async def step(meeting: Meeting, config: BotConfig) -> BotConfig:
        if meeting.platform != Platform.ZOOM.value or config.zoom_obf_token:
            return config
        if source is None or meeting.zoom_connection_id is None:
            raise LaunchError("no Zoom token and no Zoom connection to mint one")
        token = await source.mint(meeting.zoom_connection_id, meeting.native_meeting_id)
        return config.model_copy(update={"zoom_obf_token": token})

    return step
