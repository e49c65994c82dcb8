"""Fetching user-named media (agent/media_out/remote_media.py) under the SSRF rules, for real.

A local aiohttp server plays the remote host; the default policy (https, global addresses only)
must refuse it, and the permissive one must still refuse redirects, non-images, oversize bodies
and broken ``data:`` URLs with the command's error code and argument.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from agent.contracts.link import CommandErrorCode
from agent.media_out.remote_media import MAX_IMAGE_BYTES, image_data_url
from agent.process.errors import CommandError
from meetbot_common.ssrf import TargetPolicy

pytestmark = pytest.mark.unit

CODE = CommandErrorCode.AVATAR_UNAVAILABLE
OPEN = TargetPolicy(allow_http=True, allow_private=True)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(100)


@pytest.fixture
async def host() -> AsyncIterator[str]:
    async def image(request: web.Request) -> web.Response:
        return web.Response(body=PNG, content_type="image/png")

    async def huge(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "image/png"})
        await response.prepare(request)
        for _ in range(MAX_IMAGE_BYTES // 65536 + 2):
            await response.write(bytes(65536))
        return response

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPFound("/image.png")

    async def page(request: web.Request) -> web.Response:
        return web.Response(text="<html></html>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/image.png", image)
    app.router.add_get("/huge.png", huge)
    app.router.add_get("/moved.png", moved)
    app.router.add_get("/page.html", page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


async def refusal(url: str, policy: TargetPolicy = OPEN) -> str:
    with pytest.raises(CommandError) as caught:
        await image_data_url(url, policy, CODE)
    assert caught.value.code is CODE
    assert caught.value.field == "image_url"
    return caught.value.detail


async def test_an_allowed_image_comes_back_whole_as_a_data_url(host: str) -> None:
    url = await image_data_url(f"{host}/image.png", OPEN, CODE)
    assert url == "data:image/png;base64," + base64.b64encode(PNG).decode()


async def test_the_default_policy_refuses_plain_http_and_loopback(host: str) -> None:
    assert "scheme" in await refusal(f"{host}/image.png", TargetPolicy())
    https_loopback = host.replace("http://", "https://")
    assert "not allowed" in await refusal(f"{https_loopback}/image.png", TargetPolicy())
    assert "not allowed" in await refusal(
        "https://localhost/image.png", TargetPolicy(allow_http=True)
    )


async def test_redirects_non_images_oversize_and_broken_data_urls_are_refused(host: str) -> None:
    assert "302" in await refusal(f"{host}/moved.png")
    assert "text/html" in await refusal(f"{host}/page.html")
    assert "404" in await refusal(f"{host}/missing.png")
    assert "5 MiB" in await refusal(f"{host}/huge.png")
    assert "base64" in await refusal("data:image/png;base64,not*base64")
    assert "no data" in await refusal("data:image/png;base64,")
