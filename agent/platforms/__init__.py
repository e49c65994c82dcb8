"""Platform adapters: one module per meeting platform, chosen by the bot's ``platform``."""

from __future__ import annotations

from agent.contracts.bot_config import Platform
from agent.platforms.base import EVALUATE_TIMEOUT_S, PlatformAdapter
from agent.platforms.google_meet import GoogleMeetAdapter
from agent.platforms.selector_adapter import SelectorAdapter
from agent.platforms.teams import TeamsAdapter
from agent.platforms.zoom import ZoomAdapter

_ADAPTERS: dict[Platform, type[SelectorAdapter]] = {
    Platform.GOOGLE_MEET: GoogleMeetAdapter,
    Platform.ZOOM: ZoomAdapter,
    Platform.TEAMS: TeamsAdapter,
}


def adapter_for(
    platform: Platform, evaluate_timeout_s: float = EVALUATE_TIMEOUT_S
) -> PlatformAdapter:
    """A fresh adapter for ``platform``; page evaluations give up after ``evaluate_timeout_s``."""
    return _ADAPTERS[platform](evaluate_timeout_s)
