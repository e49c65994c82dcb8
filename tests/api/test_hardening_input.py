"""Issue 18 findings 2–4: no input answers 500.

Deeply nested JSON (400 ``malformed_json``, also on the unauthenticated invitation accept),
timestamps whose conversion to UTC overflows (422/400, every timestamp input) and integers
beyond their column (422) are refused as problem+json, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]

DEEP = "[" * 100_000 + "]" * 100_000
OVERFLOWING = "0001-01-01T00:00:00+14:00"
FAR_FUTURE = "9999-12-31T23:59:59-14:00"


async def _problem(response: Any, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status == status, await response.text()
    assert response.content_type == "application/problem+json"
    body: dict[str, Any] = await response.json()
    assert body["status"] == status
    if code is not None:
        assert body["code"] == code
    return body


@pytest.mark.parametrize(
    ("method", "path", "auth"),
    [
        ("POST", "/api/v1/invitations/accept", False),
        ("POST", "/api/v1/bots", True),
        ("POST", "/api/v1/bots/schedule", True),
        ("POST", "/api/v1/api-keys", True),
        ("POST", "/api/v1/workspaces/{workspace}/webhooks", True),
    ],
)
async def test_deeply_nested_json_is_malformed_not_500(
    client: Client, owner: Caller, method: str, path: str, auth: bool
) -> None:
    headers = {"Content-Type": "application/json", **(owner.headers if auth else {})}
    path = path.format(workspace=owner.workspace_id)
    for body in (DEEP, '{"a":' + DEEP + "}", '{"a":' + "[" * 40 + "]" * 40 + "}"):
        response = await client.request(method, path, data=body, headers=headers)
        await _problem(response, 400, "malformed_json")


async def test_overflowing_timestamps_are_refused(client: Client, owner: Caller) -> None:
    for path in ("/api/v1/meetings", "/api/v1/bots"):
        for name in ("date_from", "date_to"):
            for value in (OVERFLOWING, FAR_FUTURE):
                response = await client.get(path, params={name: value}, headers=owner.headers)
                await _problem(response, 400, "invalid_date")
    bot = {"platform": "google_meet", "native_meeting_id": "abc-defg-hij"}
    for value in (OVERFLOWING, FAR_FUTURE):
        response = await client.post(
            "/api/v1/bots", json={**bot, "scheduled_at": value}, headers=owner.headers
        )
        await _problem(response, 422)
        response = await client.post(
            "/api/v1/bots/schedule",
            json={**bot, "scheduled_start_at": value},
            headers=owner.headers,
        )
        await _problem(response, 422)
        response = await client.post(
            "/api/v1/api-keys", json={"name": "k", "expires_at": value}, headers=owner.headers
        )
        await _problem(response, 422)


async def test_integers_beyond_their_column_are_refused(client: Client, owner: Caller) -> None:
    bot = {"platform": "zoom", "native_meeting_id": "12345678901"}
    for value in (2**31, 2**63, 2**64, 10**400):
        response = await client.post(
            "/api/v1/bots", json={**bot, "zoom_connection_id": value}, headers=owner.headers
        )
        body = await _problem(response, 422)
        assert body["errors"][0]["loc"] == ["body", "zoom_connection_id"]
    for name in ("meeting_id", "offset", "limit"):
        response = await client.get(
            "/api/v1/meetings", params={name: str(2**63)}, headers=owner.headers
        )
        await _problem(response, 422)
