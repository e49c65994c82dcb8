"""Speech routes and the voice-agent switch through a real agent link (a scripted agent).

``POST …/speak`` sends a typed ``speak`` with a fresh ``speech_id`` (and the caller's
``interrupt``) and answers 202 with it; ``DELETE …/speak`` sends ``stop_speaking``; bad bodies
and ``audio_url`` s the webhook address rules refuse never reach the agent. With
``voice_agent_enabled`` false, speak, stop, chat and screen share answer 409
``voice_agent_disabled`` without reaching the agent; a PATCH while the bot is ``requested``
switches it; an agent's own ``voice_agent_disabled`` refusal is 409 too. The real agent's side
is tests/agent/test_voice_e2e.py.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from sqlalchemy import update

from agent.contracts.bot_config import BotSettings
from agent.contracts.link import (
    CommandErrorCode,
    SettingsChange,
    SpeakCommand,
    StopSpeakingCommand,
    UpdateSettingsCommand,
)
from agent.contracts.status import BotStatus
from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from tests.plugins.agent_link import Client, ConnectAgent, LaunchBot, LaunchedBot
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api


async def _activate(client: Client, bot: LaunchedBot) -> None:
    async with client.app[DB].sessions.begin() as session:
        await session.execute(
            update(Meeting).where(Meeting.id == bot.meeting_id).values(status="active")
        )


async def test_speak_queues_with_a_speech_id_and_delete_interrupts(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    base = f"/api/v1/bots/{bot.bot_id}"

    call = asyncio.ensure_future(
        client.post(
            base + "/speak",
            json={"text": "Hello there.", "voice": "joe", "interrupt": True},
            headers=owner.headers,
        )
    )
    command = await agent.next_command()
    sent = command.command
    assert isinstance(sent, SpeakCommand)
    assert (sent.text, sent.voice, sent.audio_url, sent.interrupt) == (
        "Hello there.",
        "joe",
        None,
        True,
    )
    assert sent.speech_id is not None
    uuid.UUID(sent.speech_id)
    await agent.answer(command, result={"speech_id": sent.speech_id, "ahead": 1})
    response = await call
    assert response.status == 202, await response.text()
    assert await response.json() == {
        "bot_id": str(bot.bot_id),
        "command": "speak",
        "speech_id": sent.speech_id,
        "ahead": 1,
    }

    call = asyncio.ensure_future(client.delete(base + "/speak", headers=owner.headers))
    command = await agent.next_command()
    assert command.command == StopSpeakingCommand()
    await agent.answer(command, result={"stopped": 2})
    response = await call
    assert response.status == 202
    assert await response.json() == {"bot_id": str(bot.bot_id), "command": "stop_speaking"}


async def test_bad_speak_bodies_and_refused_audio_urls_never_reach_the_agent(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    url = f"/api/v1/bots/{bot.bot_id}/speak"
    for body in (
        {"text": "hi", "audio_url": "https://example.org/a.mp3"},
        {"voice": "joe"},
        {"text": ""},
        {"text": "x" * 4097},
        {"text": "hi", "interrupt": "soon"},
    ):
        response = await client.post(url, json=body, headers=owner.headers)
        assert response.status == 422, body
        assert (await response.json())["code"] == "validation_error"
    for audio_url in (
        "http://127.0.0.1:8088/a.wav",  # plain http, and loopback
        "https://127.0.0.1/a.wav",
        "https://10.1.2.3/a.wav",
        "https://[::ffff:10.0.0.1]/a.wav",
        "https://user:pw@example.org/a.wav",
        "file:///etc/passwd",
        "https://2130706433/a.wav",
    ):
        response = await client.post(url, json={"audio_url": audio_url}, headers=owner.headers)
        assert response.status == 422, audio_url
        problem = await response.json()
        assert problem["code"] == "url_not_allowed", (audio_url, problem)
        assert problem["errors"][0]["loc"] == ["body", "audio_url"]
    assert agent.commands.empty()


async def _refused_without_the_agent(
    client: Client, owner: Caller, bot: LaunchedBot, agent: Any
) -> None:
    base = f"/api/v1/bots/{bot.bot_id}"
    calls = [
        ("POST", "/speak", {"text": "hi"}),
        ("DELETE", "/speak", None),
        ("POST", "/chat", {"text": "hi"}),
        ("POST", "/screen", {"image_url": "https://example.org/a.png"}),
        ("DELETE", "/screen", None),
    ]
    for method, suffix, body in calls:
        response = await client.request(method, base + suffix, json=body, headers=owner.headers)
        assert response.status == 409, (method, suffix)
        assert (await response.json())["code"] == "voice_agent_disabled"
    assert agent.commands.empty()


async def test_voice_agent_disabled_closes_speak_chat_and_screen_share(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    muted = await launch_bot(BotStatus.ACTIVE, settings=BotSettings(voice_agent_enabled=False))
    agent = await connect_agent(muted)
    await _refused_without_the_agent(client, owner, muted, agent)
    # Hand and avatar are not voice: they still reach the agent.
    call = asyncio.ensure_future(
        client.post(f"/api/v1/bots/{muted.bot_id}/hand", headers=owner.headers)
    )
    command = await agent.next_command()
    await agent.answer(command, result={"raised": True})
    assert (await call).status == 202


async def test_a_patch_while_requested_switches_the_voice_off(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.REQUESTED)
    agent = await connect_agent(bot)
    await agent.register()
    call = asyncio.ensure_future(
        client.patch(
            f"/api/v1/bots/{bot.bot_id}",
            json={"voice_agent_enabled": False},
            headers=owner.headers,
        )
    )
    command = await agent.next_command()
    assert command.command == UpdateSettingsCommand(
        changes=SettingsChange(voice_agent_enabled=False)
    )
    await agent.answer(command, result={"settings": {}})
    response = await call
    assert response.status == 200, await response.text()
    assert (await response.json())["settings"]["voice_agent_enabled"] is False
    await _activate(client, bot)
    await _refused_without_the_agent(client, owner, bot, agent)


async def test_an_agent_that_finds_its_voice_off_answers_409(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    call = asyncio.ensure_future(
        client.post(f"/api/v1/bots/{bot.bot_id}/speak", json={"text": "hi"}, headers=owner.headers)
    )
    command = await agent.next_command()
    await agent.answer(command, ok=False, error=CommandErrorCode.VOICE_AGENT_DISABLED)
    response = await call
    assert response.status == 409
    assert (await response.json())["code"] == "voice_agent_disabled"


async def test_openapi_documents_the_speak_routes_as_they_answer(client: Client) -> None:
    document = await (await client.get("/api/v1/openapi.json")).json()
    post = document["paths"]["/api/v1/bots/{bot_id}/speak"]["post"]
    delete = document["paths"]["/api/v1/bots/{bot_id}/speak"]["delete"]
    assert {"202", "404", "409", "422", "502", "503", "504"} <= set(post["responses"])
    assert "capability_not_supported" not in post["description"]
    schemas = document["components"]["schemas"]
    accepted = post["responses"]["202"]["content"]["application/json"]["schema"]["$ref"]
    assert set(schemas[accepted.rsplit("/", 1)[1]]["properties"]) == {
        "bot_id",
        "command",
        "speech_id",
        "ahead",
    }
    assert "202" in delete["responses"]
    request = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert "interrupt" in schemas[request.rsplit("/", 1)[1]]["properties"]
