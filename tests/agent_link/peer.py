"""A scripted agent: the link protocol's agent side, driven step by step by a test.

It is the protocol counterpart of the endpoint under test (like a real agent it sends frames,
waits for their acks, receives commands and answers them), not a stand-in for the subject.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestClient

from agent.contracts.link import (
    Ack,
    AgentFrame,
    Command,
    CommandErrorCode,
    CommandResult,
    Register,
    StreamFetch,
    StreamFrom,
    parse_control_plane_frame,
)

ACK_WAIT_S = 5.0


class ScriptedAgent:
    """One agent link to the app under test.

    Args:
        client: Test client of the running app.
        bot_id: The bot this agent runs.
        token: Its agent token.
    """

    def __init__(
        self, client: TestClient[web.Request, web.Application], bot_id: uuid.UUID, token: str
    ) -> None:
        self.client = client
        self.bot_id = bot_id
        self.token = token
        self.commands: asyncio.Queue[Command] = asyncio.Queue()
        # ``stream_from`` / ``stream_fetch`` frames (the real agent feeds its stream log).
        self.stream_requests: asyncio.Queue[StreamFrom | StreamFetch] = asyncio.Queue()
        self._acks: dict[str, asyncio.Future[None]] = {}
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._reader: asyncio.Task[None] | None = None

    @property
    def path(self) -> str:
        """The link endpoint's path."""
        return f"/internal/v1/agents/{self.bot_id}"

    async def connect(self) -> None:
        """Open the WebSocket with the agent token."""
        self._ws = await self.client.ws_connect(
            self.path, headers={"Authorization": f"Bearer {self.token}"}
        )
        self._reader = asyncio.create_task(self._read(self._ws))

    async def _read(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        async for message in ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            frame = parse_control_plane_frame(message.data)
            if isinstance(frame, Ack):
                future = self._acks.get(frame.ref_id)
                if future is not None and not future.done():
                    future.set_result(None)
            elif isinstance(frame, Command):
                self.commands.put_nowait(frame)
            else:
                self.stream_requests.put_nowait(frame)

    async def send(self, frame: AgentFrame, *, expect_ack: bool = True) -> None:
        """Send ``frame`` and (by default) wait for the control plane's ack of its id."""
        assert self._ws is not None
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._acks[frame.id] = future
        await self._ws.send_str(frame.model_dump_json())
        if expect_ack:
            await asyncio.wait_for(future, ACK_WAIT_S)

    async def register(self, stream_seq: int = 0) -> Register:
        """Send ``register`` (as the agent does first on every connection)."""
        frame = Register(agent_version="test-peer", stream_seq=stream_seq)
        await self.send(frame)
        return frame

    async def next_command(self, within_seconds: float = ACK_WAIT_S) -> Command:
        """The next command the control plane sent."""
        return await asyncio.wait_for(self.commands.get(), within_seconds)

    async def answer(
        self,
        command: Command,
        *,
        ok: bool = True,
        result: dict[str, Any] | None = None,
        error: CommandErrorCode | None = None,
        field: str | None = None,
        detail: str | None = None,
    ) -> None:
        """Answer ``command`` with a ``command_result``."""
        await self.send(
            CommandResult(
                ref_id=command.id,
                ok=ok,
                result=result or {},
                error=error,
                field=field,
                detail=detail,
            )
        )

    async def closed_by_control_plane(self, within_seconds: float = ACK_WAIT_S) -> int | None:
        """Wait until the control plane closes the link; return its close code."""
        assert self._reader is not None and self._ws is not None
        await asyncio.wait_for(asyncio.shield(self._reader), within_seconds)
        return self._ws.close_code

    async def close(self) -> None:
        """Close the link and stop reading."""
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    async def reconnect(self) -> None:
        """Drop the connection and open a new one (what the agent does after a network loss)."""
        await self.close()
        self.commands = asyncio.Queue()
        await self.connect()
