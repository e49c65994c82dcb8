"""The agent link against a real WebSocket peer: register first, exactly-once delivery by id
across a control-plane restart, commands acked and handed over once, backoff reconnects."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.contracts.link import (
    ChatCommand,
    Command,
    CommandErrorCode,
    ParticipantsEvent,
    Register,
    StatusEvent,
)
from agent.contracts.status import BotStatus
from agent.link.client import LinkClient, LinkTiming, agent_link_url
from agent.link.outbox import Outbox
from tests.agent.link_peer import LinkPeer

pytestmark = pytest.mark.api

TOKEN = "agent-token-for-tests"


@pytest.fixture
async def peer() -> AsyncIterator[LinkPeer]:
    server = LinkPeer(str(uuid.uuid4()), TOKEN)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def make_client(peer: LinkPeer, outbox: Outbox) -> LinkClient:
    return LinkClient(
        agent_link_url(peer.url, peer.bot_id),
        TOKEN,
        outbox,
        register=lambda: Register(agent_version="t"),
        timing=LinkTiming(heartbeat_interval=0.2, reconnect_min=0.05, reconnect_max=0.2),
    )


def test_link_url_follows_the_control_plane_scheme() -> None:
    assert agent_link_url("http://cp:8080/", "b") == "ws://cp:8080/internal/v1/agents/b"
    assert agent_link_url("https://cp", "b") == "wss://cp/internal/v1/agents/b"


async def test_outbox_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "outbox.sqlite3"
    first = Outbox(path)
    await first.put("a", "{}")
    await first.put("b", "{}")
    await first.put("a", "{}")  # same id: kept once
    first.close()
    again = Outbox(path)
    try:
        assert [i.frame_id for i in await again.pending()] == ["a", "b"]
        assert await again.ack("a")
        assert not await again.ack("a")
        assert await again.count() == 1
    finally:
        again.close()


async def test_register_comes_first_then_events_are_acked_and_heartbeats_flow(
    peer: LinkPeer, tmp_path: Path
) -> None:
    outbox = Outbox(tmp_path / "o.sqlite3")
    client = make_client(peer, outbox)
    await client.send(StatusEvent(status=BotStatus.JOINING, status_reason="join_started"))
    client.start()
    try:
        await client.send(StatusEvent(status=BotStatus.ACTIVE, status_reason="joined"))
        assert await client.drain(5.0)
        await peer.wait_for(lambda: peer.heartbeats >= 2)
        assert len(peer.registers) == 1
        statuses = [e.status for e in peer.events_of("status")]
        assert statuses == [BotStatus.JOINING, BotStatus.ACTIVE]
        assert await outbox.count() == 0
    finally:
        await client.close()
        outbox.close()


async def test_nothing_is_lost_or_doubled_across_a_control_plane_restart(
    peer: LinkPeer, tmp_path: Path
) -> None:
    outbox = Outbox(tmp_path / "o.sqlite3")
    client = make_client(peer, outbox)
    client.start()
    sent: list[str] = []
    try:
        for n in range(5):
            frame = ParticipantsEvent(participants=[f"p{n}"], joined=[f"p{n}"])
            sent.append(frame.id)
            await client.send(frame)
        assert await client.drain(5.0)
        await peer.stop()  # the control plane goes away
        for n in range(5, 10):
            frame = ParticipantsEvent(participants=[f"p{n}"], joined=[f"p{n}"])
            sent.append(frame.id)
            await client.send(frame)
        await asyncio.sleep(0.5)
        assert await outbox.count() == 5
        await peer.start(peer.port)  # and comes back on the same address
        assert await client.drain(10.0)
        assert peer.order == sent
        assert peer.duplicates == 0
        assert client.connections >= 2
        assert len(peer.registers) >= 2
    finally:
        await client.close()
        outbox.close()


async def test_unacked_frames_are_resent_after_reconnect_and_stored_once(
    peer: LinkPeer, tmp_path: Path
) -> None:
    peer.ack = False  # the control plane stored them but its acks never arrived
    outbox = Outbox(tmp_path / "o.sqlite3")
    client = make_client(peer, outbox)
    client.start()
    try:
        frame = StatusEvent(status=BotStatus.JOINING)
        await client.send(frame)
        await peer.wait_for(lambda: frame.id in peer.stored)
        await peer.stop()
        peer.ack = True
        await peer.start(peer.port)
        assert await client.drain(10.0)
        assert peer.order == [frame.id]
        assert peer.duplicates == 1
    finally:
        await client.close()
        outbox.close()


async def test_commands_are_acked_and_handed_over_once(peer: LinkPeer, tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "o.sqlite3")
    client = make_client(peer, outbox)
    client.start()
    try:
        await asyncio.wait_for(client.connected.wait(), 5)
        await peer.wait_for(lambda: bool(peer.registers))
        command = Command(command=ChatCommand(text="hi"))
        await peer.send_command(command)
        await peer.send_command(command)  # a resend after a lost ack
        received = await asyncio.wait_for(client.commands.get(), 5)
        assert received.id == command.id
        await peer.wait_for(lambda: len(peer.acked_commands) == 2)
        assert client.commands.empty()
    finally:
        await client.close()
        outbox.close()


async def test_an_unknown_or_invalid_command_is_answered_with_a_typed_error(
    peer: LinkPeer, tmp_path: Path
) -> None:
    outbox = Outbox(tmp_path / "o.sqlite3")
    client = make_client(peer, outbox)
    client.start()
    try:
        await asyncio.wait_for(client.connected.wait(), 5)
        await peer.wait_for(lambda: bool(peer.registers))
        stamp = '"ts": "2026-01-01T00:00:00Z"'
        await peer.send_raw(
            f'{{"type": "command", "id": "c1", {stamp}, "command": {{"name": "chat", "text": ""}}}}'
        )
        await peer.send_raw(
            f'{{"type": "command", "id": "c2", {stamp}, "command": {{"name": "teleport"}}}}'
        )
        await peer.wait_for(lambda: {"c1", "c2"} <= peer.results.keys())
        invalid, unknown = peer.results["c1"], peer.results["c2"]
        assert (invalid.ok, invalid.error, invalid.field) == (
            False,
            CommandErrorCode.INVALID_ARGUMENTS,
            "text",
        )
        assert (unknown.ok, unknown.error) == (False, CommandErrorCode.UNKNOWN_COMMAND)
        assert client.commands.empty()  # neither reached the bot
    finally:
        await client.close()
        outbox.close()
