"""PATCH of a launched bot through a real agent link (a scripted agent): only the changed
fields travel as a typed ``update_settings``, the change is stored only after the agent
confirmed, and every refusal (setting_not_live naming the field, bot leaving, no agent, no
answer) leaves the stored settings as they were. The real agent's side is in
tests/agent/test_control_plane_e2e.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent.contracts.bot_config import BotSettings, CaptureMode
from agent.contracts.link import CommandErrorCode, SettingsChange, UpdateSettingsCommand
from agent.contracts.status import BotStatus
from tests.plugins.agent_link import Client, ConnectAgent, LaunchBot, LaunchedBot
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api


async def _settings(client: Client, owner: Caller, bot: LaunchedBot) -> dict[str, Any]:
    response = await client.get(f"/api/v1/bots/{bot.bot_id}", headers=owner.headers)
    assert response.status == 200
    settings: dict[str, Any] = (await response.json())["settings"]
    return settings


async def test_a_launched_bot_gets_only_the_changed_fields_and_stores_them_once_confirmed(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.REQUESTED, settings=BotSettings(bot_name="Notes"))
    agent = await connect_agent(bot)
    await agent.register()
    url = f"/api/v1/bots/{bot.bot_id}"
    body = {"bot_name": "Notes", "language": "en", "recording_enabled": True}
    call = asyncio.ensure_future(client.patch(url, json=body, headers=owner.headers))
    command = await agent.next_command()
    # bot_name is unchanged, so only language and recording_enabled travel.
    assert command.command == UpdateSettingsCommand(
        changes=SettingsChange(language="en", recording_enabled=True)
    )
    assert not call.done()  # the API waits for the agent before it stores anything
    assert (await _settings(client, owner, bot))["language"] is None
    await agent.answer(command, result={"settings": {}})
    response = await call
    assert response.status == 200, await response.text()
    record = await response.json()
    assert record["settings"]["language"] == "en"
    assert record["settings"]["recording_enabled"] is True
    stored = await _settings(client, owner, bot)
    assert (stored["language"], stored["recording_enabled"]) == ("en", True)

    # Nothing changed: nothing is sent, the record comes back as it is.
    response = await client.patch(url, json={"language": "en"}, headers=owner.headers)
    assert response.status == 200
    assert agent.commands.empty()


async def test_a_field_that_cannot_change_live_is_409_naming_it_and_nothing_is_stored(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.REQUESTED)
    agent = await connect_agent(bot)
    await agent.register()
    url = f"/api/v1/bots/{bot.bot_id}"
    before = await _settings(client, owner, bot)
    # Video goes only into a recording (422 video_needs_recording otherwise, issue 35).
    body = {
        "bot_name": "Renamed",
        "language": "en",
        "recording_enabled": True,
        "capture_modes": ["audio", "video"],
    }
    call = asyncio.ensure_future(client.patch(url, json=body, headers=owner.headers))
    command = await agent.next_command()
    assert command.command == UpdateSettingsCommand(
        changes=SettingsChange(
            bot_name="Renamed",
            language="en",
            recording_enabled=True,
            capture_modes=(CaptureMode.AUDIO, CaptureMode.VIDEO),
        )
    )
    await agent.answer(
        command,
        ok=False,
        error=CommandErrorCode.SETTING_NOT_LIVE,
        field="bot_name",
        detail="no platform lets a bot rename itself in a meeting",
    )
    response = await call
    assert response.status == 409
    problem = await response.json()
    assert problem["code"] == "setting_not_live"
    assert problem["type"] == "/errors/setting_not_live"
    assert problem["errors"][0]["loc"] == ["body", "bot_name"]
    assert problem["errors"][0]["type"] == "setting_not_live"
    assert "rename" in problem["detail"]
    assert await _settings(client, owner, bot) == before  # all or nothing

    # A bot that is leaving refuses every change: 409 bot_not_updatable, nothing stored.
    call = asyncio.ensure_future(client.patch(url, json={"language": "en"}, headers=owner.headers))
    await agent.answer(await agent.next_command(), ok=False, error=CommandErrorCode.BOT_NOT_ACTIVE)
    response = await call
    assert (response.status, (await response.json())["code"]) == (409, "bot_not_updatable")
    # Another refusal: 502, nothing stored.
    call = asyncio.ensure_future(client.patch(url, json={"language": "en"}, headers=owner.headers))
    await agent.answer(
        await agent.next_command(), ok=False, error=CommandErrorCode.INVALID_ARGUMENTS
    )
    response = await call
    assert (response.status, (await response.json())["code"]) == (502, "agent_command_failed")
    assert await _settings(client, owner, bot) == before

    # No answer in time: 504; no agent at all: 503. Nothing stored either way.
    response = await client.patch(url, json={"language": "en"}, headers=owner.headers)
    assert (response.status, (await response.json())["code"]) == (504, "agent_timeout")
    await agent.close()
    await asyncio.sleep(0.05)
    response = await client.patch(url, json={"language": "en"}, headers=owner.headers)
    assert (response.status, (await response.json())["code"]) == (503, "agent_unavailable")
    assert await _settings(client, owner, bot) == before


async def test_part_1_still_refuses_a_bot_past_requested(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    await agent.register()
    response = await client.patch(
        f"/api/v1/bots/{bot.bot_id}", json={"language": "en"}, headers=owner.headers
    )
    assert (response.status, (await response.json())["code"]) == (409, "bot_not_updatable")
    assert agent.commands.empty()

    document = await (await client.get("/api/v1/openapi.json")).json()
    operation = document["paths"]["/api/v1/bots/{bot_id}"]["patch"]
    for status in ("409", "503", "504"):
        assert status in operation["responses"]
    assert "setting_not_live" in operation["description"]
