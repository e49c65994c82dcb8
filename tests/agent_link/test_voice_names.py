"""A voice the bot lacks is the caller's to change: 422 ``voice_not_available`` (issue 35).

The agent's synthesizer knows its voices (the packaged Piper voice answers to ``joe`` and
``en_US-joe-medium``); the real agent refuses another name with ``invalid_arguments`` on the
field ``voice`` (tests/agent/test_meeting.py). Here a scripted agent answers exactly that, with
the real synthesizer's own words, and the API turns it into 422 naming ``voice``; any other
``invalid_arguments`` stays 502 ``agent_command_failed``.
"""

from __future__ import annotations

import asyncio

import pytest

from agent.contracts.link import CommandErrorCode, SpeakCommand
from agent.contracts.status import BotStatus
from agent.voice.piper_tts import PiperSynthesizer
from agent.voice.synthesis import VoiceNotAvailable
from tests.plugins.agent_link import Client, ConnectAgent, LaunchBot
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api


def _piper_refusal(voice: str) -> str:
    with pytest.raises(VoiceNotAvailable) as caught:
        PiperSynthesizer().check_voice(voice)
    return str(caught.value)


async def test_an_unknown_voice_is_422_naming_the_field(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    url = f"/api/v1/bots/{bot.bot_id}/speak"

    call = asyncio.ensure_future(
        client.post(url, json={"text": "hi", "voice": "nobody"}, headers=owner.headers)
    )
    command = await agent.next_command()
    assert isinstance(command.command, SpeakCommand) and command.command.voice == "nobody"
    detail = _piper_refusal("nobody")
    await agent.answer(
        command, ok=False, error=CommandErrorCode.INVALID_ARGUMENTS, field="voice", detail=detail
    )
    response = await call
    assert response.status == 422
    problem = await response.json()
    assert (problem["code"], problem["detail"]) == ("voice_not_available", detail)
    assert problem["errors"][0]["loc"] == ["body", "voice"]

    # Another argument the agent refuses is no voice: still the agent's failure.
    call = asyncio.ensure_future(client.post(url, json={"text": "hi"}, headers=owner.headers))
    await agent.answer(
        await agent.next_command(), ok=False, error=CommandErrorCode.INVALID_ARGUMENTS, field="text"
    )
    response = await call
    assert (response.status, (await response.json())["code"]) == (502, "agent_command_failed")
