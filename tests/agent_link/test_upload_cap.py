"""Issue 18 finding 9: agent artifact uploads are capped (``max_upload_bytes``), streamed.

An upload over the cap answers 413 ``payload_too_large`` whether it announces its length or
arrives chunked without one, and nothing is stored; one within the cap is stored whole.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agent.contracts.link import UploadSlot
from agent.contracts.status import BotStatus
from control_plane.agent_hub.keys import STORAGE
from control_plane.settings import Settings
from tests.plugins.agent_link import Client, LaunchBot
from tests.plugins.api_app import KEY_PREFIX

pytestmark = pytest.mark.api

CAP = 256 * 1024


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """The agent-link settings with a small upload cap."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        public_url="http://127.0.0.1:1",
        scheduler_interval_seconds=0.05,
        max_upload_bytes=CAP,
    )


async def _chunks(total: int) -> AsyncIterator[bytes]:
    sent = 0
    while sent < total:
        size = min(64 * 1024, total - sent)
        sent += size
        yield b"\x00" * size


async def test_uploads_over_the_cap_are_refused_and_not_stored(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    auth = {"Authorization": f"Bearer {bot.token}"}

    async def slot(name: str) -> tuple[str, str]:
        response = await client.post(
            f"/internal/v1/agents/{bot.bot_id}/uploads",
            json={"kind": "recording", "name": name, "content_type": "audio/mpeg"},
            headers=auth,
        )
        upload = UploadSlot.model_validate(await response.json())
        parts = urlsplit(upload.url)
        return f"{parts.path}?{parts.query}", upload.storage_key

    storage = client.app[STORAGE]
    path, key = await slot("announced.mp3")
    response = await client.put(path, data=b"\x00" * (CAP + 1), headers=auth)
    assert response.status == 413
    assert response.content_type == "application/problem+json"
    assert (await response.json())["code"] == "payload_too_large"
    assert await storage.size(key) is None

    path, key = await slot("chunked.mp3")
    response = await client.put(path, data=_chunks(CAP * 3), headers=auth)
    assert response.status == 413
    assert await storage.size(key) is None

    path, key = await slot("fits.mp3")
    response = await client.put(path, data=_chunks(CAP), headers=auth)
    assert response.status == 201
    assert await storage.size(key) == CAP
