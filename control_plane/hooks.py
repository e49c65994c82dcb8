"""Extension points other parts plug into, and the application keys they are registered under.

* :data:`StatusHook` — ``await hook(session, change)`` runs inside the transaction of every bot
  status change, after the meeting row and its audit row are written and before commit; raising
  rolls the change back. The webhook outbox emits ``bot.status_changed`` from one.
* :class:`ZoomConnectionLookup` — whether a usable stored Zoom connection exists for a new zoom
  bot (docs/api.md Part 1 requires a token or one); :class:`ZoomTokenSource` adds sealing a
  given OBF token and, at launch, opening it or minting one from the bot's connection.
* :data:`AgentCommander` — ``delivered = await send(bot_id, command)``; False when no agent of
  that bot is connected.
* :data:`RecordingUrl` — ``url = await first(session, meeting)``: the presigned URL of the
  bot's main recording, or None (built from ``control_plane.meetings.artifacts.ArtifactLister``).
* :data:`PurgeHook` — ``await purge(session, meeting)`` inside the purge transaction of
  ``DELETE /api/v1/meetings/{id}``: delete this part's rows (chat, artifacts) and stored files.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.link import Command
from control_plane.db.models.bot import Meeting


@dataclass(frozen=True)
class StatusChange:
    """One bot status change, as the hooks see it.

    Attributes:
        meeting: The updated row (same session; read-only for hooks).
        previous_status: Status before the change; None when the bot was just created.
        status: The new status.
        status_reason: Machine-readable reason code (docs/architecture.md §3), or None.
        at: When it happened (aware UTC).
    """

    meeting: Meeting
    previous_status: str | None
    status: str
    status_reason: str | None
    at: datetime


StatusHook = Callable[[AsyncSession, StatusChange], Awaitable[None]]
AgentCommander = Callable[[uuid.UUID, Command], Awaitable[bool]]
RecordingUrl = Callable[[AsyncSession, Meeting], Awaitable[str | None]]
PurgeHook = Callable[[AsyncSession, Meeting], Awaitable[None]]


class ZoomConnectionLookup(Protocol):
    """The stored Zoom connection a new zoom bot could name (docs/api.md Part 1 and 2.3)."""

    async def usable_connection(
        self, workspace_id: uuid.UUID, user_id: int | None, connection_id: int | None
    ) -> int | None:
        """The id of the connection a zoom bot would use, or None when there is none.

        Given ``connection_id``: that connection when it is one of the workspace's (any
        member's), else None. Without it: the user's newest connection in the workspace.
        """
        ...


class ZoomTokenSource(ZoomConnectionLookup, Protocol):
    """Zoom on-behalf-of tokens of zoom bots: sealed when given, minted at launch otherwise."""

    def seal(self, token: str) -> str:
        """A given OBF token sealed for storage (the database never holds it in plain text)."""
        ...

    async def launch_token(
        self, connection_id: int | None, sealed_token: str | None, native_meeting_id: str
    ) -> str:
        """The OBF token a launching bot gets: its given one, else one minted.

        The given one is ``sealed_token`` opened; one is minted from ``connection_id``.

        Raises:
            control_plane.errors.ProviderError: Zoom refused or failed, or there is nothing to
                mint from.
        """
        ...


STATUS_HOOKS: web.AppKey[list[StatusHook]] = web.AppKey("status_hooks")
"""In-transaction status hooks (the metrics counter, the webhook outbox)."""
ZOOM_TOKENS = web.AppKey("zoom_tokens", ZoomTokenSource)
"""Usable stored Zoom connections, sealing and OBF minting (set by the Zoom integration)."""
AGENT_COMMANDS: web.AppKey[AgentCommander] = web.AppKey("agent_commands")
"""Sends a command to a connected agent; set by the agent link."""
PURGE_HOOKS: web.AppKey[list[PurgeHook]] = web.AppKey("purge_hooks")
"""In-transaction purge of other parts' meeting data (chat, artifacts)."""
