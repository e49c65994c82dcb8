"""The ``svix`` provider: the real ``svix`` SDK against the local Svix-API server.

Shown: event types registered at start-up, endpoint create/patch/get/list/secret/delete mapped
to Svix, the outbox relayed as Svix messages that reach a real receiver signed with the
endpoint's secret, delivery logs from Svix's attempts, and the error mapping (Svix 422 → 422,
Svix failure → 502 ``webhook_provider_error``, no key → 503 ``webhook_provider_not_configured``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from pytest_aiohttp import AiohttpClient
from standardwebhooks.webhooks import Webhook

from control_plane.app import create_app
from control_plane.db.engine import DB
from control_plane.hooks import STATUS_HOOKS
from control_plane.launchers.memory import MemoryLauncher
from control_plane.settings import Settings
from control_plane.webhooks.events import EVENT_TYPE_NAMES
from tests.plugins.api_app import Caller, Tenants
from tests.plugins.webhooks import Receiver
from tests.webhooks.svix_api import SvixApiServer
from tests.webhooks.test_embedded import change_status, hooks_path, new_meeting

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]
SVIX_TOKEN = "testsk_meetbot.local"


@pytest.fixture
async def svix_api() -> AsyncIterator[tuple[SvixApiServer, TestServer]]:
    api = SvixApiServer(SVIX_TOKEN)
    server = TestServer(api.app(), host="127.0.0.1")
    await server.start_server()
    yield api, server
    await server.close()


@pytest.fixture
def settings(
    database_url: str, tmp_path: Path, svix_api: tuple[SvixApiServer, TestServer]
) -> Settings:
    """The app under test uses the svix provider pointed at the local Svix API."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        webhook_provider="svix",
        webhook_allow_http=True,
        webhook_allow_private=True,
        svix_api_key=SVIX_TOKEN,
        svix_server_url=str(svix_api[1].make_url("")).rstrip("/"),
        webhook_poll_interval_seconds=0.05,
    )


async def until(check: Callable[[], bool]) -> None:
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached within 10 s")


async def test_endpoints_messages_and_logs_go_through_svix(
    client: Client,
    owner: Caller,
    receiver: Receiver,
    svix_api: tuple[SvixApiServer, TestServer],
) -> None:
    api, _ = svix_api
    await until(lambda: set(api.event_types) == EVENT_TYPE_NAMES)
    assert api.event_types["bot.status_changed"]["schemas"]["1"]["properties"]["data"]

    created = await client.post(
        hooks_path(owner),
        json={"url": receiver.url("/first"), "filter_types": ["transcription.ready"]},
        headers=owner.headers,
    )
    assert created.status == 201, await created.text()
    endpoint: dict[str, Any] = await created.json()
    one = f"{hooks_path(owner)}/{endpoint['id']}"
    [app] = api.apps.values()
    assert app.uid == str(owner.workspace_id)
    assert app.endpoints[endpoint["id"]]["eventTypes"] == ["transcription.ready"]

    patched = await client.patch(
        one,
        json={"url": receiver.url("/svix"), "filter_types": ["bot.status_changed"]},
        headers=owner.headers,
    )
    assert patched.status == 200
    assert (await patched.json())["filter_types"] == ["bot.status_changed"]
    assert app.endpoints[endpoint["id"]]["url"] == receiver.url("/svix")
    assert app.endpoints[endpoint["id"]]["eventTypes"] == ["bot.status_changed"]
    listed = await (await client.get(hooks_path(owner), headers=owner.headers)).json()
    assert [item["id"] for item in listed] == [endpoint["id"]]
    secret = (await (await client.get(one + "/secret", headers=owner.headers)).json())["key"]
    assert secret.startswith("whsec_")

    meeting = await new_meeting(client.app[DB], owner.workspace_id)
    await change_status(
        client.app[DB], client.app[STATUS_HOOKS], meeting, "joining", "join_started"
    )
    [delivered] = await receiver.wait_for("/svix", 1)
    payload = Webhook(secret).verify(delivered.body, delivered.headers)
    assert payload["data"]["status"] == "joining"
    [message] = app.messages.values()
    assert message["eventId"].startswith("msg_")  # the outbox row id: relays are idempotent

    await api.settle()
    logs = await (await client.get(one + "/logs", headers=owner.headers)).json()
    assert [(entry["status"], entry["response_status_code"]) for entry in logs] == [(0, 200)]
    assert logs[0]["msg_id"] == delivered.headers["webhook-id"]

    assert (await client.delete(one, headers=owner.headers)).status == 204
    assert (await client.get(one, headers=owner.headers)).status == 404


async def test_svix_errors_map_to_422_404_and_502(
    client: Client,
    owner: Caller,
    tenants: Tenants,
    svix_api: tuple[SvixApiServer, TestServer],
) -> None:
    api, _ = svix_api
    await until(lambda: set(api.event_types) == EVENT_TYPE_NAMES)
    # Svix lost an event type we know: its 422 becomes ours.
    del api.event_types["participant.left"]
    rejected = await client.post(
        hooks_path(owner),
        json={"url": "https://example.com/hook", "filter_types": ["participant.left"]},
        headers=owner.headers,
    )
    assert rejected.status == 422
    problem = await rejected.json()
    assert problem["code"] == "unknown_event_type"
    assert problem["errors"][0]["loc"] == ["body", "eventTypes"]

    created = await client.post(
        hooks_path(owner), json={"url": "https://example.com/hook"}, headers=owner.headers
    )
    endpoint_id = (await created.json())["id"]
    other = await tenants.workspace("Other")
    foreign = await client.get(f"{hooks_path(other)}/{endpoint_id}", headers=other.headers)
    assert foreign.status == 404
    assert (await foreign.json())["code"] == "webhook_endpoint_not_found"

    api.fail_with = 500
    for method, path, body in (
        ("GET", hooks_path(owner), None),
        ("PATCH", f"{hooks_path(owner)}/{endpoint_id}", {"description": "x"}),
        ("GET", f"{hooks_path(owner)}/{endpoint_id}/logs", None),
    ):
        failed = await client.request(method, path, json=body, headers=owner.headers)
        assert failed.status == 502, method
        assert (await failed.json())["code"] == "webhook_provider_error"


async def test_svix_without_a_key_answers_503(
    settings: Settings, aiohttp_client: AiohttpClient
) -> None:
    keyless = create_app(
        settings.model_copy(update={"svix_api_key": ""}), launcher=MemoryLauncher()
    )
    client = await aiohttp_client(keyless)
    owner = await Tenants(client.app[DB]).workspace()
    for method, path in (
        ("POST", hooks_path(owner)),
        ("GET", hooks_path(owner)),
        ("GET", f"{hooks_path(owner)}/ep_x/logs"),
    ):
        body = {"url": "https://example.com/hook"} if method == "POST" else None
        response = await client.request(method, path, json=body, headers=owner.headers)
        assert response.status == 503, path
        assert response.headers["Retry-After"] == "300"
        assert (await response.json())["code"] == "webhook_provider_not_configured"
