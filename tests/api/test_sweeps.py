"""Sweeps over EVERY route of the app, enumerated from its router (new routes are covered
without editing this file, unless they need a body or a path parameter not known here):

* cross-workspace: workspace A's owner key with workspace B's ids → 404 (403 ``not_a_member``
  on ``/api/v1/workspaces/{workspace_id}/…``, as docs/api.md Part 1 says), B's resources intact
  afterwards, and no list of A shows anything of B;
* ``read`` keys: 403 ``read_only_key`` on every mutating route except the ones declared
  ``read_key_ok`` (``POST …/subscribe``), never on GET;
* ``member`` role: 403 ``owner_required`` on every owner-only workspace route.

Public routes (no ``X-API-Key``) must be listed in :data:`PUBLIC`; routes outside the API
contract (agent link, signed artifact URLs) in :data:`NOT_API`.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from control_plane.api.routes import ROUTE_SPECS, RouteSpec
from control_plane.app import create_app
from control_plane.db.engine import DB
from control_plane.db.models.zoom_connection import ZoomConnection
from control_plane.enums import Permission
from control_plane.settings import Settings
from tests.plugins.api_app import KEY_PREFIX, Caller, Tenants

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]

PUBLIC = {
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/api/v1/openapi.json"),
    ("POST", "/api/v1/invitations/accept"),
    # No API key: its stream token is the credential (tests/agent_link/test_stream_relay.py).
    ("GET", "/api/v1/bots/{bot_id}/stream"),
    # The dashboard's page and its static files hold no data: the key is typed into the page
    # (tests/dashboard/test_dashboard_files.py).
    ("GET", "/"),
    ("GET", "/ui/{name}"),
}
# Authenticated by agent tokens or URL signatures, not API keys; their own tests cover them.
NOT_API = re.compile(r"^/(internal/|artifacts/)")
# Routes whose answer does not depend on the resource (docs/api.md Part 1: refresh is "always 501").
FIXED_STATUS = {("POST", "/api/v1/bots/{bot_id}/subscribe/refresh"): 501}
WORKSPACE_PATH = "/api/v1/workspaces/{workspace_id}"
# Workspace routes a member may call; every other workspace route is owner-only.
MEMBER_ALLOWED = {
    ("GET", WORKSPACE_PATH),
    ("GET", WORKSPACE_PATH + "/members"),
    ("GET", WORKSPACE_PATH + "/invitations"),
}
FUTURE = (datetime.now(UTC) + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
# Valid bodies, so that a refusal is about ownership or permission, not input.
BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/v1/bots"): {"platform": "google_meet", "native_meeting_id": "abc-defg-hij"},
    ("POST", "/api/v1/bots/schedule"): {
        "platform": "google_meet",
        "native_meeting_id": "abc-defg-hij",
        "scheduled_start_at": FUTURE,
    },
    ("POST", WORKSPACE_PATH + "/webhooks"): {"url": "http://127.0.0.1:9/hook"},
    ("POST", WORKSPACE_PATH + "/invitations"): {"email": "sweep@example.org"},
    ("POST", "/api/v1/api-keys"): {"name": "sweep"},
    ("POST", "/api/v1/action-prompts"): {"name": "sweep", "instructions": "find actions"},
    ("POST", "/api/v1/workspace/integrations/zoom/connections"): {
        "authorization_code": "code",
        "redirect_uri": "https://app.example/cb",
    },
    ("PUT", "/api/v1/bots/{bot_id}/avatar"): {"image_url": "https://img.example/a.png"},
    ("POST", "/api/v1/bots/{bot_id}/chat"): {"text": "hello"},
    ("POST", "/api/v1/bots/{bot_id}/speak"): {"text": "hello"},
    ("POST", "/api/v1/bots/{bot_id}/screen"): {"url": "https://example.org"},
}


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Settings without a rate limit in the way, and webhooks allowed to a loopback URL."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        rate_limit_per_second=10_000,
        rate_limit_burst=10_000,
        webhook_allow_http=True,
        webhook_allow_private=True,
        subscribe_wait_seconds=0,
    )


@dataclass
class Estate:
    """One workspace's caller and an id of every kind of resource it has."""

    caller: Caller
    ids: dict[str, str]
    markers: list[str]


