"""Action prompts: versions per name, listing, and the bot's prompt resolution chain
(bot's version → workspace default → system prompt), as the config builder's ``action_prompt``
step applies it."""

from __future__ import annotations

import uuid

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from agent.contracts.bot_config import BotConfig, BotSettings, Platform
from control_plane.action_prompts.service import SYSTEM_PROMPT, prompt_step
from control_plane.bots.config_builder import CONFIG_BUILDER
from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from tests.plugins.api_app import Caller, Tenants

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]


async def _create(client: Client, caller: Caller, name: str, text: str) -> dict[str, object]:
    response = await client.post(
        "/api/v1/action-prompts", json={"name": name, "instructions": text}, headers=caller.headers
    )
    assert response.status == 201, await response.text()
    body: dict[str, object] = await response.json()
    return body


async def test_same_name_makes_next_version_and_list_is_per_workspace(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    first = await _create(client, owner, "standup", "v1")
    second = await _create(client, owner, "standup", "v2")
    other_name = await _create(client, owner, "retro", "r1")
    assert (first["version"], second["version"], other_name["version"]) == (1, 2, 1)
    assert first["id"] != second["id"] and first["model"] is None
    with_model = await client.post(
        "/api/v1/action-prompts",
        json={"name": "standup", "instructions": "v3", "model": "qwen2.5-coder-0.5b-instruct"},
        headers=owner.headers,
    )
    assert (await with_model.json())["model"] == "qwen2.5-coder-0.5b-instruct"

    listed = await (await client.get("/api/v1/action-prompts", headers=owner.headers)).json()
    assert len(listed) == 4
    assert {(p["name"], p["version"]) for p in listed} == {
        ("standup", 1),
        ("standup", 2),
        ("standup", 3),
        ("retro", 1),
    }
    other = await tenants.workspace("Other")
    assert await (await client.get("/api/v1/action-prompts", headers=other.headers)).json() == []
    theirs = await _create(client, other, "standup", "theirs")
    assert theirs["version"] == 1

    typo = await client.post(
        "/api/v1/action-prompts", json={"name": "x", "instruction": "y"}, headers=owner.headers
    )
    assert typo.status == 422


async def test_prompt_step_resolves_bot_then_workspace_then_system(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    assert owner.workspace_id is not None
    bot_prompt = await _create(client, owner, "bot", "bot instructions")
    default = await _create(client, owner, "default", "workspace instructions")
    other = await tenants.workspace("Other")
    foreign = await _create(client, other, "foreign", "not yours")
    # The app lists the step; the other steps need a stored meeting, so call ours alone.
    steps = client.app[CONFIG_BUILDER].transaction_steps
    assert [step.run for step in steps if step.name == "action_prompt"] == [prompt_step]
    meeting = Meeting(workspace_id=owner.workspace_id)

    async def resolved(prompt_version_id: object, *, enable_actions: bool = True) -> object:
        config = BotConfig(
            bot_id=uuid.uuid4(),
            meeting_id=1,
            platform=Platform.GOOGLE_MEET,
            meeting_url="https://meet.google.com/abc-defg-hij",
            native_meeting_id="abc-defg-hij",
            settings=BotSettings(
                enable_actions=enable_actions,
                prompt_version_id=None if prompt_version_id is None else str(prompt_version_id),
            ),
        )
        async with client.app[DB].sessions() as session:
            return (await prompt_step(session, meeting, config)).action_prompt

    assert await resolved(None) == SYSTEM_PROMPT
    assert await resolved(foreign["id"]) == SYSTEM_PROMPT
    chosen = await resolved(bot_prompt["id"])
    assert getattr(chosen, "instructions", None) == "bot instructions"
    assert await resolved(bot_prompt["id"], enable_actions=False) is None

    await client.patch(
        f"/api/v1/workspaces/{owner.workspace_id}",
        json={"settings": {"default_prompt_version_id": default["id"]}},
        headers=owner.headers,
    )
    fallback = await resolved(None)
    assert getattr(fallback, "id", None) == default["id"]
    assert getattr(await resolved(bot_prompt["id"]), "id", None) == bot_prompt["id"]
