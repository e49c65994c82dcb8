"""The embedded provider through the real API: endpoints, signed delivery, retries, restarts.

Every test runs on SQLite and PostgreSQL (the API fixtures), with a real HTTP receiver on
loopback (allowed by ``webhook_allow_private``/``webhook_allow_http``) and a retry schedule
shortened to 0.2 s.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient
from sqlalchemy import select, update
from standardwebhooks.webhooks import Webhook

from agent.contracts.status import BotStatus
from control_plane.app import create_app
from control_plane.bots import status as status_service
from control_plane.bots.status import lock_meeting
from control_plane.db.engine import DB, Database, create_database
from control_plane.db.models.bot import Meeting
from control_plane.db.models.webhook import (
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookMessage,
)
from control_plane.enums import Role
from control_plane.hooks import STATUS_HOOKS
from control_plane.launchers.memory import MemoryLauncher
from control_plane.settings import Settings
from control_plane.token_cipher import KEY_FILE_NAME, TokenCipher
from control_plane.webhooks.embedded import EmbeddedProvider
from control_plane.webhooks.events import EventType, TranscriptionReady
from control_plane.webhooks.outbox import emit
from control_plane.webhooks.wiring import WEBHOOK_PROVIDER, status_changed_hook, target_policy
from tests.plugins.api_app import Caller, Tenants
from tests.plugins.webhooks import Receiver

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]


def hooks_path(caller: Caller) -> str:
    return f"/api/v1/workspaces/{caller.workspace_id}/webhooks"


async def create_endpoint(client: Client, caller: Caller, **body: Any) -> dict[str, Any]:
    response = await client.post(hooks_path(caller), json=body, headers=caller.headers)
    assert response.status == 201, await response.text()
    created: dict[str, Any] = await response.json()
    return created


async def secret_of(client: Client, caller: Caller, endpoint_id: str) -> str:
    response = await client.get(
        f"{hooks_path(caller)}/{endpoint_id}/secret", headers=caller.headers
    )
    assert response.status == 200
    key: str = (await response.json())["key"]
    return key


async def logs_when(
    client: Client, url: str, caller: Caller, done: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    """The delivery log once ``done`` holds for it (the result is stored after the receiver
    answered, so the log can lag the receiver by a moment)."""
    async with asyncio.timeout(10):
        while True:
            response = await client.get(url, headers=caller.headers)
            assert response.status == 200
            logs: list[dict[str, Any]] = await response.json()
            if done(logs):
                return logs
            await asyncio.sleep(0.05)


async def new_meeting(database: Database, workspace_id: uuid.UUID | None) -> Meeting:
    assert workspace_id is not None
    async with database.sessions.begin() as session:
        meeting = Meeting(
            workspace_id=workspace_id,
            platform="google_meet",
            native_meeting_id="abc-defg-hij",
            constructed_meeting_url="https://meet.google.com/abc-defg-hij",
            status="requested",
        )
        session.add(meeting)
    return meeting


async def change_status(
    database: Database, hooks: list[Any], meeting: Meeting, status: str, reason: str
) -> None:
    """Move the bot through the real status-change service (row, audit row, hooks: one
    transaction)."""
    async with database.sessions.begin() as session:
        row = await lock_meeting(session, meeting_id=meeting.id)
        assert row is not None
        await status_service.change_status(session, row, BotStatus(status), reason, hooks=hooks)


async def test_endpoint_crud_and_validation(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    created = await create_endpoint(
        client,
        owner,
        url="https://example.com/hook",
        description="ops",
        filter_types=["bot.status_changed"],
    )
    assert created["id"].startswith("ep_")
    assert created["filter_types"] == ["bot.status_changed"]
    assert created["disabled"] is False
    assert created["created_at"].endswith("Z")
    one = f"{hooks_path(owner)}/{created['id']}"

    listed = await client.get(hooks_path(owner), headers=owner.headers)
    assert [item["id"] for item in await listed.json()] == [created["id"]]
    assert (await secret_of(client, owner, created["id"])).startswith("whsec_")

    patched = await client.patch(
        one,
        json={"filter_types": ["transcription.ready", "recording.ready"], "description": "x"},
        headers=owner.headers,
    )
    assert patched.status == 200
    body = await patched.json()
    assert body["filter_types"] == ["transcription.ready", "recording.ready"]
    assert body["description"] == "x" and body["url"] == "https://example.com/hook"

    unknown = await client.patch(
        one, json={"filter_types": ["bot.exploded"]}, headers=owner.headers
    )
    assert unknown.status == 422
    assert (await unknown.json())["code"] == "unknown_event_type"
    unknown = await client.post(
        hooks_path(owner),
        json={"url": "https://example.com/h", "filter_types": ["nope"]},
        headers=owner.headers,
    )
    assert unknown.status == 422
    typo = await client.post(
        hooks_path(owner),
        json={"url": "https://example.com/h", "filters": []},
        headers=owner.headers,
    )
    assert typo.status == 422

    member = await tenants.member(owner, role=Role.MEMBER)
    assert (await client.get(hooks_path(member), headers=member.headers)).status == 403
    assert (await client.patch(one, json={}, headers=member.headers)).status == 403

    other = await tenants.workspace("Other")
    foreign = f"{hooks_path(other)}/{created['id']}"
    for method in ("GET", "PATCH", "DELETE"):
        kwargs: dict[str, Any] = {"json": {}} if method == "PATCH" else {}
        response = await client.request(method, foreign, headers=other.headers, **kwargs)
        assert response.status == 404, method
        assert (await response.json())["code"] == "webhook_endpoint_not_found"
    # Somebody else's workspace path: 403, as Part 1's workspace paths.
    assert (await client.get(hooks_path(other), headers=owner.headers)).status == 403

    assert (await client.delete(one, headers=owner.headers)).status == 204
    assert (await client.get(one, headers=owner.headers)).status == 404


async def test_default_policy_refuses_http_and_loopback_urls(
    settings: Settings,
    database_url: str,
    tmp_path: Any,
    tenants: Tenants,
    aiohttp_client: AiohttpClient,
) -> None:
    # A replica of its own data folder shares the deployment's token encryption key.
    cipher_key = (settings.data_dir / KEY_FILE_NAME).read_text().strip()
    strict = create_app(
        Settings(
            database_url=database_url,
            data_dir=tmp_path / "strict",
            launcher="memory",
            token_encryption_key=cipher_key,
        ),
        launcher=MemoryLauncher(),
    )
    client = await aiohttp_client(strict)
    owner = await tenants.workspace()
    for url in (
        "http://example.com/hook",
        "https://127.0.0.1/hook",
        "https://localhost/hook",
        "https://[::1]/hook",
        "https://169.254.169.254/latest",
    ):
        response = await client.post(hooks_path(owner), json={"url": url}, headers=owner.headers)
        assert response.status == 422, url
        assert (await response.json())["code"] == "webhook_url_not_allowed"


async def test_status_change_is_delivered_signed_and_filtered(
    client: Client, owner: Caller, receiver: Receiver
) -> None:
    statuses = await create_endpoint(
        client, owner, url=receiver.url("/status"), filter_types=["bot.status_changed"]
    )
    everything = await create_endpoint(client, owner, url=receiver.url("/all"))
    transcripts = await create_endpoint(
        client, owner, url=receiver.url("/transcripts"), filter_types=["transcription.ready"]
    )
    database = client.app[DB]
    meeting = await new_meeting(database, owner.workspace_id)
    await change_status(database, client.app[STATUS_HOOKS], meeting, "joining", "join_started")

    [delivered] = await receiver.wait_for("/status", 1)
    payload = Webhook(await secret_of(client, owner, statuses["id"])).verify(
        delivered.body, delivered.headers
    )
    assert payload["type"] == "bot.status_changed"
    assert payload["data"] == {
        "bot_id": str(meeting.bot_id),
        "meeting_id": meeting.id,
        "status": "joining",
        "previous_status": "requested",
        "status_reason": "join_started",
    }
    assert delivered.headers["webhook-id"].startswith("msg_")
    [copy] = await receiver.wait_for("/all", 1)
    assert copy.headers["webhook-id"] == delivered.headers["webhook-id"]
    Webhook(await secret_of(client, owner, everything["id"])).verify(copy.body, copy.headers)

    async with database.sessions.begin() as session:
        await emit(
            session,
            meeting.workspace_id,
            EventType.TRANSCRIPTION_READY,
            TranscriptionReady(
                bot_id=str(meeting.bot_id),
                meeting_id=meeting.id,
                tier="realtime",
                segment_count=3,
            ),
        )
    [ready] = await receiver.wait_for("/transcripts", 1)
    Webhook(await secret_of(client, owner, transcripts["id"])).verify(ready.body, ready.headers)
    assert ready.json()["data"]["segment_count"] == 3
    await receiver.wait_for("/all", 2)
    # The filters held: no status change reached /transcripts, no transcript reached /status.
    assert [r.json()["type"] for r in receiver.at("/transcripts")] == ["transcription.ready"]
    assert [r.json()["type"] for r in receiver.at("/status")] == ["bot.status_changed"]


async def test_failed_attempt_is_retried_with_the_same_webhook_id_and_logged(
    client: Client, owner: Caller, receiver: Receiver
) -> None:
    endpoint = await create_endpoint(client, owner, url=receiver.url("/flaky"))
    receiver.script["/flaky"] = [500]
    database = client.app[DB]
    meeting = await new_meeting(database, owner.workspace_id)
    await change_status(database, client.app[STATUS_HOOKS], meeting, "joining", "join_started")

    first, second = await receiver.wait_for("/flaky", 2)
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert first.body == second.body
    secret = await secret_of(client, owner, endpoint["id"])
    Webhook(secret).verify(second.body, second.headers)

    logs_url = f"{hooks_path(owner)}/{endpoint['id']}/logs"
    logs = await logs_when(
        client, logs_url, owner, lambda got: len(got) == 2 and got[0]["status"] != 3
    )
    assert [(entry["status"], entry["response_status_code"]) for entry in logs] == [
        (0, 200),
        (2, 500),
    ]
    assert {entry["msg_id"] for entry in logs} == {first.headers["webhook-id"]}
    assert all(entry["id"].startswith("atmpt_") for entry in logs)
    limited = await client.get(logs_url, params={"limit": "1"}, headers=owner.headers)
    assert len(await limited.json()) == 1
    metrics = await (await client.get("/metrics")).text()
    assert 'meetbot_webhook_attempts_total{outcome="failed"} 1.0' in metrics
    assert 'meetbot_webhook_attempts_total{outcome="success"} 1.0' in metrics
    assert "meetbot_webhook_messages_relayed_total 1.0" in metrics


async def test_restart_between_state_change_and_delivery_delivers_each_event_once(
    client: Client,
    settings: Settings,
    owner: Caller,
    receiver: Receiver,
    aiohttp_client: AiohttpClient,
) -> None:
    await create_endpoint(client, owner, url=receiver.url("/restart"))
    await client.close()  # the control plane goes down; its worker is cancelled

    # While it is down, state changes commit with their events (as a crash right after the
    # commit would leave them) …
    database = create_database(settings.effective_database_url)
    try:
        meeting = await new_meeting(database, owner.workspace_id)
        hooks = [status_changed_hook]
        await change_status(database, hooks, meeting, "joining", "join_started")
        await change_status(database, hooks, meeting, "active", "admitted")
        # … and a state change whose event was already being sent when the process died: its
        # delivery is "sending" under a lease that has expired.
        await change_status(database, hooks, meeting, "stopping", "stopped_by_api")
        async with database.sessions.begin() as session:
            endpoint = await session.scalar(select(WebhookEndpoint))
            newest = await session.scalar(
                select(WebhookMessage).order_by(WebhookMessage.created_at.desc()).limit(1)
            )
            assert endpoint is not None and newest is not None
            newest.dispatched_at = datetime.now(UTC)
            session.add(
                WebhookDelivery(
                    message_id=newest.id,
                    endpoint_id=endpoint.id,
                    status=3,
                    lease_until=datetime.now(UTC) - timedelta(seconds=1),
                )
            )
    finally:
        await database.dispose()

    restarted = await aiohttp_client(create_app(settings, launcher=MemoryLauncher()))
    await receiver.wait_for("/restart", 3)
    async with asyncio.timeout(10):
        while True:
            async with restarted.app[DB].sessions() as session:
                states = (await session.scalars(select(WebhookDelivery.status))).all()
            if len(states) == 3 and set(states) == {0}:
                break
            await asyncio.sleep(0.05)
    got = receiver.at("/restart")
    ids = [item.headers["webhook-id"] for item in got]
    assert len(ids) == 3 and len(set(ids)) == 3
    # Delivery order is not part of the contract (receivers order by ``timestamp``).
    assert sorted(item.json()["data"]["status"] for item in got) == [
        "active",
        "joining",
        "stopping",
    ]


async def test_endpoint_failing_for_five_days_is_disabled(
    client: Client, owner: Caller, receiver: Receiver
) -> None:
    endpoint = await create_endpoint(client, owner, url=receiver.url("/down"))
    receiver.script["/down"] = [503] * 10
    database = client.app[DB]
    async with database.sessions.begin() as session:
        await session.execute(
            update(WebhookEndpoint)
            .where(WebhookEndpoint.id == endpoint["id"])
            .values(failing_since=datetime.now(UTC) - timedelta(days=5, minutes=1))
        )
    meeting = await new_meeting(database, owner.workspace_id)
    await change_status(database, client.app[STATUS_HOOKS], meeting, "joining", "join_started")
    one = f"{hooks_path(owner)}/{endpoint['id']}"
    logs = await logs_when(
        client, one + "/logs", owner, lambda got: bool(got) and got[0]["status"] == 2
    )
    assert [(entry["status"], entry["response_status_code"]) for entry in logs] == [(2, 503)]
    assert (await (await client.get(one, headers=owner.headers)).json())["disabled"] is True
    async with database.sessions() as session:
        assert (await session.scalars(select(WebhookDelivery.status))).all() == [2]
    # No retry goes to a disabled endpoint, and the owner can switch it back on.
    assert len(receiver.at("/down")) == 1
    enabled = await client.patch(one, json={"disabled": False}, headers=owner.headers)
    assert (await enabled.json())["disabled"] is False


async def test_openapi_lists_the_event_catalogue_and_the_routes(client: Client) -> None:
    document = await (await client.get("/api/v1/openapi.json")).json()
    assert set(document["webhooks"]) == {event.value for event in EventType}
    assert "WebhookBotStatusChanged" in document["components"]["schemas"]
    logs = document["paths"]["/api/v1/workspaces/{workspace_id}/webhooks/{endpoint_id}/logs"]
    assert "200" in logs["get"]["responses"]


async def test_bot_launch_and_stop_through_the_api_reach_the_receiver(
    client: Client, owner: Caller, receiver: Receiver
) -> None:
    endpoint = await create_endpoint(
        client, owner, url=receiver.url("/bots"), filter_types=["bot.status_changed"]
    )
    launched = await client.post(
        "/api/v1/bots",
        json={"platform": "google_meet", "meeting_url": "https://meet.google.com/abc-defg-hij"},
        headers=owner.headers,
    )
    assert launched.status == 201, await launched.text()
    bot = await launched.json()
    stopped = await client.delete(f"/api/v1/bots/{bot['bot_id']}", headers=owner.headers)
    assert stopped.status == 202
    # A bot stopped before any agent ran ends at once: three changes. Delivery order is not
    # promised (the worker sends a batch concurrently), so wait for all three and sort.
    got = await receiver.wait_for("/bots", 3)
    verifier = Webhook(await secret_of(client, owner, endpoint["id"]))
    order = ["requested", "stopping", "completed"]
    events = sorted(
        (verifier.verify(item.body, item.headers)["data"] for item in got),
        key=lambda data: order.index(data["status"]),
    )
    changes = [(e["previous_status"], e["status"]) for e in events]
    assert changes == [
        (None, "requested"),
        ("requested", "stopping"),
        ("stopping", "completed"),
    ], changes
    assert {e["bot_id"] for e in events} == {bot["bot_id"]}
    assert {e["meeting_id"] for e in events} == {bot["id"]}


async def test_delivery_does_not_follow_redirects(
    client: Client, owner: Caller, receiver: Receiver
) -> None:
    endpoint = await create_endpoint(client, owner, url=receiver.url("/moved"))
    receiver.script["/moved"] = [307, 302, 301]
    meeting = await new_meeting(client.app[DB], owner.workspace_id)
    await change_status(
        client.app[DB], client.app[STATUS_HOOKS], meeting, "joining", "join_started"
    )
    logs = await logs_when(
        client,
        f"{hooks_path(owner)}/{endpoint['id']}/logs",
        owner,
        lambda got: len(got) == 4 and got[0]["status"] == 0,
    )
    assert [(e["status"], e["response_status_code"]) for e in logs] == [
        (0, 200),
        (2, 301),
        (2, 302),
        (2, 307),
    ]
    assert receiver.at("/redirected") == []


async def test_guard_refuses_a_stored_loopback_target_at_delivery_time(
    settings: Settings, receiver: Receiver, aiohttp_client: AiohttpClient
) -> None:
    """An endpoint saved while private targets were allowed (or whose name now resolves
    inward) is refused when delivering under the default policy: the guard runs per attempt."""
    strict = settings.model_copy(update={"webhook_allow_private": False})
    client = await aiohttp_client(create_app(strict, launcher=MemoryLauncher()))
    owner = await Tenants(client.app[DB]).workspace()
    async with client.app[DB].sessions.begin() as session:
        session.add(
            WebhookEndpoint(
                id="ep_stored",
                workspace_id=owner.workspace_id,
                url=f"http://localhost:{receiver.server.port}/inside",
                description="",
                filter_types=[],
                secret="whsec_" + "A" * 32,
                disabled=False,
            )
        )
    meeting = await new_meeting(client.app[DB], owner.workspace_id)
    await change_status(
        client.app[DB], client.app[STATUS_HOOKS], meeting, "joining", "join_started"
    )
    logs = await logs_when(
        client,
        f"{hooks_path(owner)}/ep_stored/logs",
        owner,
        lambda got: bool(got) and got[0]["status"] == 2,
    )
    assert (logs[0]["status"], logs[0]["response_status_code"]) == (2, 0)
    assert receiver.received == []


async def test_messages_past_retention_are_swept_with_their_log(
    client: Client, owner: Caller
) -> None:
    provider = client.app[WEBHOOK_PROVIDER]
    assert isinstance(provider, EmbeddedProvider)
    endpoint = await create_endpoint(client, owner, url="https://example.com/hook")
    old = datetime.now(UTC) - timedelta(days=31)
    async with client.app[DB].sessions.begin() as session:
        for message_id, created, status in (
            ("msg_old_done", old, 0),
            ("msg_old_retrying", old, 1),
            ("msg_recent", datetime.now(UTC), 0),
        ):
            session.add(
                WebhookMessage(
                    id=message_id,
                    workspace_id=owner.workspace_id,
                    event_type="bot.status_changed",
                    body="{}",
                    created_at=created,
                    dispatched_at=created,
                )
            )
            await session.flush()
            delivery = WebhookDelivery(
                message_id=message_id,
                endpoint_id=endpoint["id"],
                status=status,
                next_attempt_at=datetime.now(UTC) + timedelta(days=1) if status == 1 else None,
            )
            session.add(delivery)
            await session.flush()
            session.add(
                WebhookAttempt(
                    id=f"atmpt_{message_id}",
                    delivery_id=delivery.id,
                    message_id=message_id,
                    endpoint_id=endpoint["id"],
                    status=2,
                    response_status_code=500,
                    response_duration_ms=1,
                    timestamp=created,
                )
            )
    assert await provider.worker.sweep() == 1
    async with client.app[DB].sessions() as session:
        left = set((await session.scalars(select(WebhookMessage.id))).all())
        attempts = set((await session.scalars(select(WebhookAttempt.message_id))).all())
    assert left == attempts == {"msg_old_retrying", "msg_recent"}


async def test_two_replicas_on_one_database_deliver_each_message_once(
    client: Client, settings: Settings, owner: Caller, receiver: Receiver
) -> None:
    await create_endpoint(client, owner, url=receiver.url("/replicas"))
    # A second control-plane process on the same database: its own engine and worker.
    other = create_database(settings.effective_database_url)
    replica = EmbeddedProvider(
        other.sessions,
        retry_schedule=settings.webhook_retry_schedule,
        policy=target_policy(settings),
        cipher=TokenCipher.from_settings(settings),  # the deployment's key, as the app's
        poll_interval=0.01,
    )
    task = asyncio.create_task(replica.run())
    try:
        meeting = await new_meeting(client.app[DB], owner.workspace_id)
        async with client.app[DB].sessions.begin() as session:
            for count in range(60):
                await emit(
                    session,
                    meeting.workspace_id,
                    EventType.TRANSCRIPTION_READY,
                    TranscriptionReady(
                        bot_id=str(meeting.bot_id),
                        meeting_id=meeting.id,
                        tier="deferred",
                        segment_count=count,
                    ),
                )
        await receiver.wait_for("/replicas", 60)
        async with asyncio.timeout(10):
            while True:
                async with client.app[DB].sessions() as session:
                    states = (await session.scalars(select(WebhookDelivery.status))).all()
                if len(states) == 60 and set(states) == {0}:
                    break
                await asyncio.sleep(0.05)
    finally:
        replica.stop()
        await task
        await other.dispose()
    ids = [item.headers["webhook-id"] for item in receiver.at("/replicas")]
    assert len(ids) == 60 and len(set(ids)) == 60


async def test_event_emitted_in_a_rolled_back_transaction_is_neither_stored_nor_an_error(
    client: Client, owner: Caller
) -> None:
    database = client.app[DB]
    meeting = await new_meeting(database, owner.workspace_id)

    class Abort(Exception):
        pass

    with pytest.raises(Abort):
        async with database.sessions.begin() as session:
            await emit(
                session,
                meeting.workspace_id,
                EventType.TRANSCRIPTION_READY,
                TranscriptionReady(
                    bot_id=str(meeting.bot_id),
                    meeting_id=meeting.id,
                    tier="realtime",
                    segment_count=1,
                ),
            )
            raise Abort
    async with database.sessions() as session:
        stored = await session.scalars(
            select(WebhookMessage).where(WebhookMessage.workspace_id == meeting.workspace_id)
        )
        assert list(stored) == []
