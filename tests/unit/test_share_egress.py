"""The share sandbox's egress proxy and the media fetches' guarded resolver, without a browser.

Two loopback servers stand for the internet and the inside: ``site`` is reached under a global
address (the test's dial routes ``PUBLIC`` to it), ``internal`` under loopback names and
literals, which the rules refuse. Names resolve through a test resolver whose answers can
change from one lookup to the next (DNS rebinding). tests/agent/test_share_sandbox.py drives
the proxy from Chromium.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from agent.contracts.link import CommandErrorCode
from agent.media_out.egress import HEAD_LIMIT_BYTES, GuardedProxy, checked_addresses
from agent.media_out.remote_media import image_data_url
from agent.process.errors import CommandError
from agent.voice.audio_file import AudioUnavailable, fetch_audio
from meetbot_common.ssrf import TargetPolicy, resolve_checked
from tests.egress_hosts import PUBLIC, dial_public_to, two_hosts

pytestmark = pytest.mark.unit

HTTP = TargetPolicy(allow_http=True)
"""The rules with plain http allowed (the servers here speak no TLS); private still refused."""


@dataclass
class Names:
    """A resolver whose names answer in turn (the last answer repeats); counts lookups."""

    answers: dict[str, list[list[str]]]
    lookups: dict[str, int] = field(default_factory=dict)

    async def __call__(self, host: str, port: int) -> list[str]:
        seen = self.lookups.get(host, 0)
        self.lookups[host] = seen + 1
        turns = self.answers.get(host)
        if turns is None:
            raise socket.gaierror(socket.EAI_NONAME, "unknown name")
        return turns[min(seen, len(turns) - 1)]


@dataclass
class Servers:
    """The two servers' ports and how often the internal one was reached."""

    site: int
    internal: int
    internal_hits: list[str]


@pytest.fixture
async def servers() -> AsyncIterator[Servers]:
    hits: list[str] = []

    async def site(request: web.Request) -> web.Response:
        if request.path == "/redirect":
            raise web.HTTPFound(request.query["to"])
        return web.Response(text="site", content_type="image/png")

    async def internal(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(text="internal", content_type="image/png")

    async with two_hosts(site, internal) as (site_port, internal_port):
        yield Servers(site_port, internal_port, hits)


def _proxy(servers: Servers, names: Names, policy: TargetPolicy = HTTP) -> GuardedProxy:
    return GuardedProxy(policy, lookup=names, dial=dial_public_to(servers.site))


def _names() -> Names:
    return Names({"site.test": [[PUBLIC]], "inside.test": [["10.0.0.5", PUBLIC]]})


async def _get(proxy: GuardedProxy, url: str) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, proxy=proxy.url) as response,
    ):
        return response.status, await response.text()


async def test_requests_and_their_redirects_reach_allowed_addresses_only(
    servers: Servers,
) -> None:
    names = _names()
    async with _proxy(servers, names) as proxy:
        assert await _get(proxy, f"http://site.test:{servers.site}/") == (200, "site")
        for url in (
            f"http://127.0.0.1:{servers.internal}/literal",
            f"http://[::ffff:127.0.0.1]:{servers.internal}/mapped",
            f"http://inside.test:{servers.internal}/one-private-address",
            f"http://nowhere.test:{servers.internal}/unresolved",
        ):
            status, _ = await _get(proxy, url)
            assert status in {403, 502}, url
        # A redirect hop is a request of its own, through the proxy, and is refused there.
        to = f"http://127.0.0.1:{servers.internal}/after-redirect"
        status, _ = await _get(proxy, f"http://site.test:{servers.site}/redirect?to={to}")
        assert status == 403
        assert proxy.refused == 5
    async with _proxy(servers, _names(), TargetPolicy()) as https_only:
        assert (await _get(https_only, f"http://site.test:{servers.site}/"))[0] == 403
    assert servers.internal_hits == []


async def _connect(
    proxy: GuardedProxy, target: str
) -> tuple[bytes, asyncio.StreamReader, asyncio.StreamWriter]:
    port = int(proxy.url.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    status = await reader.readuntil(b"\r\n\r\n")
    if b" 200 " in status:
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    return status, reader, writer


async def test_tunnels_open_to_checked_addresses_only(servers: Servers) -> None:
    async with _proxy(servers, _names()) as proxy:
        status, reader, writer = await _connect(proxy, f"site.test:{servers.site}")
        assert status.startswith(b"HTTP/1.1 200")
        assert (await reader.read()).endswith(b"site")  # the tunnel carries the exchange
        writer.close()
        for target in (f"127.0.0.1:{servers.internal}", f"inside.test:{servers.internal}"):
            status, _, writer = await _connect(proxy, target)
            assert status.startswith(b"HTTP/1.1 403"), target
            writer.close()
        for target in ("site.test", "site.test:99999", "[::1"):  # no port, a bad one, garbage
            status, _, writer = await _connect(proxy, target)
            assert status.startswith(b"HTTP/1.1 400"), target
            writer.close()
        port = int(proxy.url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET http://site.test:99999/ HTTP/1.1\r\nHost: site.test\r\n\r\n")
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 400")
        writer.close()
    assert servers.internal_hits == []


async def test_a_name_that_changes_its_answer_after_the_check_does_not_lead_inside(
    servers: Servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The share's proxy: the name was public when checked, is loopback when connected to.
    names = Names({"rebind.test": [[PUBLIC], ["127.0.0.1"]]})
    assert await checked_addresses("rebind.test", servers.internal, HTTP, names) == [PUBLIC]
    async with _proxy(servers, names) as proxy:
        status, _ = await _get(proxy, f"http://rebind.test:{servers.internal}/share")
    assert status == 403
    assert names.lookups == {"rebind.test": 2}  # the check's and the connection's: one each

    # Media fetches (audio_url, avatars): the system resolver answers public to the check the
    # control plane makes, then loopback to the fetch, which is refused where it connects.
    turns: list[str] = [PUBLIC]

    async def getaddrinfo(host: str, port: int, **_: Any) -> list[Any]:
        address = turns.pop(0) if turns else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", getaddrinfo)
    url = f"http://rebind.test:{servers.internal}/clip.wav"
    assert await resolve_checked("rebind.test", servers.internal, HTTP) == [PUBLIC]
    with pytest.raises(AudioUnavailable, match="not allowed"):
        await fetch_audio(url, HTTP)
    with pytest.raises(CommandError, match="not allowed"):
        await image_data_url(url, HTTP, CommandErrorCode.AVATAR_UNAVAILABLE)
    assert servers.internal_hits == []


async def test_a_head_over_the_limit_is_refused_and_a_browser_that_hangs_up_is_counted(
    servers: Servers,
) -> None:
    async with _proxy(servers, _names()) as proxy:
        port = int(proxy.url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        padding = "x" * (HEAD_LIMIT_BYTES + 1)
        writer.write(f"GET http://site.test/ HTTP/1.1\r\nX-Pad: {padding}\r\n\r\n".encode())
        await writer.drain()
        answer = await reader.read()
        writer.close()
        assert answer.startswith(b"HTTP/1.1 431 ")
        assert proxy.refused == 1
        # Half a head, then the browser goes away: no answer is owed, the drop is counted.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET http://site.test/ HTTP/1.1\r\n")
        await writer.drain()
        writer.close()
        await writer.wait_closed()
        for _ in range(100):
            if proxy.dropped:
                break
            await asyncio.sleep(0.01)
        assert proxy.dropped == 1
        assert proxy.refused == 1