async def _furnish(client: Client, tenants: Tenants, caller: Caller) -> Estate:
    """Create one of each resource in ``caller``'s workspace."""
    headers = caller.headers

    async def post(path: str) -> dict[str, Any]:
        response = await client.post(path, json=BODIES[("POST", path)], headers=headers)
        assert response.status == 201, (path, await response.text())
        body: dict[str, Any] = await response.json()
        return body

    ws = f"/api/v1/workspaces/{caller.workspace_id}"
    bot = await post("/api/v1/bots")
    scheduled = await post("/api/v1/bots/schedule")
    prompt = await post("/api/v1/action-prompts")
    response = await client.post(
        ws + "/webhooks", json=BODIES[("POST", WORKSPACE_PATH + "/webhooks")], headers=headers
    )
    assert response.status == 201, await response.text()
    endpoint = await response.json()
    response = await client.post(
        ws + "/invitations",
        json={"email": f"{uuid.uuid4().hex[:8]}@example.org"},
        headers=headers,
    )
    invitation = await response.json()
    extra_key = await tenants.key(caller)
    zoom_user = f"zu_{uuid.uuid4().hex[:8]}"
    async with client.app[DB].sessions.begin() as session:
        connection = ZoomConnection(
            workspace_id=caller.workspace_id,
            user_id=caller.user_id,
            zoom_user_id=zoom_user,
            email=f"{zoom_user}@example.org",
            access_token_sealed="sealed",
            refresh_token_sealed="sealed",
            expires_at=datetime.now(UTC) + timedelta(hours=1),
        )
        session.add(connection)
        await session.flush()
        connection_id = connection.id
    ids = {
        "workspace_id": str(caller.workspace_id),
        "bot_id": bot["bot_id"],
        "bot_id:int": str(scheduled["id"]),
        "meeting_id": str(bot["id"]),
        "invitation_id": invitation["id"],
        "key_id": str(extra_key.key_id),
        "connection_id": str(connection_id),
        "endpoint_id": endpoint["id"],
    }
    markers = [
        bot["bot_id"],
        scheduled["bot_id"],
        prompt["id"],
        endpoint["id"],
        invitation["id"],
        zoom_user,
        extra_key.key[:12],
    ]
    return Estate(caller=caller, ids=ids, markers=markers)


def api_routes(app: web.Application) -> Iterator[tuple[str, str, RouteSpec | None]]:
    """Every (method, path template, spec) of the router, HEAD and non-API routes left out."""
    specs = app[ROUTE_SPECS]
    for route in app.router.routes():
        if route.method == "HEAD" or route.resource is None:
            continue
        path = route.resource.canonical
        if NOT_API.match(path):
            continue
        yield route.method, path, specs.get((route.method, path))


