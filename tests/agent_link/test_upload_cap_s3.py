"""Issue 18 finding 9 on S3 storage: upload slots are capped too.

A presigned PUT stores whatever arrives, so the agent announces the ``size`` of what it will
send: a slot over ``max_upload_bytes`` is refused (413), a slot without a size is refused
(422 ``size_required``), and a slot within the cap signs the size as the upload's
``Content-Length`` (S3 refuses any other length). moto serves S3 on loopback; it does not check
signatures, so the signed length is read from the URL, and an upload of exactly that length
is stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import aiohttp
import boto3
import pytest
from botocore.config import Config
from moto.server import ThreadedMotoServer

from agent.contracts.link import UploadSlot
from agent.contracts.status import BotStatus
from control_plane.agent_hub.keys import STORAGE
from control_plane.settings import Settings
from tests.plugins.agent_link import Client, LaunchBot
from tests.plugins.api_app import KEY_PREFIX

pytestmark = pytest.mark.api

CAP = 64 * 1024
BUCKET = "meetbot-artifacts"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server with the artifacts bucket."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(signature_version="s3v4"),
    ).create_bucket(Bucket=BUCKET)
    yield endpoint
    server.stop()


@pytest.fixture
def settings(database_url: str, tmp_path: Path, s3_endpoint: str) -> Settings:
    """The agent-link settings on S3 storage with a small upload cap."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        public_url="http://127.0.0.1:1",
        scheduler_interval_seconds=0.05,
        max_upload_bytes=CAP,
        storage="s3",
        s3_bucket=BUCKET,
        s3_endpoint_url=s3_endpoint,
        s3_access_key_id="testing",
        s3_secret_access_key="testing",
    )


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_s3_slots_need_a_size_within_the_cap_and_sign_it(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    auth = {"Authorization": f"Bearer {bot.token}"}
    path = f"/internal/v1/agents/{bot.bot_id}/uploads"
    request = {"kind": "recording", "name": "r.mp3", "content_type": "audio/mpeg"}

    over = await client.post(path, json={**request, "size": CAP + 1}, headers=auth)
    assert over.status == 413
    assert (await over.json())["code"] == "payload_too_large"

    unsized = await client.post(path, json=request, headers=auth)
    assert unsized.status == 422
    assert (await unsized.json())["code"] == "size_required"

    fits = await client.post(path, json={**request, "size": CAP}, headers=auth)
    assert fits.status == 200
    slot = UploadSlot.model_validate(await fits.json())
    assert not slot.agent_auth
    assert slot.headers["Content-Length"] == str(CAP)
    signed = parse_qs(urlsplit(slot.url).query)["X-Amz-SignedHeaders"][0].split(";")
    assert "content-length" in signed
    async with (
        aiohttp.ClientSession() as http,
        http.put(slot.url, data=b"\x00" * CAP, headers=slot.headers) as response,
    ):
        assert response.status == 200
    assert await client.app[STORAGE].size(slot.storage_key) == CAP
