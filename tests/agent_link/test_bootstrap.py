"""A bot machine's bootstrap and log upload, through the real app and the machine's programs.

The exchange (``POST /internal/v1/agents/{bot_id}/bootstrap``) answers the config once, only for
its own bot and before expiry; the database keeps only the token's digest and a config without
the agent token. An agent posts the schema of the config it accepts: options it predates are
left out while unset, and refused (the bot ``failed``/``launch_failed``) when set.
``agent.bootstrap`` and ``agent.log_upload`` (what ``meetbot-agent.service``
runs on the VM) talk to the app served on a real port, and the uploaded log is listed in the
full meeting record and downloadable.
"""

from __future__ import annotations

import logging
import stat
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from pydantic import BaseModel, ConfigDict, create_model
from pytest_aiohttp import AiohttpClient, AiohttpServer
from sqlalchemy import select, update

from agent.bootstrap import BootstrapRefusedError, exchange, write_config
from agent.contracts.bootstrap import BootstrapGrant, BootstrapRequest
from agent.contracts.bot_config import BotConfig, RecordingFormat
from agent.contracts.link import ArtifactKind, ArtifactReport
from agent.contracts.wire import agent_artifacts_path, agent_bootstrap_path, bearer
from agent.log_upload import LOG_CONTENT_TYPE, upload_log
from agent.process.handed_settings import with_handed
from agent.process.settings import AgentSettings
from control_plane.agent_hub.bootstrap_tokens import BOOTSTRAP_TOKENS
from control_plane.agent_hub.keys import STORAGE
from control_plane.db.engine import DB
from control_plane.db.models.agent_link import BootstrapToken
from control_plane.db.models.bot import Meeting
from control_plane.settings import Settings
from tests.handed_settings import HANDED, SECRET, logged
from tests.plugins.agent_link import Client, LaunchBot, LaunchedBot
from tests.plugins.api_app import KEY_PREFIX, Caller
from tests.ports import free_port

pytestmark = pytest.mark.api


@pytest.fixture
def port() -> int:
    """The port the app serves on (its public URL names it, as upload slots do)."""
    return free_port()


