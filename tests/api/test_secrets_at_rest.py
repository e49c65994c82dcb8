"""Secrets at rest (issue 35, item 7): what a copy of the database file shows of them.

The migration that stopped storing ``zoom_obf_token`` erases the tokens older versions kept in
plain text, from the file's free pages too. Webhook endpoint secrets are sealed, and those an
older version stored in plain text are sealed when the control plane starts. (Zoom connections
and OBF tokens: tests/api/test_zoom_connections.py; signing keys:
tests/agent_link/test_tokens_and_signing.py.)
Read on SQLite, where the whole database is one file (and its write-ahead log) to search.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient
from sqlalchemy import select, text

from control_plane.app import create_app
from control_plane.auth.provisioning import create_workspace
from control_plane.db.engine import DB, create_database
from control_plane.db.migrate import upgrade
from control_plane.db.models.webhook import WebhookEndpoint
from control_plane.launchers.memory import MemoryLauncher
from control_plane.settings import Settings
from tests.plugins.api_app import KEY_PREFIX, Caller, database_file_bytes

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]
OBF = "obf-plaintext-never-at-rest-7f3a9c"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
    )


async def test_the_migration_erases_plaintext_obf_tokens_of_older_versions(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
    await upgrade(url, "0015_signing_keys")  # the schema that stored OBF tokens in plain text
    database = create_database(url)
    try:
        async with database.sessions.begin() as session:
            workspace = await create_workspace(session, "Acme")
            await session.execute(
                text(
                    "INSERT INTO meetings (bot_id, workspace_id, platform, native_meeting_id,"
                    " constructed_meeting_url, status, settings, participants, redacted,"
                    " zoom_obf_token, zoom_connection_id, created_at, updated_at,"
                    " join_offset_seconds)"
                    " VALUES (:bot, :ws, 'zoom', '85746352410', 'https://zoom.us/j/85746352410',"
                    " 'requested', '{}', '[]', 0, :obf, 7, '2026-11-01', '2026-11-01', 0)"
                ),
                {"bot": uuid.uuid4().hex, "ws": workspace.id.hex, "obf": OBF},
            )
            meeting_id = (await session.execute(text("SELECT id FROM meetings"))).scalar_one()
            config = json.dumps({"bot_id": "b", "zoom_obf_token": OBF + "-boot", "x": 1})
            await session.execute(
                text(
                    "INSERT INTO bootstrap_tokens (meeting_id, token_digest, config, expires_at,"
                    " created_at) VALUES (:id, :digest, :config, '2026-12-01', '2026-11-01')"
                ),
                {"id": meeting_id, "digest": "0" * 64, "config": config},
            )
    finally:
        await database.dispose()
    assert OBF.encode() in database_file_bytes(url)

    await upgrade(url)

    database = create_database(url)
    try:
        async with database.sessions() as session:
            stored = (await session.execute(text("SELECT config FROM bootstrap_tokens"))).scalar()
            columns = (await session.execute(text("PRAGMA table_info(meetings)"))).all()
    finally:
        await database.dispose()
    assert json.loads(str(stored)) == {"bot_id": "b", "x": 1}
    # The plain-text column stays dropped (0019 adds back the connection id and a sealed token).
    assert "zoom_obf_token" not in {column[1] for column in columns}
    assert OBF.encode() not in database_file_bytes(url)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_webhook_secrets_are_sealed_and_plain_ones_are_sealed_at_start(
    client: Client,
    owner: Caller,
    settings: Settings,
    database_url: str,
    aiohttp_client: AiohttpClient,
) -> None:
    hooks = f"/api/v1/workspaces/{owner.workspace_id}/webhooks"
    created = await client.post(  # an IP literal: no lookup; an event type nothing here sends
        hooks,
        json={"url": "https://93.184.216.34/hook", "filter_types": ["recording.ready"]},
        headers=owner.headers,
    )
    assert created.status == 201, await created.text()
    endpoint_id = (await created.json())["id"]
    shown = await client.get(f"{hooks}/{endpoint_id}/secret", headers=owner.headers)
    secret = (await shown.json())["key"]
    assert secret.startswith("whsec_")
    async with client.app[DB].sessions.begin() as session:
        row = await session.get(WebhookEndpoint, endpoint_id)
        assert row is not None
        raw = database_file_bytes(database_url)
        assert row.secret.encode() in raw and secret.encode() not in raw
        legacy = "whsec_" + "B" * 32  # as a version before sealing stored it
        session.add(
            WebhookEndpoint(
                id="ep_legacy",
                workspace_id=owner.workspace_id,
                url="https://93.184.216.34/old",
                description="",
                filter_types=["recording.ready"],
                secret=legacy,
                disabled=False,
            )
        )

    restarted = await aiohttp_client(create_app(settings, launcher=MemoryLauncher()))
    async with restarted.app[DB].sessions() as session:
        stored = (await session.scalars(select(WebhookEndpoint.secret))).all()
    assert len(stored) == 2 and not any(value.startswith("whsec_") for value in stored)
    for endpoint, expected in ((endpoint_id, secret), ("ep_legacy", legacy)):
        shown = await restarted.get(f"{hooks}/{endpoint}/secret", headers=owner.headers)
        assert (await shown.json())["key"] == expected
