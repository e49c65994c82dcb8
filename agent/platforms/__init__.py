"""Platform adapters: one module per meeting platform, chosen by the bot's ``platform``."""

from __future__ import annotations

from agent.contracts.bot_config import Platform
from agent.platforms.base import PlatformAdapter, SelectorAdapter
from agent.platforms.google_meet import GoogleMeetAdapter
from agent.platforms.teams import TeamsAdapter
from agent.platforms.zoom import ZoomAdapter

_ADAPTERS: dict[Platform, type[SelectorAdapter]] = {
    Platform.GOOGLE_MEET: GoogleMeetAdapter,
    Platform.ZOOM: ZoomAdapter,
    Platform.TEAMS: TeamsAdapter,
}


def adapter_for(platform: Platform) -> PlatformAdapter:
    """A fresh adapter for ``platform``."""
    return _ADAPTERS[platform]()
