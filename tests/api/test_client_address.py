"""Client addresses behind proxies and the limits of public routes (issue 35, item 4).

``Forwarded`` / ``X-Forwarded-For`` name the client only when the TCP peer is one of
``trusted_proxies``; from anyone else they are ignored, so a client cannot pick a fresh bucket
per request. Every public route (probes, metrics, the document, the stream's token check,
invitation acceptance) takes a token of the client address's bucket and answers 429 with
``Retry-After`` once it is empty. The test client's peer is 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from control_plane.api.client_address import IPNetwork, client_of, parse_hop
from control_plane.auth.ratelimit import RateLimiter
from control_plane.settings import Settings
from tests.plugins.api_app import KEY_PREFIX

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]

PROXIES: list[IPNetwork] = [
    ipaddress.ip_network("10.0.0.0/8"),
    ipaddress.ip_network("2001:db8:1::/48"),
]


@pytest.mark.parametrize(
    ("peer", "hops", "client"),
    [
        # From an untrusted peer the headers are ignored.
        ("198.51.100.7", ["203.0.113.5"], "198.51.100.7"),
        ("198.51.100.7", [], "198.51.100.7"),
        # From a trusted proxy: the nearest untrusted hop.
        ("10.0.0.2", ["203.0.113.5"], "203.0.113.5"),
        ("10.0.0.2", ["1.2.3.4", "203.0.113.5", "10.0.0.9"], "203.0.113.5"),  # 1.2.3.4: a lie
        ("10.0.0.2", ["203.0.113.5:4711"], "203.0.113.5"),
        ("10.0.0.2", ["[2001:db8:9::1]:443"], "2001:db8:9::1"),
        ("2001:db8:1::5", ["2001:db8:9::1"], "2001:db8:9::1"),
        ("::ffff:10.0.0.2", ["203.0.113.5"], "203.0.113.5"),  # a dual-stack socket's peer
        # A hop that is no address ends the walk at the last address known.
        ("10.0.0.2", ["203.0.113.5", "unknown"], "10.0.0.2"),
        ("10.0.0.2", ["_hidden", "10.0.0.3"], "10.0.0.3"),
        # Every hop trusted: the farthest.
        ("10.0.0.2", ["10.0.0.4", "10.0.0.3"], "10.0.0.4"),
        ("10.0.0.2", [], "10.0.0.2"),
    ],
)
def test_the_client_is_the_nearest_hop_no_trusted_proxy_vouches_for(
    peer: str, hops: list[str], client: str
) -> None:
    assert client_of(peer, hops, PROXIES) == client


def test_hops_are_parsed_in_every_spelling() -> None:
    assert parse_hop('"[2001:db8::1]:4711"') == ipaddress.ip_address("2001:db8::1")
    assert parse_hop(" 192.0.2.1 ") == ipaddress.ip_address("192.0.2.1")
    assert parse_hop("2001:db8::1") == ipaddress.ip_address("2001:db8::1")
    for junk in ("unknown", "_secret", "[2001:db8::1", "", "1.2.3.4.5", "host:80"):
        assert parse_hop(junk) is None, junk


def test_the_bucket_refills_at_its_rate_and_says_when() -> None:
    now = [0.0]
    limiter = RateLimiter(rate=0.5, burst=2, clock=lambda: now[0])
    assert [limiter.acquire("a") for _ in range(3)] == [0.0, 0.0, 2.0]  # 1 token / 0.5 per s
    assert limiter.acquire("b") == 0.0  # another key, another bucket
    now[0] = 2.0
    assert limiter.acquire("a") == 0.0
    assert limiter.acquire("a") == 2.0


def _settings(database_url: str, tmp_path: Path, proxies: str) -> Settings:
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        scheduler_interval_seconds=60,
        address_rate_limit_per_second=0.01,
        address_rate_limit_burst=2,
        trusted_proxies=proxies,  # the environment's spelling, split by the setting
    )


@pytest.fixture
def proxies() -> str:
    """``trusted_proxies``: the loopback peer, unless a test parametrizes another list."""
    return "127.0.0.1"


@pytest.fixture
def settings(database_url: str, tmp_path: Path, proxies: str) -> Settings:
    """Tiny address buckets (burst 2, nearly no refill)."""
    return _settings(database_url, tmp_path, proxies)


async def _status(client: Client, path: str, headers: dict[str, str]) -> tuple[int, str | None]:
    response = await client.get(path, headers=headers)
    return response.status, response.headers.get("Retry-After")


def _xff(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": f"{address}, 127.0.0.1"}


async def test_a_trusted_proxy_gives_each_client_its_bucket(client: Client) -> None:
    # One client sending bad keys through the proxy is throttled; the others are not.
    for _ in range(2):
        assert (await _status(client, "/api/v1/bots", _xff("203.0.113.5")))[0] == 401
    status, retry = await _status(client, "/api/v1/bots", _xff("203.0.113.5"))
    assert status == 429 and retry is not None and int(retry) >= 1
    assert (await _status(client, "/api/v1/bots", _xff("203.0.113.6")))[0] == 401
    # Forwarded wins over X-Forwarded-For when both are sent; it names 203.0.113.5 here.
    both = {"Forwarded": 'for="203.0.113.5:1234"', **_xff("203.0.113.7")}
    assert (await _status(client, "/api/v1/bots", both))[0] == 429
    assert (await _status(client, "/api/v1/bots", {"Forwarded": "for=203.0.113.8"}))[0] == 401


@pytest.mark.parametrize("proxies", [""])
async def test_forwarding_headers_from_an_untrusted_peer_are_ignored(
    client: Client, proxies: str
) -> None:
    # Without trusted proxies every claimed address is the loopback peer: one bucket.
    addresses = ("203.0.113.5", "203.0.113.6", "203.0.113.7")
    seen = [(await _status(client, "/api/v1/bots", _xff(a)))[0] for a in addresses]
    assert seen == [401, 401, 429]
    forwarded = {"Forwarded": "for=198.51.100.1"}
    assert (await _status(client, "/api/v1/bots", forwarded))[0] == 429


@pytest.mark.parametrize("proxies", ["10.0.0.0/8"])
async def test_a_peer_outside_the_list_is_not_believed(client: Client, proxies: str) -> None:
    # Trusted proxies are configured, but the loopback peer is not one of them.
    seen = [(await _status(client, "/healthz", _xff(f"203.0.113.{i}")))[0] for i in range(3)]
    assert seen == [200, 200, 429]


async def test_every_public_route_is_limited_with_retry_after(client: Client) -> None:
    stream = f"/api/v1/bots/{uuid.uuid4()}/stream"
    bad_token = {"Authorization": "Bearer not-a-token"}
    cases: list[tuple[str, str, dict[str, Any], int]] = [
        ("GET", "/healthz", {}, 200),
        ("GET", "/readyz", {}, 200),
        ("GET", "/metrics", {}, 200),
        ("GET", "/api/v1/openapi.json", {}, 200),
        ("GET", stream, {"headers": bad_token}, 401),  # the stream token's check
        ("POST", "/api/v1/invitations/accept", {"json": {"token": "x", "name": "y"}}, 404),
    ]
    for number, (method, path, kwargs, first) in enumerate(cases):
        headers = {**kwargs.pop("headers", {}), **_xff(f"192.0.2.{number + 1}")}
        statuses = []
        for _ in range(3):
            response = await client.request(method, path, headers=headers, **kwargs)
            statuses.append(response.status)
        assert statuses[:2] == [first, first], (path, statuses)
        assert statuses[2] == 429, (path, statuses)
        assert int(response.headers["Retry-After"]) >= 1, path
        assert (await response.json())["code"] == "rate_limited"
    document = await (await client.get("/api/v1/openapi.json", headers=_xff("192.0.2.99"))).json()
    for path in ("/healthz", "/readyz", "/metrics", "/api/v1/openapi.json"):
        assert "429" in document["paths"][path]["get"]["responses"], path
    assert "429" in document["paths"]["/api/v1/bots/{bot_id}/stream"]["get"]["responses"]
