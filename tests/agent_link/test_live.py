"""Live routes through a real agent link: subscribe (wait, 404, token claims, 501 refresh),
participants, screenshot upload and signed download, hand, avatar, chat, and the error
rules (404 not active, 422 capability, 503 no link, 504 no answer)."""

from __future__ import annotations

import asyncio
import struct
import uuid
import zlib
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import jwt
import pytest

from agent.contracts.link import (
    AgentCommand,
    AvatarCommand,
    ChatCommand,
    ChatMessageEvent,
    CommandErrorCode,
    HandCommand,
    ParticipantsEvent,
    ScreenShareCommand,
    ScreenshotCommand,
    StopScreenShareCommand,
)
from agent.contracts.status import BotStatus
from control_plane.agent_hub.keys import STREAM_SIGNER
from control_plane.agent_hub.stream_tokens import verify_stream_token
from tests.agent_link.peer import ScriptedAgent
from tests.plugins.agent_link import Client, ConnectAgent, LaunchBot
from tests.plugins.api_app import Caller, Tenants

pytestmark = pytest.mark.api


def _png(width: int, height: int) -> bytes:
    """A valid grey PNG of the given size."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _path(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


async def test_subscribe_waits_for_registration_and_returns_a_stream_token(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.JOINING)
    agent = await connect_agent(bot)
    pending = asyncio.ensure_future(
        client.post(f"/api/v1/bots/{bot.bot_id}/subscribe", headers=owner.headers)
    )
    await asyncio.sleep(0.1)
    await agent.register()
    response = await pending
    assert response.status == 200
    body = await response.json()
    # The stream is the control plane's own (public_url), whichever replica holds the link.
    assert body["url"] == f"http://127.0.0.1:1/api/v1/bots/{bot.bot_id}/stream"
    public_key = client.app[STREAM_SIGNER].public_key_pem
    claims = verify_stream_token(body["token"], public_key, bot.bot_id)
    assert claims["aud"] == "bot-stream"
    expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    assert expires == datetime.fromtimestamp(int(str(claims["exp"])), UTC)
    assert abs(expires - datetime.now(UTC) - timedelta(minutes=15)) < timedelta(seconds=5)
    with pytest.raises(jwt.InvalidTokenError):
        verify_stream_token(body["token"], public_key, uuid.uuid4())


async def test_subscribe_is_404_without_registration_or_when_finished_and_refresh_is_501(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    silent = await launch_bot(BotStatus.REQUESTED)
    response = await client.post(f"/api/v1/bots/{silent.bot_id}/subscribe", headers=owner.headers)
    assert response.status == 404
    assert (await response.json())["code"] == "bot_not_active"

    done = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(done)
    await agent.register()
    assert (
        await client.post(f"/api/v1/bots/{done.bot_id}/subscribe", headers=owner.headers)
    ).status == 200
    finished = await launch_bot(BotStatus.COMPLETED)
    response = await client.post(f"/api/v1/bots/{finished.bot_id}/subscribe", headers=owner.headers)
    assert response.status == 404

    response = await client.post(
        f"/api/v1/bots/{done.bot_id}/subscribe/refresh", headers=owner.headers
    )
    assert response.status == 501
    assert (await response.json())["code"] == "not_implemented"


async def test_participants_follow_the_agent_and_other_workspaces_get_404(
    client: Client,
    owner: Caller,
    tenants: Tenants,
    launch_bot: LaunchBot,
    connect_agent: ConnectAgent,
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    path = f"/api/v1/bots/{bot.bot_id}/participants"
    response = await client.get(path, headers=owner.headers)
    assert await response.json() == {"bot_id": str(bot.bot_id), "participants": []}
    agent = await connect_agent(bot)
    await agent.send(ParticipantsEvent(participants=["Ada", "Linus"], joined=["Ada", "Linus"]))
    response = await client.get(path, headers=owner.headers)
    assert (await response.json())["participants"] == ["Ada", "Linus"]

    stranger = await tenants.workspace("Other")
    response = await client.get(path, headers=stranger.headers)
    assert response.status == 404
    assert (await response.json())["code"] == "bot_not_found"


async def _screenshot_agent(client: Client, agent: ScriptedAgent, png: bytes) -> None:
    """Answer one screenshot command the way the agent does: upload, then report."""
    command = await agent.next_command()
    assert isinstance(command.command, ScreenshotCommand)
    slot = command.command.upload
    assert slot is not None
    headers = dict(slot.headers)
    if slot.agent_auth:
        headers["Authorization"] = f"Bearer {agent.token}"
    upload = await client.put(_path(slot.url), data=png, headers=headers)
    assert upload.status == 201
    await agent.answer(
        command,
        result={
            "artifact_id": command.command.artifact_id,
            "storage_key": slot.storage_key,
            "content_type": "image/png",
            "size_bytes": len(png),
            "width": 64,
            "height": 48,
            "captured_at": datetime.now(UTC).isoformat(),
        },
    )


async def test_screenshot_uploads_a_png_and_answers_a_signed_url_that_downloads_it(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    png = _png(64, 48)
    answering = asyncio.ensure_future(_screenshot_agent(client, agent, png))
    response = await client.post(f"/api/v1/bots/{bot.bot_id}/screenshot", headers=owner.headers)
    await answering
    assert response.status == 200
    body = await response.json()
    assert (body["width"], body["height"]) == (64, 48)
    expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    assert timedelta(minutes=59) < expires - datetime.now(UTC) <= timedelta(hours=1)

    download = await client.get(_path(body["url"]))
    assert download.status == 200
    assert await download.read() == png

    tampered = _path(body["url"]).replace("signature=", "signature=0")
    response = await client.get(tampered)
    assert response.status == 403
    assert (await response.json())["code"] == "invalid_signature"

    record = await client.get(f"/api/v1/meetings/{bot.meeting_id}", headers=owner.headers)
    assert record.status == 200
    screenshots = (await record.json())["screenshots"]
    assert len(screenshots) == 1
    assert (await client.get(_path(screenshots[0]["url"]))).status == 200


async def test_live_commands_carry_their_arguments_and_answer_202(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    base = f"/api/v1/bots/{bot.bot_id}"
    cases: list[tuple[str, str, dict[str, str] | None, AgentCommand]] = [
        ("POST", "/hand", None, HandCommand(raised=True)),
        ("DELETE", "/hand", None, HandCommand(raised=False)),
        (
            "PUT",
            "/avatar",
            {"image_url": "https://example.org/a.png"},
            AvatarCommand(image_url="https://example.org/a.png"),
        ),
        ("DELETE", "/avatar", None, AvatarCommand(image_url=None)),
        ("POST", "/chat", {"text": "hello all"}, ChatCommand(text="hello all")),
    ]
    for method, suffix, body, expected in cases:
        call = asyncio.ensure_future(
            client.request(method, base + suffix, json=body, headers=owner.headers)
        )
        command = await agent.next_command()
        assert command.command == expected
        await agent.answer(command)
        response = await call
        assert response.status == 202, (method, suffix)
        assert await response.json() == {
            "bot_id": str(bot.bot_id),
            "command": expected.name.value,
        }


async def test_agent_errors_map_to_422_and_404_and_silence_to_504(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    path = f"/api/v1/bots/{bot.bot_id}/hand"
    for error, status, code in (
        (CommandErrorCode.CAPABILITY_NOT_SUPPORTED, 422, "capability_not_supported"),
        (CommandErrorCode.BOT_NOT_ACTIVE, 404, "bot_not_active"),
        (CommandErrorCode.BROWSER_ERROR, 502, "agent_command_failed"),
        (CommandErrorCode.UNKNOWN_COMMAND, 502, "agent_command_failed"),
    ):
        call = asyncio.ensure_future(client.post(path, headers=owner.headers))
        await agent.answer(await agent.next_command(), ok=False, error=error)
        response = await call
        assert response.status == status
        assert (await response.json())["code"] == code

    response = await client.post(path, headers=owner.headers)  # the agent never answers
    assert response.status == 504
    assert (await response.json())["code"] == "agent_timeout"

    await agent.close()
    await asyncio.sleep(0.05)
    response = await client.post(path, headers=owner.headers)
    assert response.status == 503
    assert (await response.json())["code"] == "agent_unavailable"
    assert response.headers["Retry-After"] == "5"


async def test_live_commands_need_an_active_bot(
    client: Client, owner: Caller, launch_bot: LaunchBot
) -> None:
    for status in (BotStatus.REQUESTED, BotStatus.AWAITING_ADMISSION, BotStatus.COMPLETED):
        bot = await launch_bot(status)
        base = f"/api/v1/bots/{bot.bot_id}"
        for method, suffix in (
            ("POST", "/screenshot"),
            ("DELETE", "/hand"),
            ("POST", "/hand"),
            ("DELETE", "/avatar"),
        ):
            response = await client.request(method, base + suffix, headers=owner.headers)
            assert response.status == 404, (status, method, suffix)
            assert (await response.json())["code"] == "bot_not_active"
    response = await client.post(f"/api/v1/bots/{uuid.uuid4()}/screenshot", headers=owner.headers)
    assert (await response.json())["code"] == "bot_not_found"


async def test_chat_text_limits_and_reading_the_chat(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    base = f"/api/v1/bots/{bot.bot_id}/chat"
    for text in ("", "x" * 4097):
        response = await client.post(base, json={"text": text}, headers=owner.headers)
        assert response.status == 422
    response = await client.post(base, json={"text": "hi", "extra": 1}, headers=owner.headers)
    assert response.status == 422

    agent = await connect_agent(bot)
    now = datetime.now(UTC)
    await agent.send(ChatMessageEvent(message_id="a", sender="Ada", text="first", timestamp=now))
    await agent.send(
        ChatMessageEvent(
            message_id="b",
            sender="meetbot",
            text="second",
            timestamp=now + timedelta(seconds=1),
            from_bot=True,
        )
    )
    response = await client.get(base, headers=owner.headers)
    messages = (await response.json())["messages"]
    assert [(m["id"], m["sender"], m["text"], m["from_bot"]) for m in messages] == [
        ("a", "Ada", "first", False),
        ("b", "meetbot", "second", True),
    ]
    not_joined = await launch_bot(BotStatus.REQUESTED)
    response = await client.get(f"/api/v1/bots/{not_joined.bot_id}/chat", headers=owner.headers)
    assert response.status == 404


async def test_screen_share_answers_capability_not_supported(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    base = f"/api/v1/bots/{bot.bot_id}"
    cases: list[tuple[str, str, dict[str, str] | None, AgentCommand]] = [
        (
            "POST",
            "/screen",
            {"url": "https://example.org"},
            ScreenShareCommand(url="https://example.org"),
        ),
        ("DELETE", "/screen", None, StopScreenShareCommand()),
    ]
    for method, suffix, body, expected in cases:
        call = asyncio.ensure_future(
            client.request(method, base + suffix, json=body, headers=owner.headers)
        )
        command = await agent.next_command()
        assert command.command == expected  # the typed command reached the agent
        await agent.answer(command, ok=False, error=CommandErrorCode.CAPABILITY_NOT_SUPPORTED)
        response = await call
        assert response.status == 422, (method, suffix)
        assert (await response.json())["code"] == "capability_not_supported"
    response = await client.post(
        base + "/screen",
        json={"url": "https://example.org", "image_url": "https://example.org/a.png"},
        headers=owner.headers,
    )
    assert response.status == 422  # exactly one source
    assert agent.commands.empty()  # none of the invalid requests reached the agent
    document = await (await client.get("/api/v1/openapi.json")).json()
    for path, method in (("/api/v1/bots/{bot_id}/screen", "delete"),):
        operation = document["paths"][path][method]
        assert "422" in operation["responses"]
        assert "capability_not_supported" in operation["description"]
