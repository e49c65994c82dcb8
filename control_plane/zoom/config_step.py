"""The ``zoom_obf_token`` config step: a zoom bot's OBF token reaches its ``BotConfig`` at launch.

The token the client gave (stored sealed) is opened; without one, a token is minted from the
bot's stored Zoom connection (docs/api.md 2.3). Neither is stored in plain text.
"""

from __future__ import annotations

from agent.contracts.bot_config import BotConfig, Platform
from control_plane.bots.config_builder import NetworkRun
from control_plane.db.models.bot import Meeting
from control_plane.hooks import ZoomTokenSource


def zoom_token_step(source: ZoomTokenSource) -> NetworkRun:
    """A network step putting the meeting's OBF token into a zoom bot's config.

    Args:
        source: The Zoom integration's token source.

    Returns:
        The step; it raises ``control_plane.errors.ProviderError`` when there is nothing to
        mint from or Zoom refuses.
    """

    async def step(meeting: Meeting, config: BotConfig) -> BotConfig:
        if meeting.platform != Platform.ZOOM.value:
            return config
        token = await source.launch_token(
            meeting.zoom_connection_id, meeting.zoom_obf_token_sealed, meeting.native_meeting_id
        )
        return config.model_copy(update={"zoom_obf_token": token})

    return step