def _fill(path: str, spec: RouteSpec | None, ids: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        kind = spec.path_types.get(name) if spec is not None else None
        key = f"{name}:int" if kind is int and f"{name}:int" in ids else name
        assert key in ids, f"the sweep has no value for path parameter {name!r} of {path}"
        return ids[key]

    return re.sub(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", value, path)


async def _call(
    client: Client, method: str, template: str, path: str, headers: dict[str, str]
) -> tuple[int, dict[str, Any]]:
    body = BODIES.get((method, template))
    if body is None and method in {"POST", "PUT", "PATCH"}:
        body = {}
    response = await client.request(method, path, json=body, headers=headers)
    text = await response.text()
    payload: dict[str, Any] = {}
    if response.content_type == "application/problem+json":
        payload = await response.json()
    return response.status, payload | {"_text": text}


def test_public_routes_are_exactly_the_allow_list(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path, launcher="memory"))
    public = {(m, p) for m, p, spec in api_routes(app) if spec is None or not spec.auth}
    assert public == PUBLIC


async def test_other_workspace_ids_are_404_and_lists_do_not_leak(
    client: Client, tenants: Tenants
) -> None:
    mine = await _furnish(client, tenants, await tenants.workspace("A"))
    theirs = await _furnish(client, tenants, await tenants.workspace("B"))
    failures: list[str] = []
    calls = 0
    for method, template, spec in api_routes(client.app):
        if (method, template) in PUBLIC:
            continue
        if "{" not in template:
            if method != "GET":
                continue
            status, payload = await _call(client, method, template, template, mine.caller.headers)
            leaked = [marker for marker in theirs.markers if marker in payload["_text"]]
            if leaked:
                failures.append(f"{method} {template} lists B's {leaked}")
            calls += 1
            continue
        path = _fill(template, spec, theirs.ids)
        status, payload = await _call(client, method, template, path, mine.caller.headers)
        calls += 1
        expected = 403 if template.startswith(WORKSPACE_PATH) else 404
        expected = FIXED_STATUS.get((method, template), expected)
        if status != expected:
            failures.append(f"{method} {template}: {status} {payload.get('code')} != {expected}")
        elif expected == 403 and payload.get("code") != "not_a_member":
            failures.append(f"{method} {template}: 403 with code {payload.get('code')}")
    assert not failures, "\n".join(failures)
    assert calls >= 30

    # Nothing of B was changed by A's attempts.
    b = theirs.caller
    assert (
        await client.get(f"/api/v1/bots/{theirs.ids['bot_id']}", headers=b.headers)
    ).status == 200
    keys = await (await client.get("/api/v1/api-keys", headers=b.headers)).json()
    assert int(theirs.ids["key_id"]) in {key["id"] for key in keys}
    invitations = await (
        await client.get(f"/api/v1/workspaces/{b.workspace_id}/invitations", headers=b.headers)
    ).json()
    assert [item["id"] for item in invitations] == [theirs.ids["invitation_id"]]
    scheduled = await client.get("/api/v1/bots/schedule", headers=b.headers)
    assert theirs.markers[1] in await scheduled.text()
    del mine


async def test_read_keys_may_only_read_and_subscribe(client: Client, tenants: Tenants) -> None:
    estate = await _furnish(client, tenants, await tenants.workspace())
    reader = await tenants.key(estate.caller, permission=Permission.READ)
    failures: list[str] = []
    for method, template, spec in api_routes(client.app):
        if (method, template) in PUBLIC or spec is None:
            continue
        path = _fill(template, spec, estate.ids)
        status, payload = await _call(client, method, template, path, reader.headers)
        refused = status == 403 and payload.get("code") == "read_only_key"
        if spec.allows_read_key and refused:
            failures.append(f"{method} {template}: read key refused")
        if not spec.allows_read_key and not refused:
            failures.append(f"{method} {template}: {status} {payload.get('code')}, not 403")
    assert not failures, "\n".join(failures)


async def test_members_are_refused_owner_only_routes(client: Client, tenants: Tenants) -> None:
    estate = await _furnish(client, tenants, await tenants.workspace())
    member = await tenants.member(estate.caller)
    failures: list[str] = []
    owner_only = 0
    for method, template, spec in api_routes(client.app):
        if not template.startswith(WORKSPACE_PATH):
            continue
        path = _fill(template, spec, estate.ids)
        status, payload = await _call(client, method, template, path, member.headers)
        if (method, template) in MEMBER_ALLOWED:
            if status >= 400:
                failures.append(f"{method} {template}: member got {status}")
            continue
        owner_only += 1
        if status != 403 or payload.get("code") != "owner_required":
            failures.append(f"{method} {template}: {status} {payload.get('code')}")
    assert not failures, "\n".join(failures)
    assert owner_only >= 3
