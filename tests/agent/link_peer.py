"""A real aiohttp WebSocket peer speaking the control plane's side of the agent link.

It checks the bearer token, hands out upload slots (the bytes are kept in ``uploads``), stores
every agent event by id (idempotently, as the control plane must) and acks it, records the
order of first arrival, and can send commands. ``restart()`` stops listening (dropping the
connection) and later listens again on the same port, which is what a control-plane restart
looks like to the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import WSMsgType, web

from agent.contracts.link import (
    Ack,
    Command,
    StreamFrom,
    UploadRequest,
    UploadSlot,
    parse_agent_frame,
)


class LinkPeer:
    """The control-plane end of one bot's link."""

    def __init__(self, bot_id: str, token: str, ack: bool = True) -> None:
        self.bot_id = bot_id
        self.token = token
        self.ack = ack
        self.stored: dict[str, Any] = {}
        self.order: list[str] = []
        self.duplicates = 0
        self.registers: list[Any] = []
        self.heartbeats = 0
        self.acked_commands: list[str] = []
        self.results: dict[str, Any] = {}
        self.rejected = 0
        self.stream_events: list[Any] = []
        self.stream_ends = 0
        self.uploads: dict[str, tuple[bytes, dict[str, str]]] = {}
        self.changed = asyncio.Event()
        self._ws: web.WebSocketResponse | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self, port: int = 0) -> None:
        app = web.Application()
        app.router.add_get("/internal/v1/agents/{bot_id}", self._handle)
        app.router.add_put("/uploads/{name}", self._upload)
        app.router.add_post("/internal/v1/agents/{bot_id}/uploads", self._slot)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port or self.port, reuse_address=True)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def stop(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def send_raw(self, text: str) -> None:
        """Send a text frame as is (e.g. a command the agent must reject)."""
        assert self._ws is not None
        await self._ws.send_str(text)

    async def send_command(self, command: Command) -> None:
        assert self._ws is not None, "agent not connected"
        await self._ws.send_str(command.model_dump_json())

    def events_of(self, kind: str) -> list[Any]:
        return [self.stored[i] for i in self.order if self.stored[i].type == kind]

    async def wait_for(self, predicate: Any, within: float = 10.0) -> None:
        async with asyncio.timeout(within):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

    async def _slot(self, request: web.Request) -> web.Response:
        """A stand-in for the control plane's upload slots: local, under ``/uploads/{name}``."""
        wanted = UploadRequest.model_validate(await request.json())
        slot = UploadSlot(
            storage_key=f"bots/{self.bot_id}/{wanted.name}",
            url=f"{self.url}/uploads/{wanted.name}",
            headers={"Content-Type": wanted.content_type},
            agent_auth=True,
            expires_at=datetime.now(UTC) + timedelta(minutes=15),
        )
        return web.json_response(slot.model_dump(mode="json"))

    async def _upload(self, request: web.Request) -> web.Response:
        """A stand-in for local artifact storage: keeps the bytes and headers it was sent."""
        self.uploads[request.match_info["name"]] = (await request.read(), dict(request.headers))
        return web.Response(status=200)

    async def _handle(self, request: web.Request) -> web.WebSocketResponse:
        if request.match_info["bot_id"] != self.bot_id:
            raise web.HTTPNotFound()
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            raise web.HTTPUnauthorized()
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._ws = ws
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                frame = parse_agent_frame(message.data)
            except ValueError:
                self.rejected += 1
                continue
            if frame.type == "register":
                self.registers.append(frame)
                # As the control plane does after every register: feed the stream from here.
                await ws.send_str(StreamFrom(after=frame.stream_seq).model_dump_json())
            elif frame.type == "stream_event":
                self.stream_events.append(frame.item)
            elif frame.type == "stream_batch":
                pass
            elif frame.type == "stream_end":
                # The one acked stream frame: the agent exits once it has the ack.
                self.stream_ends += 1
                if self.ack:
                    await ws.send_str(Ack(ref_id=frame.id).model_dump_json())
            elif frame.type == "heartbeat":
                self.heartbeats += 1
            elif frame.type == "ack":
                self.acked_commands.append(frame.ref_id)
            else:
                if frame.id in self.stored:
                    self.duplicates += 1
                else:
                    self.stored[frame.id] = frame
                    self.order.append(frame.id)
                    if frame.type == "command_result":
                        self.results[frame.ref_id] = frame
                if self.ack:
                    await ws.send_str(Ack(ref_id=frame.id).model_dump_json())
            self.changed.set()
        self.changed.set()
        return ws
