"""One bot's link to the control plane for one run: opened at start, drained and closed at exit.

:class:`Uplink` is built with the bot (the bot's events send through :meth:`Uplink.send`) and
opened when the bot starts: the durable outbox file (``outbox-{bot_id}.sqlite3`` in the data
folder) and the WebSocket client (:class:`~agent.link.client.LinkClient`). At exit
:meth:`Uplink.close` delivers the outbox, closes the stream log and sends its end (the control
plane then ends the bot's SSE stream), all within the drain budget, and closes what it opened.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from agent import __version__
from agent.contracts.link import AgentFrame, Register
from agent.link.client import LinkClient, LinkTiming, agent_link_url
from agent.link.outbox import Outbox
from agent.sse.log import EventLog

log = logging.getLogger(__name__)


class Uplink:
    """The link of one bot's run (see the module docstring).

    Args:
        control_plane_url: Base URL of the control plane (``BotConfig.control_plane_url``).
        bot_id: The bot's id (a UUID string).
        token: The bot's agent token.
        outbox_path: The outbox's SQLite file (created when opened).
        stream: The bot's stream log, fed over the link and closed at exit.
        timing: Heartbeat and reconnect intervals.
    """

    def __init__(
        self,
        control_plane_url: str,
        bot_id: str,
        token: str,
        outbox_path: Path,
        stream: EventLog,
        timing: LinkTiming,
    ) -> None:
        self._url = agent_link_url(control_plane_url, bot_id)
        self._bot_id = bot_id
        self._token = token
        self._outbox_path = outbox_path
        self._stream = stream
        self._timing = timing
        self._outbox: Outbox | None = None
        self._client: LinkClient | None = None

    @property
    def client(self) -> LinkClient:
        """The WebSocket client.

        Raises:
            RuntimeError: The link is not open.
        """
        if self._client is None:
            raise RuntimeError("the link is not open")
        return self._client

    def open(self) -> LinkClient:
        """Open the outbox and start the client's connection loop; returns the client."""
        if self._client is None:
            self._outbox = Outbox(self._outbox_path)
            self._client = LinkClient(
                self._url,
                self._token,
                self._outbox,
                register=self._register,
                timing=self._timing,
                stream=self._stream,
            )
            self._client.start()
        return self._client

    def _register(self) -> Register:
        """The ``register`` frame of each connection: this agent and where its stream is."""
        return Register(agent_version=__version__, stream_seq=self._stream.last_id)

    async def send(self, frame: AgentFrame) -> None:
        """Queue ``frame`` durably for the control plane.

        Raises:
            RuntimeError: The link is not open.
        """
        await self.client.send(frame)

    async def close(self, drain_timeout_s: float) -> None:
        """Deliver the outbox, close the stream log and send its end, then close the link.

        Args:
            drain_timeout_s: Seconds the outbox and the stream's end may take together (the
                stream's end gets at least 1 s); what is left undelivered is logged.
        """
        client, self._client = self._client, None
        if client is not None:
            loop = asyncio.get_running_loop()
            started = loop.time()
            drained = await client.drain(drain_timeout_s)
            if not drained:
                log.warning("outbox not drained before exit", extra={"bot_id": self._bot_id})
            # The stream ends after the final status and the outbox: the control plane ends
            # the bot's SSE stream when ``stream_end`` arrives, within the same drain budget.
            await self._stream.close()
            left = max(drain_timeout_s - (loop.time() - started), 1.0)
            if drained and not await client.finish_stream(left):
                log.warning("stream end not sent before exit", extra={"bot_id": self._bot_id})
            await client.close()
        outbox, self._outbox = self._outbox, None
        if outbox is not None:
            outbox.close()
