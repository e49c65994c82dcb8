"""S3 artifact storage against moto's S3 server on loopback (real HTTP, real boto3, real SigV4).

moto does not check presigned signatures or their expiry (../shared/research/findings.md), so
here the URLs' SigV4 shape and lifetime are read from the URL itself; downloading, uploading
and purging go over HTTP to the server.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import aiohttp
import boto3
import pytest
from botocore.config import Config
from moto.server import ThreadedMotoServer

from control_plane.storage.base import artifact_key, bot_prefix
from control_plane.storage.s3 import S3ArtifactStorage

pytestmark = pytest.mark.api

BUCKET = "meetbot-artifacts"
CREDENTIALS = {"access_key_id": "testing", "secret_access_key": "testing"}


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
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


@pytest.fixture(scope="module")
def storage(s3_endpoint: str) -> S3ArtifactStorage:
    return S3ArtifactStorage(BUCKET, endpoint_url=s3_endpoint, **CREDENTIALS)


async def test_put_then_presigned_get_downloads_the_bytes(storage: S3ArtifactStorage) -> None:
    bot_id = uuid.uuid4()
    key = artifact_key(bot_id, "screenshots", "a.png")
    await storage.put(key, b"\x89PNG-bytes", "image/png")
    assert await storage.size(key) == len(b"\x89PNG-bytes")

    signed = await storage.presign_get(key, 3600)
    query = parse_qs(urlsplit(signed.url).query)
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    assert query["X-Amz-Expires"] == ["3600"]
    async with aiohttp.ClientSession() as http, http.get(signed.url) as response:
        assert response.status == 200
        assert await response.read() == b"\x89PNG-bytes"


async def test_agent_uploads_through_the_presigned_put(storage: S3ArtifactStorage) -> None:
    bot_id = uuid.uuid4()
    key = artifact_key(bot_id, "recordings", "r.mp3")
    target = await storage.upload_target(key, "audio/mpeg", 600)
    assert target.method == "PUT"
    assert not target.agent_auth
    assert parse_qs(urlsplit(target.url).query)["X-Amz-Expires"] == ["600"]
    async with (
        aiohttp.ClientSession() as http,
        http.put(target.url, data=b"ID3-audio", headers=target.headers) as response,
    ):
        assert response.status == 200
    assert await storage.size(key) == len(b"ID3-audio")
    assert await storage.size(artifact_key(bot_id, "recordings", "missing.mp3")) is None


async def test_delete_prefix_removes_one_bots_objects_only(storage: S3ArtifactStorage) -> None:
    gone, kept = uuid.uuid4(), uuid.uuid4()
    for name in ("1.png", "2.png"):
        await storage.put(artifact_key(gone, "screenshots", name), b"x", "image/png")
    await storage.put(artifact_key(kept, "screenshots", "1.png"), b"y", "image/png")

    assert await storage.delete_prefix(bot_prefix(gone)) == 2
    assert await storage.size(artifact_key(gone, "screenshots", "1.png")) is None
    assert await storage.size(artifact_key(kept, "screenshots", "1.png")) == 1
