"""The SSRF guard: refused schemes and addresses (also behind a name), and no redirects."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from control_plane.webhooks.errors import WebhookUrlNotAllowed
from control_plane.webhooks.validation import checked_url
from meetbot_common.ssrf import (
    TargetPolicy,
    TargetRefused,
    address_allowed,
    check_target,
    check_url,
    client_session,
    valid_dns_name,
)

pytestmark = pytest.mark.unit

STRICT = TargetPolicy()
LOCAL = TargetPolicy(allow_http=True, allow_private=True)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata service
        "100.64.0.1",  # shared (CGNAT) space
        "0.0.0.0",  # noqa: S104 — a refused target here, nothing binds to it
        "224.0.0.1",
        "240.0.0.1",
        "::1",
        "fe80::1",
        "fc00::1",
        "::ffff:127.0.0.1",
        "ff02::1",
    ],
)
def test_internal_addresses_are_refused_by_default(address: str) -> None:
    assert not address_allowed(address, STRICT)


def test_public_addresses_pass_and_private_ones_pass_when_allowed() -> None:
    assert address_allowed("93.184.216.34", STRICT)
    assert address_allowed("2606:4700::1111", STRICT)
    assert address_allowed("127.0.0.1", LOCAL)
    assert address_allowed("10.0.0.1", LOCAL)
    assert not address_allowed("224.0.0.1", LOCAL)


def test_scheme_rules() -> None:
    check_url("https://example.com/hook", STRICT)
    with pytest.raises(TargetRefused, match="scheme"):
        check_url("http://example.com/hook", STRICT)
    with pytest.raises(TargetRefused, match="scheme"):
        check_url("ftp://example.com/hook", LOCAL)
    with pytest.raises(TargetRefused, match="credentials"):
        check_url("https://user:pw@example.com/hook", STRICT)
    with pytest.raises(TargetRefused, match="address"):
        check_url("https://127.0.0.1/hook", STRICT)
    with pytest.raises(TargetRefused, match="address"):
        check_url("https://[::1]/hook", STRICT)
    check_url("http://127.0.0.1:9/hook", LOCAL)


def test_dns_names_are_whole_ascii_labels() -> None:
    assert valid_dns_name("hooks.example.com")
    # ``re.match`` with ``$`` took a label with a trailing newline (issue 18).
    for bad in ("example.com\n", "exa\nmple.com", "-a.example.com", "127.0.0.1", "\u0661.com"):
        assert not valid_dns_name(bad), bad


async def test_a_name_resolving_to_loopback_is_refused() -> None:
    with pytest.raises(TargetRefused, match="resolves"):
        await check_target("https://localhost/hook", STRICT)
    with pytest.raises(WebhookUrlNotAllowed):
        await checked_url("https://localhost/hook", STRICT)
    await check_target("http://localhost/hook", LOCAL)


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[TestServer, list[str]]]:
    hits: list[str] = []

    async def hook(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(text="ok")

    async def moved(request: web.Request) -> web.Response:
        hits.append(request.path)
        raise web.HTTPFound("/elsewhere")

    app = web.Application()
    app.router.add_post("/hook", hook)
    app.router.add_post("/moved", moved)
    app.router.add_post("/elsewhere", hook)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    yield server, hits
    await server.close()


async def test_delivery_session_refuses_localhost_at_connection_time(
    receiver: tuple[TestServer, list[str]],
) -> None:
    server, hits = receiver
    url = f"http://localhost:{server.port}/hook"
    # Scheme allowed, addresses not: the guarded resolver refuses when connecting.
    policy = TargetPolicy(allow_http=True)
    async with client_session(policy) as http:
        with pytest.raises(aiohttp.ClientConnectorError) as raised:
            async with http.post(url, data=b"{}", allow_redirects=False):
                pass
    assert isinstance(raised.value.os_error, TargetRefused)
    assert hits == []
    async with client_session(LOCAL) as http, http.post(url, data=b"{}") as response:
        assert response.status == 200
    assert hits == ["/hook"]


async def test_redirects_are_not_followed(receiver: tuple[TestServer, list[str]]) -> None:
    server, hits = receiver
    async with (
        client_session(LOCAL) as http,
        http.post(
            f"http://localhost:{server.port}/moved", data=b"{}", allow_redirects=False
        ) as response,
    ):
        assert response.status == 302
    assert hits == ["/moved"]
