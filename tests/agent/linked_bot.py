"""A real :class:`~agent.meeting.bot.Bot` for a testmeeting room, linked to a :class:`LinkPeer`."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from agent.contracts.bot_config import BotConfig, BotSettings
from agent.meeting.bot import Bot
from agent.process.settings import AgentSettings
from agent.wiring import assemble
from testmeeting import TestMeetingServer
from tests.agent.link_peer import LinkPeer


def linked_bot(
    peer: LinkPeer,
    token: str,
    server: TestMeetingServer,
    room: tuple[str, str],
    settings: BotSettings,
    data_dir: Path,
    **agent_settings: Any,
) -> Bot:
    """A bot that joins ``room`` (``(platform, native meeting id)``) on ``server``.

    Its link goes to ``peer`` with ``token``; its agent trusts the server's certificate, keeps
    its files and models under ``data_dir``, sends heartbeats every second and gives a join
    30 s. ``agent_settings`` override any of those or set more.
    """
    platform, meeting_id = room
    config = BotConfig(
        bot_id=uuid.UUID(peer.bot_id),
        meeting_id=1,
        platform=platform,
        meeting_url=server.meeting_url(platform, meeting_id),
        native_meeting_id=meeting_id,
        settings=settings,
        control_plane_url=peer.url,
        agent_token=token,
    )
    host: dict[str, Any] = {
        "extra_browser_args": server.browser_args(),
        "ignore_https_errors": True,
        "data_dir": data_dir,
        "heartbeat_interval_seconds": 1.0,
        "join_timeout_seconds": 30.0,
        "models_dir": data_dir / "models",
        **agent_settings,
    }
    return assemble(config, AgentSettings(**host))