@pytest.fixture
def settings(database_url: str, tmp_path: Path, port: int) -> Settings:
    """The agent-link tests' settings with the public URL of the served app."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        public_url=f"http://127.0.0.1:{port}",
        heartbeat_timeout_seconds=30.0,
        agent_connect_timeout_seconds=60.0,
        scheduler_interval_seconds=0.05,
        fleet_agent_settings=HANDED,
    )


@pytest.fixture
async def client(
    app: web.Application, port: int, aiohttp_server: AiohttpServer, aiohttp_client: AiohttpClient
) -> AsyncIterator[TestClient[web.Request, web.Application]]:
    """A client of the app served on ``port`` (what the machine's programs reach)."""
    server = await aiohttp_server(app, port=port)
    # The client of a served app is typed without it; it is the same app.
    served = cast("TestClient[web.Request, web.Application]", await aiohttp_client(server))
    yield served


def _base(client: Client) -> str:
    return str(client.make_url("")).rstrip("/")


async def _issue(client: Client, bot: LaunchedBot, *, now: datetime | None = None) -> str:
    # What the qemu launcher does: the config as the machine sees it buys the token. A machine's
    # config holds no agent token (its exchange mints it; this bot's was launched locally).
    machine_config = bot.config.model_copy(
        update={"control_plane_url": _base(client), "agent_token": None}
    )
    return await client.app[BOOTSTRAP_TOKENS].issue(machine_config, now=now)


async def _post_bootstrap(
    client: Client, bot_id: uuid.UUID, token: str | None
) -> tuple[int, dict[str, Any]]:
    headers = bearer(token) if token is not None else {}
    response = await client.post(agent_bootstrap_path(bot_id), headers=headers)
    return response.status, await response.json()


async def test_the_exchange_answers_the_config_once_and_only_for_its_bot(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot, other = await launch_bot(), await launch_bot()
    token = await _issue(client, bot)
    assert token.startswith("mbt_") and len(token) == 4 + 43

    status, body = await _post_bootstrap(client, bot.bot_id, None)
    assert (status, body["code"]) == (401, "invalid_bootstrap_token")
    status, body = await _post_bootstrap(client, other.bot_id, token)  # another bot's token
    assert (status, body["code"]) == (401, "invalid_bootstrap_token")
    status, body = await _post_bootstrap(client, bot.bot_id, token + "x")
    assert (status, body["code"]) == (401, "invalid_bootstrap_token")

    status, body = await _post_bootstrap(client, bot.bot_id, token)  # refusals used nothing
    assert status == 200
    assert body["bot_id"] == str(bot.bot_id)
    assert body["agent_token"] == bot.token
    assert body["control_plane_url"] == _base(client)
    assert "stream_public_key" not in body  # streams are served by the control plane now
    assert body["meeting_url"] == bot.config.meeting_url

    status, body = await _post_bootstrap(client, bot.bot_id, token)  # replay
    assert (status, body["code"]) == (409, "bootstrap_token_used")
    assert body["status"] == 409 and body["detail"]


async def test_an_expired_or_replaced_token_buys_nothing_and_only_digests_are_stored(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot()
    expired = await _issue(client, bot, now=datetime.now(UTC) - timedelta(hours=1))
    status, body = await _post_bootstrap(client, bot.bot_id, expired)
    assert (status, body["code"]) == (401, "bootstrap_token_expired")

    first = await _issue(client, bot)
    second = await _issue(client, bot)  # a relaunch replaces the machine's token
    status, body = await _post_bootstrap(client, bot.bot_id, first)
    assert (status, body["code"]) == (401, "invalid_bootstrap_token")

    async with client.app[DB].sessions() as session:
        rows = (await session.scalars(select(BootstrapToken))).all()
    assert len(rows) == 1
    assert second not in rows[0].token_digest and len(rows[0].token_digest) == 64
    assert bot.token not in rows[0].config  # the agent token is derived, never stored
    status, _ = await _post_bootstrap(client, bot.bot_id, second)
    assert status == 200


async def test_the_machine_program_writes_a_private_config_and_a_replay_is_final(
    client: Client, launch_bot: LaunchBot, tmp_path: Path
) -> None:
    bot = await launch_bot()
    grant = BootstrapGrant(
        control_plane_url=_base(client),
        bot_id=bot.bot_id,
        bootstrap_token=await _issue(client, bot),
    )
    config = await exchange(grant, wait_seconds=10)
    out = tmp_path / "run" / "bot.json"
    write_config(config, out, None)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert out.read_text() == config.model_dump_json()
    assert config.agent_token == bot.token
    with pytest.raises(BootstrapRefusedError, match="bootstrap_token_used"):
        await exchange(grant, wait_seconds=10)


async def test_the_operators_agent_settings_reach_the_agent_in_the_exchange_and_nowhere_else(
    client: Client, launch_bot: LaunchBot, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    bot = await launch_bot()
    grant = BootstrapGrant(
        control_plane_url=_base(client),
        bot_id=bot.bot_id,
        bootstrap_token=await _issue(client, bot),
    )
    async with client.app[DB].sessions() as session:  # what the token would buy, as stored
        stored = await session.scalar(select(BootstrapToken.config))
    assert stored is not None and SECRET not in stored

    config = await exchange(grant, wait_seconds=10)
    assert config.agent_settings == HANDED
    out = tmp_path / "run" / "bot.json"
    write_config(config, out, None)  # where the machine keeps it: the agent user's, 0600
    assert stat.S_IMODE(out.stat().st_mode) == 0o600

    # What ``python -m agent`` builds from it: the handed-over settings win.
    loaded = BotConfig.model_validate_json(out.read_bytes())
    host = with_handed(AgentSettings, loaded.agent_settings)
    assert (host.tts_provider, host.tts_api_key, host.log_level) == ("openai", SECRET, "DEBUG")
    assert SECRET not in logged(caplog.records)


async def test_a_config_issued_with_agent_settings_is_stored_without_them(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot()
    carrying = bot.config.model_copy(update={"agent_settings": HANDED})  # a careless launcher
    token = await _issue(client, LaunchedBot(bot.meeting_id, bot.bot_id, carrying))
    async with client.app[DB].sessions() as session:
        stored = await session.scalar(select(BootstrapToken.config))
    assert stored is not None and SECRET not in stored
    status, body = await _post_bootstrap(client, bot.bot_id, token)
    assert (status, body["agent_settings"]) == (200, HANDED)  # the exchange's own


async def test_a_zoom_obf_token_waits_sealed_and_reaches_the_machine(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot()
    obf = "obf-waiting-sealed-5d1e"
    carrying = bot.config.model_copy(update={"zoom_obf_token": obf})
    token = await _issue(client, LaunchedBot(bot.meeting_id, bot.bot_id, carrying))
    async with client.app[DB].sessions() as session:
        stored = await session.scalar(select(BootstrapToken.config))
    assert stored is not None and obf not in stored  # never in plain text
    status, body = await _post_bootstrap(client, bot.bot_id, token)
    assert (status, body["zoom_obf_token"]) == (200, obf)


async def test_an_agent_predating_handed_settings_fails_the_bot_naming_them_without_values(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot()
    older = _older_agent("agent_settings").model_json_schema()
    status, body = await _post_asking(client, bot.bot_id, await _issue(client, bot), older)
    assert (status, body["code"]) == (409, "agent_incompatible")
    assert "MEETBOT_AGENT_TTS_API_KEY" in body["detail"] and SECRET not in body["detail"]
    async with client.app[DB].sessions() as session:
        meeting = await session.get(Meeting, bot.meeting_id)
        assert meeting is not None and meeting.status_detail is not None
        assert "agent_settings" in meeting.status_detail
        assert SECRET not in meeting.status_detail


async def test_the_agent_log_is_uploaded_through_a_slot_and_listed_with_the_meeting(
    client: Client, owner: Caller, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot()
    config = bot.config.model_copy(update={"control_plane_url": _base(client)})
    log = "".join(
        f"2026-11-24T01:00:{i:02d} INFO agent.meeting.bot line {i} é\n" for i in range(50)
    )

    key = await upload_log(config, log.encode())
    assert key == f"bots/{bot.bot_id}/logs/agent.log"
    await upload_log(config, log.encode())  # a resent upload and report store one log

    response = await client.get(f"/api/v1/meetings/{bot.meeting_id}", headers=owner.headers)
    assert response.status == 200
    record = await response.json()
    assert [entry["id"] for entry in record["logs"]] == ["agent-log"]
    entry = record["logs"][0]
    assert entry["content_type"] == LOG_CONTENT_TYPE
    assert entry["size_bytes"] == len(log.encode())
    assert record["recordings"] == [] and record["screenshots"] == []
    parts = urlsplit(entry["url"])
    download = await client.get(f"{parts.path}?{parts.query}")
    assert download.status == 200
    assert (await download.read()).decode() == log


async def test_a_report_of_nothing_uploaded_or_without_the_agent_token_is_refused(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot, other = await launch_bot(), await launch_bot()
    report = ArtifactReport(
        kind=ArtifactKind.LOG,
        artifact_id="agent-log",
        storage_key=f"bots/{bot.bot_id}/logs/agent.log",
        content_type=LOG_CONTENT_TYPE,
        size_bytes=10,
    )
    path = agent_artifacts_path(bot.bot_id)
    response = await client.post(
        path, json=report.model_dump(mode="json"), headers=bearer(bot.token)
    )
    assert response.status == 422
    assert (await response.json())["code"] == "artifact_not_uploaded"
    response = await client.post(
        path, json=report.model_dump(mode="json"), headers=bearer(other.token)
    )
    assert response.status == 401
    assert (await response.json())["code"] == "invalid_agent_token"


async def test_a_log_arriving_after_the_meeting_was_purged_is_refused_and_not_kept(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot()
    async with client.app[DB].sessions.begin() as session:
        await session.execute(
            update(Meeting).where(Meeting.id == bot.meeting_id).values(redacted=True)
        )
    config = bot.config.model_copy(update={"control_plane_url": _base(client)})
    with pytest.raises(OSError, match="409"):
        await upload_log(config, b"late\n")
    assert await client.app[STORAGE].size(f"bots/{bot.bot_id}/logs/agent.log") is None


async def test_an_upload_slot_on_a_loopback_public_url_names_the_host_the_machine_came_through(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot()
    body = {"kind": "log", "name": "agent.log", "content_type": LOG_CONTENT_TYPE, "size": 3}
    headers = {**bearer(bot.token), "Host": "10.0.2.2:4321"}  # a VM on qemu's user network
    response = await client.post(
        f"/internal/v1/agents/{bot.bot_id}/uploads", json=body, headers=headers
    )
    assert response.status == 200
    slot = await response.json()
    assert slot["url"].startswith(
        f"http://10.0.2.2:4321/internal/v1/artifacts/bots/{bot.bot_id}/logs/"
    )
    assert slot["agent_auth"] is True


def _older_agent(dropped: str) -> type[BaseModel]:
    """The ``BotConfig`` of an agent built before the field ``dropped`` existed."""
    fields: dict[str, Any] = {
        name: (field.annotation, field)
        for name, field in BotConfig.model_fields.items()
        if name != dropped
    }
    return create_model("BotConfig", __config__=ConfigDict(frozen=True, extra="forbid"), **fields)


async def _post_asking(
    client: Client, bot_id: uuid.UUID, token: str, schema: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    request = BootstrapRequest(config_schema=schema, agent_version="0.0.9")
    response = await client.post(
        agent_bootstrap_path(bot_id),
        data=request.model_dump_json(),
        headers={**bearer(token), "Content-Type": "application/json"},
    )
    return response.status, await response.json()


async def _status(client: Client, bot: LaunchedBot) -> tuple[str, str | None]:
    async with client.app[DB].sessions() as session:
        meeting = await session.get(Meeting, bot.meeting_id)
        assert meeting is not None
        return meeting.status, meeting.status_reason


async def test_an_older_agent_gets_the_config_without_options_it_predates_that_are_unset(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot()
    older = _older_agent("refine_after_meeting")
    assert not bot.config.refine_after_meeting  # unset: the older agent loses nothing
    status, body = await _post_asking(
        client, bot.bot_id, await _issue(client, bot), older.model_json_schema()
    )
    assert status == 200
    assert "refine_after_meeting" not in body
    config = older.model_validate(body)  # what the older agent does with the answer
    assert config.agent_token == bot.token  # type: ignore[attr-defined]
    assert await _status(client, bot) != ("failed", "launch_failed")


async def test_an_option_the_agent_predates_fails_the_bot_with_the_option_named(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot()
    machine_config = bot.config.model_copy(
        update={
            "control_plane_url": _base(client),
            "agent_token": None,
            "refine_after_meeting": True,
        }
    )
    token = await client.app[BOOTSTRAP_TOKENS].issue(machine_config)
    older = _older_agent("refine_after_meeting").model_json_schema()

    status, body = await _post_asking(client, bot.bot_id, token, older)
    assert (status, body["code"]) == (409, "agent_incompatible")
    assert "refine_after_meeting" in body["detail"] and "True" in body["detail"]
    assert await _status(client, bot) == ("failed", "launch_failed")
    async with client.app[DB].sessions() as session:  # what GET /api/v1/bots/{id} shows
        meeting = await session.get(Meeting, bot.meeting_id)
        assert meeting is not None and meeting.status_detail is not None
        assert "refine_after_meeting" in meeting.status_detail
    status, body = await _post_asking(client, bot.bot_id, token, older)  # spent all the same
    assert (status, body["code"]) == (409, "bootstrap_token_used")


async def test_a_value_the_agent_predates_is_refused_where_it_is(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot()
    settings = bot.config.settings.model_copy(update={"recording_format": RecordingFormat.WEBM})
    machine_config = bot.config.model_copy(
        update={"control_plane_url": _base(client), "agent_token": None, "settings": settings}
    )
    token = await client.app[BOOTSTRAP_TOKENS].issue(machine_config)
    older = BotConfig.model_json_schema()
    older["$defs"]["RecordingFormat"]["enum"].remove("webm")  # an agent from before webm

    status, body = await _post_asking(client, bot.bot_id, token, older)
    assert (status, body["code"]) == (409, "agent_incompatible")
    assert "settings.recording_format" in body["detail"] and "'webm'" in body["detail"]
    assert await _status(client, bot) == ("failed", "launch_failed")


async def test_a_malformed_request_is_refused_before_the_token_is_spent(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot()
    token = await _issue(client, bot)
    response = await client.post(
        agent_bootstrap_path(bot.bot_id),
        data='{"config_schema": "not an object"}',
        headers={**bearer(token), "Content-Type": "application/json"},
    )
    assert response.status == 422
    status, body = await _post_asking(client, bot.bot_id, token, {"type": "object"})
    assert (status, body["code"]) == (409, "agent_incompatible")  # no properties: not a config
    assert "config_schema" in body["detail"]
