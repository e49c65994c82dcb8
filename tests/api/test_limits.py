"""Issue 18 findings 7 and 9: limits and abuse.

* requests without a valid key are throttled per client address before any lookup (429);
* per-workspace quotas (webhook endpoints, keys, prompt versions, pending invitations, bots at
  once) answer 409 ``quota_exceeded``;
* a webhook endpoint's signing secret needs an owner's ``edit`` key;
* the SSRF policy refuses IPv4-embedding IPv6 forms (6to4, NAT64, Teredo) and host spellings
  that are not DNS names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from sqlalchemy import event

from control_plane.db.engine import DB
from control_plane.enums import Permission
from control_plane.settings import Settings
from meetbot_common.ssrf import TargetPolicy, address_allowed
from tests.plugins.api_app import KEY_PREFIX, Caller, Tenants

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Small limits so that the tests reach them."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        scheduler_interval_seconds=60,
        address_rate_limit_per_second=0.01,
        address_rate_limit_burst=5,
        max_webhook_endpoints=2,
        max_api_keys=3,
        max_action_prompts=2,
        max_pending_invitations=2,
        max_concurrent_bots=2,
    )


async def _code(response: Any) -> tuple[int, str]:
    assert response.content_type == "application/problem+json", await response.text()
    return response.status, (await response.json())["code"]


async def test_bad_keys_are_throttled_per_address_before_the_lookup(
    client: Client, owner: Caller
) -> None:
    assert (await client.get("/api/v1/bots", headers=owner.headers)).status == 200
    queries: list[str] = []
    engine = client.app[DB].reads.kw["bind"]
    event.listen(engine.sync_engine, "before_cursor_execute", lambda *a: queries.append(a[2]))
    unknown = {"X-API-Key": f"{KEY_PREFIX}_" + "A" * 43}
    seen = [
        await _code(await client.get("/api/v1/bots", headers=headers))
        for headers in ({}, {"X-API-Key": "nonsense"}, unknown, unknown, unknown)
    ]
    assert seen == [(401, "invalid_api_key")] * 2 + [(401, "invalid_api_key")] * 3
    lookups = len(queries)
    for headers in ({}, unknown, {"X-API-Key": "nonsense"}):
        response = await client.get("/api/v1/bots", headers=headers)
        assert await _code(response) == (429, "rate_limited")
        assert int(response.headers["Retry-After"]) >= 1
    assert len(queries) == lookups, "a throttled request must not reach the database"
    response = await client.post("/api/v1/invitations/accept", json={"token": "x", "name": "y"})
    assert await _code(response) == (429, "rate_limited")
    # A valid key in the process's key cache is not affected by its address's bucket.
    assert (await client.get("/api/v1/bots", headers=owner.headers)).status == 200


async def test_quotas_answer_409_quota_exceeded(client: Client, owner: Caller) -> None:
    headers = owner.headers
    hooks = f"/api/v1/workspaces/{owner.workspace_id}/webhooks"
    invitations = f"/api/v1/workspaces/{owner.workspace_id}/invitations"
    cases: list[tuple[str, list[dict[str, Any]]]] = [
        (hooks, [{"url": f"https://example.com/{i}"} for i in range(3)]),
        ("/api/v1/api-keys", [{"name": f"k{i}"} for i in range(3)]),  # the owner's key is one
        ("/api/v1/action-prompts", [{"name": "p", "instructions": "x"} for _ in range(3)]),
        (invitations, [{"email": f"a{i}@example.org"} for i in range(3)]),
        (
            "/api/v1/bots",
            [{"platform": "google_meet", "native_meeting_id": f"abc-defg-hi{c}"} for c in "xyz"],
        ),
    ]
    for path, bodies in cases:
        *allowed, refused = bodies
        for body in allowed:
            response = await client.post(path, json=body, headers=headers)
            assert response.status == 201, (path, await response.text())
        response = await client.post(path, json=refused, headers=headers)
        assert await _code(response) == (409, "quota_exceeded"), path
    # A scheduled bot does not count against the bots-at-once quota.
    response = await client.post(
        "/api/v1/bots/schedule",
        json={
            "platform": "google_meet",
            "native_meeting_id": "abc-defg-hiw",
            "scheduled_start_at": "2999-01-01T00:00:00Z",
        },
        headers=headers,
    )
    assert response.status == 201


async def test_signing_secret_needs_an_edit_key(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    hooks = f"/api/v1/workspaces/{owner.workspace_id}/webhooks"
    created = await client.post(hooks, json={"url": "https://example.com/h"}, headers=owner.headers)
    endpoint = (await created.json())["id"]
    reader = await tenants.key(owner, permission=Permission.READ)
    response = await client.get(f"{hooks}/{endpoint}/secret", headers=reader.headers)
    assert await _code(response) == (403, "read_only_key")
    response = await client.get(f"{hooks}/{endpoint}", headers=reader.headers)
    assert response.status == 200
    response = await client.get(f"{hooks}/{endpoint}/secret", headers=owner.headers)
    assert (await response.json())["key"].startswith("whsec_")


@pytest.mark.parametrize(
    "url",
    [
        "https://[2002:7f00:1::]/hook",  # 6to4 of 127.0.0.1
        "https://[2002:a9fe:a9fe::1]/hook",  # 6to4 of 169.254.169.254
        "https://[2002:808:808::1]/hook",  # 6to4 of a public address: still a tunnel
        "https://[64:ff9b::7f00:1]/hook",  # NAT64 of 127.0.0.1
        "https://[64:ff9b:1::a00:1]/hook",  # local-use NAT64 of 10.0.0.1
        "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",  # Teredo of 127.0.0.1
        "https://[::7f00:1]/hook",  # IPv4-compatible 127.0.0.1
        "https://[::ffff:7f00:1]/hook",  # IPv4-mapped 127.0.0.1
        "https://127.0.0.1./hook",
        "https://%31%32%37.0.0.1/hook",
        "https://2130706433/hook",
        "https://0x7f.0.0.1/hook",
        "https://exa_mple.com/hook",
        "https://-example.com/hook",
        "https://" + "a" * 64 + ".com/hook",
    ],
)
async def test_ssrf_policy_refuses_embedded_ipv4_and_non_dns_hosts(
    client: Client, owner: Caller, url: str
) -> None:
    hooks = f"/api/v1/workspaces/{owner.workspace_id}/webhooks"
    response = await client.post(hooks, json={"url": url}, headers=owner.headers)
    assert await _code(response) == (422, "webhook_url_not_allowed")


def test_embedded_ipv4_is_judged_when_private_targets_are_allowed() -> None:
    loose = TargetPolicy(allow_private=True)
    assert address_allowed("2002:7f00:1::", loose)
    assert not address_allowed("2002:e000:1::", loose)  # 6to4 of multicast 224.0.0.1
    assert not address_allowed("64:ff9b::", loose)  # NAT64 of 0.0.0.0
    assert address_allowed("2606:4700::1111", TargetPolicy())
