"""Action prompts: versions per name, listing, and the bot's prompt resolution chain
(bot's version → workspace default → system prompt), as the control plane's detection worker
applies it; the prompt never goes into the config a bot is launched with."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from pydantic import ValidationError

from agent.contracts.bot_config import BotConfig
from control_plane.action_prompts.service import SYSTEM_PROMPT, resolve
from control_plane.bots.config_builder import CONFIG_BUILDER
from control_plane.db.engine import DB
from control_plane.launchers.memory import MemoryLauncher
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


async def test_the_prompt_resolves_bot_then_workspace_then_system(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    assert owner.workspace_id is not None
    workspace_id = owner.workspace_id
    bot_prompt = await _create(client, owner, "bot", "bot instructions")
    default = await _create(client, owner, "default", "workspace instructions")
    other = await tenants.workspace("Other")
    foreign = await _create(client, other, "foreign", "not yours")

    async def resolved(prompt_version_id: object) -> object:
        version = None if prompt_version_id is None else str(prompt_version_id)
        async with client.app[DB].reads() as session:
            return await resolve(session, workspace_id, version)

    assert await resolved(None) == SYSTEM_PROMPT
    assert await resolved(foreign["id"]) == SYSTEM_PROMPT
    chosen = await resolved(bot_prompt["id"])
    assert getattr(chosen, "instructions", None) == "bot instructions"

    await client.patch(
        f"/api/v1/workspaces/{owner.workspace_id}",
        json={"settings": {"default_prompt_version_id": default["id"]}},
        headers=owner.headers,
    )
    fallback = await resolved(None)
    assert getattr(fallback, "id", None) == default["id"]
    assert getattr(await resolved(bot_prompt["id"]), "id", None) == bot_prompt["id"]


async def test_a_bot_with_actions_is_launched_without_a_prompt(
    client: Client, owner: Caller, launcher: MemoryLauncher
) -> None:
    # Detection runs in the control plane; a prompt in the bot's config would be dead weight
    # an older agent still accepts (and a newer one refuses: the contract forbids extras).
    prompt = await _create(client, owner, "mine", "look for tasks")
    steps = [step.name for step in client.app[CONFIG_BUILDER].transaction_steps]
    assert "action_prompt" not in steps
    response = await client.post(
        "/api/v1/bots",
        json={
            "platform": "google_meet",
            "native_meeting_id": "abc-defg-hij",
            "enable_actions": True,
            "prompt_version_id": prompt["id"],
        },
        headers=owner.headers,
    )
    assert response.status == 201, await response.text()
    for _ in range(400):
        if launcher.launches:
            break
        await asyncio.sleep(0.01)
    config = launcher.launches[0]
    assert config.settings.enable_actions and config.settings.prompt_version_id == prompt["id"]
    sent = config.model_dump(mode="json")
    assert "action_prompt" not in sent
    with pytest.raises(ValidationError):
        BotConfig.model_validate({**sent, "action_prompt": {"id": "x", "instructions": "y"}})
