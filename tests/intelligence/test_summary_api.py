"""The summary at the end of a meeting (docs/api.md 2.14) through the real app and database:
the route and the full record, the ``summary.ready`` webhook, purge, ``enable_actions`` false,
exactly one summary across two workers, retries and failure, and the wait for the transcript:
finals the agent delivers after the bot is final are in the summary, and a summary whose
finals never come is written after the wait limit. The model is a real
OpenAI-compatible server whose answers the test scripts (:mod:`tests.intelligence.summary_llm`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from prometheus_client import CollectorRegistry
from sqlalchemy import func, select

from agent.contracts.link import Segment as SegmentOut
from agent.contracts.link import TranscriptionReady, TranscriptSegmentEvent
from agent.contracts.status import BotStatus
from control_plane.agent_hub.keys import AGENT_HUB
from control_plane.agent_link.frame_effects import LinkIdentity
from control_plane.agent_link.frames import FrameStore
from control_plane.bots.status import change_status, lock_meeting
from control_plane.db.engine import DB
from control_plane.db.models.summary import MeetingSummary
from control_plane.db.models.webhook import WebhookMessage
from control_plane.hooks import STATUS_HOOKS, StatusHook
from control_plane.intelligence.openai_chat import OpenAIChatModel
from control_plane.intelligence.summary_metrics import SummaryMetrics
from control_plane.intelligence.summary_worker import SummaryPolicy, SummaryWorker
from control_plane.settings import Settings
from control_plane.webhooks.outbox import Outbox
from control_plane.webhooks.wiring import OUTBOX
from tests.api.test_bots import MEET, launch
from tests.intelligence.chat_server import ChatServer
from tests.intelligence.summary_llm import chat_of, scripted_server, user_text
from tests.plugins.api_app import Caller, Tenants

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]
T0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
SAID = [
    ("Ada", "We agreed to ship the beta on Monday."),
    ("Ada", "Bob, can you write the release notes by Friday?"),
    ("Bob", "Sure, I will."),
]
ANSWER = {
    "summary": "The team agreed to ship the beta and split the release work.",
    "decisions": [{"text": "Ship the beta on Monday", "lines": [1]}],
    "action_items": [
        {"text": "Write the release notes", "owner": "Bob", "due": "Friday", "lines": [2, 3]},
        {"text": "Book a room", "owner": "Carol", "due": "2026-12-04", "lines": [1]},
    ],
}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Summaries due as soon as a meeting ends; the app's own workers idle.

    The test drives its own workers against the scripted server: the app's summary worker
    looks once at start (nothing is due yet) and then not for an hour, and the app's model is
    an endpoint that refuses connections, so nothing is loaded and no call reaches the server.
    """
    return settings.model_copy(
        update={
            "intelligence_summary_settle_seconds": 0.0,
            "intelligence_summary_poll_seconds": 3600.0,
            "intelligence_poll_seconds": 3600.0,
            "intelligence_provider": "openai",
            "intelligence_base_url": "http://127.0.0.1:9/v1",
        }
    )


@pytest.fixture
async def server() -> AsyncIterator[ChatServer]:
    async with scripted_server(lambda body: ANSWER) as scripted:
        yield scripted


def worker(client: Client, server: ChatServer, **policy: Any) -> SummaryWorker:
    return SummaryWorker(
        database=client.app[DB],
        chat=chat_of(server),
        outbox=Outbox(),
        policy=SummaryPolicy(**policy),
    )


def link_of(client: Client, who: Caller, bot: dict[str, Any]) -> FrameStore:
    """The control plane's half of the bot's agent link: frames stored as the link stores them."""
    app = client.app
    assert who.workspace_id is not None
    identity = LinkIdentity(
        meeting_id=int(bot["id"]), bot_id=uuid.UUID(bot["bot_id"]), workspace_id=who.workspace_id
    )
    return FrameStore(app[DB], app[AGENT_HUB], identity, app[STATUS_HOOKS], app[OUTBOX])


def final(index: int, speaker: str, text: str) -> TranscriptSegmentEvent:
    """The link frame of the meeting's ``index``-th final segment (3 s apart)."""
    return TranscriptSegmentEvent(
        segment=SegmentOut(
            id=f"seg-{index}",
            start=index * 3.0,
            end=index * 3.0 + 2.0,
            absolute_start_time=T0 + timedelta(seconds=index * 3),
            absolute_end_time=T0 + timedelta(seconds=index * 3 + 2),
            text=text,
            speaker=speaker,
            language="en",
        )
    )


async def ended_meeting(
    client: Client, who: Caller, *, enable_actions: bool = True, transcript_ready: bool = True
) -> int:
    """A bot whose meeting said :data:`SAID` and that then completed, as its agent reports:
    the finals, ``transcription_ready`` (unless ``transcript_ready`` is false: the agent was
    lost before it), then the statuses (the last ones through the status hooks)."""
    bot = await launch(client, who, **MEET, enable_actions=enable_actions)
    link = link_of(client, who, bot)
    for index, (speaker, text) in enumerate(SAID):
        assert await link.apply(final(index, speaker, text))
    if transcript_ready:
        assert await link.apply(TranscriptionReady(tier="realtime", segment_count=len(SAID)))
    async with client.app[DB].sessions.begin() as session:
        meeting = await lock_meeting(session, bot_id=uuid.UUID(bot["bot_id"]))
        assert meeting is not None
        hooks: list[StatusHook] = client.app[STATUS_HOOKS]
        for status in (
            BotStatus.JOINING,
            BotStatus.ACTIVE,
            BotStatus.STOPPING,
            BotStatus.COMPLETED,
        ):
            await change_status(session, meeting, status, "test", hooks=hooks)
    return int(bot["id"])


async def summary_messages(client: Client) -> list[dict[str, Any]]:
    async with client.app[DB].sessions() as session:
        bodies = await session.scalars(
            select(WebhookMessage.body).where(WebhookMessage.event_type == "summary.ready")
        )
        return [json.loads(body) for body in bodies]


async def test_the_summary_after_the_end_in_route_record_and_webhook_until_purged(
    client: Client, owner: Caller, tenants: Tenants, server: ChatServer
) -> None:
    bot = await launch(client, owner, **MEET, enable_actions=True)
    url = f"/api/v1/meetings/{bot['id']}/summary"
    response = await client.get(url, headers=owner.headers)
    assert (response.status, (await response.json())["code"]) == (409, "summary_pending")

    meeting_id = await ended_meeting(client, owner)
    url = f"/api/v1/meetings/{meeting_id}/summary"
    response = await client.get(url, headers=owner.headers)
    assert (response.status, (await response.json())["code"]) == (409, "summary_pending")
    record = await (
        await client.get(f"/api/v1/meetings/{meeting_id}", headers=owner.headers)
    ).json()
    assert record["summary"]["status"] == "pending" and record["summary"]["summary"] is None

    summaries = worker(client, server)
    try:
        assert await summaries.step() is True
        assert await summaries.step() is False  # written once: nothing more is due
    finally:
        await summaries.chat.aclose()
    assert len(server.requests) == 1 and summaries.ready == 1

    response = await client.get(url, headers=owner.headers)
    assert response.status == 200
    body = await response.json()
    assert body["status"] == "ready"
    assert body["summary"] == ANSWER["summary"]
    assert body["decisions"] == [{"text": "Ship the beta on Monday", "segment_ids": ["seg-0"]}]
    # Bob and Friday were said in the cited lines; Carol and the date were not.
    assert body["action_items"] == [
        {
            "text": "Write the release notes",
            "owner": "Bob",
            "due": "Friday",
            "segment_ids": ["seg-1", "seg-2"],
        },
        {"text": "Book a room", "owner": None, "due": None, "segment_ids": ["seg-0"]},
    ]
    assert body["model"] == "openai/scripted" and body["ready_at"].endswith("Z")
    record = await (
        await client.get(f"/api/v1/meetings/{meeting_id}", headers=owner.headers)
    ).json()
    assert record["summary"] == body

    [message] = await summary_messages(client)
    assert message["type"] == "summary.ready"
    assert message["data"]["meeting_id"] == meeting_id
    assert message["data"]["bot_id"] == record["bot_id"]
    assert message["data"]["action_items"] == body["action_items"]
    assert message["data"]["summary"] == body["summary"]

    stranger = await tenants.workspace("Other")
    response = await client.get(url, headers=stranger.headers)
    assert (response.status, (await response.json())["code"]) == (404, "meeting_not_found")

    response = await client.delete(f"/api/v1/meetings/{meeting_id}", headers=owner.headers)
    assert response.status == 200
    response = await client.get(url, headers=owner.headers)
    assert (response.status, (await response.json())["code"]) == (404, "summary_not_found")
    record = await (
        await client.get(f"/api/v1/meetings/{meeting_id}", headers=owner.headers)
    ).json()
    assert record["summary"] is None
    async with client.app[DB].sessions() as session:
        assert await session.scalar(select(func.count()).select_from(MeetingSummary)) == 0


async def test_without_enable_actions_there_is_no_summary_and_no_model_call(
    client: Client, owner: Caller, server: ChatServer
) -> None:
    meeting_id = await ended_meeting(client, owner, enable_actions=False)
    summaries = worker(client, server)
    try:
        assert await summaries.step() is False
    finally:
        await summaries.chat.aclose()
    assert server.requests == []
    response = await client.get(f"/api/v1/meetings/{meeting_id}/summary", headers=owner.headers)
    assert (response.status, (await response.json())["code"]) == (404, "summary_not_found")
    record = await (
        await client.get(f"/api/v1/meetings/{meeting_id}", headers=owner.headers)
    ).json()
    assert record["summary"] is None


async def test_two_workers_write_each_summary_once_even_after_a_lapsed_lease(
    client: Client, owner: Caller, server: ChatServer
) -> None:
    first_id = await ended_meeting(client, owner)
    one, two = worker(client, server), worker(client, server)
    try:
        now = datetime.now(UTC)
        assert await one.claim(now) == first_id
        assert await two.claim(now) is None  # the lease holds
        # The first worker stalls past its lease; the second takes the meeting and writes it.
        later = now + one.policy.lease + timedelta(seconds=1)
        assert await two.claim(later) == first_id
        await two.work(first_id)
        await one.work(first_id)  # its outcome is dropped: the row is not its claim any more
        second_id = await ended_meeting(client, owner)
        third_id = await ended_meeting(client, owner)
        worked = [await one.step(), await two.step(), await one.step(), await two.step()]
    finally:
        await one.chat.aclose()
        await two.chat.aclose()
    assert worked == [True, True, False, False]
    assert (one.ready, two.ready, one.superseded, two.superseded) == (1, 2, 1, 0)
    messages = await summary_messages(client)
    assert sorted(m["data"]["meeting_id"] for m in messages) == [first_id, second_id, third_id]
    async with client.app[DB].sessions() as session:
        rows = (await session.scalars(select(MeetingSummary))).all()
    assert {row.status for row in rows} == {"ready"}
    assert sorted(row.attempts for row in rows) == [1, 1, 2]


async def test_a_transient_failure_is_retried_and_a_persistent_one_fails_once(
    client: Client, owner: Caller, server: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    meeting_id = await ended_meeting(client, owner)
    registry = CollectorRegistry()
    summaries = worker(client, server, max_attempts=2, retry_base=60.0)
    summaries.metrics = SummaryMetrics(registry)
    server.fail_statuses = [503]
    try:
        assert await summaries.step() is True
        assert summaries.retried == 1
        assert await summaries.step() is False  # backing off: not due for 60 s
        later = datetime.now(UTC) + timedelta(seconds=61)
        claimed = await summaries.claim(later)
        assert claimed == meeting_id
        await summaries.work(claimed)
        response = await client.get(f"/api/v1/meetings/{meeting_id}/summary", headers=owner.headers)
        assert response.status == 200

        failing_id = await ended_meeting(client, owner)
        server.fail_statuses = [503, 429]
        with caplog.at_level(logging.WARNING, logger="control_plane.intelligence.summary_worker"):
            assert await summaries.step() is True
            claimed = await summaries.claim(datetime.now(UTC) + timedelta(seconds=61))
            assert claimed == failing_id
            await summaries.work(claimed)
            assert await summaries.claim(datetime.now(UTC) + timedelta(days=1)) is None
    finally:
        await summaries.chat.aclose()
    assert (summaries.ready, summaries.retried, summaries.failed) == (1, 2, 1)
    counted = {
        outcome: registry.get_sample_value("meetbot_summary_attempts_total", {"outcome": outcome})
        for outcome in ("ready", "retried", "failed")
    }
    assert counted == {"ready": 1.0, "retried": 2.0, "failed": 1.0}
    warnings = [r for r in caplog.records if r.name.endswith("summary_worker")]
    assert len(warnings) == 1 and "2 attempt(s)" in warnings[0].getMessage()
    response = await client.get(f"/api/v1/meetings/{failing_id}/summary", headers=owner.headers)
    body = await response.json()
    assert (response.status, body["code"]) == (409, "summary_failed")
    assert "429" in body["detail"]
    record = await (
        await client.get(f"/api/v1/meetings/{failing_id}", headers=owner.headers)
    ).json()
    assert record["summary"]["status"] == "failed" and "429" in record["summary"]["error"]
    assert await summary_messages(client) != [] and len(await summary_messages(client)) == 1


async def test_a_stop_abandons_the_call_in_flight_and_gives_the_meeting_back_at_once(
    client: Client, owner: Caller, server: ChatServer
) -> None:
    meeting_id = await ended_meeting(client, owner)
    # A model that takes the request and never answers.
    asked = asyncio.Event()
    held: list[asyncio.StreamWriter] = []

    async def hold(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        asked.set()

    silent = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    stalled = SummaryWorker(
        database=client.app[DB],
        chat=OpenAIChatModel(base_url=f"http://127.0.0.1:{port}/v1", api_key="t", model="m"),
        outbox=Outbox(),
    )
    try:
        working = asyncio.create_task(stalled.step())
        await asyncio.wait_for(asked.wait(), 30)
        stalled.halt()
        assert await working is True
    finally:
        await stalled.chat.aclose()
        for writer in held:
            writer.close()
        silent.close()
        await silent.wait_closed()
    async with client.app[DB].sessions() as session:
        row = await session.get(MeetingSummary, meeting_id)
        assert row is not None
        assert (row.status, row.claim_owner, row.lease_until, row.attempts) == (
            "pending",
            None,
            None,
            0,
        )
    # Another worker takes it at once (no lease to wait out) and writes it.
    summaries = worker(client, server)
    try:
        assert await summaries.claim(datetime.now(UTC)) == meeting_id
        await summaries.work(meeting_id)
    finally:
        await summaries.chat.aclose()
    assert (stalled.ready, stalled.retried, stalled.failed, summaries.ready) == (0, 0, 0, 1)


async def test_finals_that_arrive_after_the_end_are_in_the_summary(
    client: Client, owner: Caller, server: ChatServer
) -> None:
    # The reaper made the bot final while its agent still held finals (agent_lost); the agent
    # reconnects and delivers them, then its transcription_ready.
    meeting_id = await ended_meeting(client, owner, transcript_ready=False)
    summaries = worker(client, server)
    try:
        assert await summaries.step() is False  # the transcript is not complete yet
        record = await (
            await client.get(f"/api/v1/meetings/{meeting_id}", headers=owner.headers)
        ).json()
        link = link_of(client, owner, record)
        late = "Carol, please book a room for the launch."
        assert await link.apply(final(len(SAID), "Ada", late))
        assert await summaries.step() is False  # a final came, but is it the last?
        assert await link.apply(TranscriptionReady(tier="realtime", segment_count=len(SAID) + 1))
        assert await summaries.step() is True
    finally:
        await summaries.chat.aclose()
    [request] = server.requests
    assert late in user_text(request)
    body = await (
        await client.get(f"/api/v1/meetings/{meeting_id}/summary", headers=owner.headers)
    ).json()
    assert body["status"] == "ready"


async def test_a_summary_whose_finals_never_come_is_written_after_the_wait_limit(
    client: Client, owner: Caller, server: ChatServer
) -> None:
    meeting_id = await ended_meeting(client, owner, transcript_ready=False)
    summaries = worker(client, server)  # the default wait: 5 minutes after the end
    async with client.app[DB].reads() as session:
        row = await session.get(MeetingSummary, meeting_id)
        assert row is not None
        ended = row.created_at
    try:
        assert await summaries.claim(ended + timedelta(minutes=4, seconds=59)) is None
        assert await summaries.claim(ended + timedelta(minutes=5, seconds=1)) == meeting_id
        await summaries.work(meeting_id)
    finally:
        await summaries.chat.aclose()
    [request] = server.requests
    assert all(text in user_text(request) for _, text in SAID)  # what was stored
    body = await (
        await client.get(f"/api/v1/meetings/{meeting_id}/summary", headers=owner.headers)
    ).json()
    assert body["status"] == "ready" and body["summary"] == ANSWER["summary"]


async def test_a_bot_that_never_transcribed_is_summarised_without_waiting(
    client: Client, owner: Caller, server: ChatServer
) -> None:
    # Nothing to wait for: transcription off, so no transcription_ready will ever come.
    bot = await launch(client, owner, **MEET, enable_actions=True, transcribe_enabled=False)
    async with client.app[DB].sessions.begin() as session:
        meeting = await lock_meeting(session, bot_id=uuid.UUID(bot["bot_id"]))
        assert meeting is not None
        hooks: list[StatusHook] = client.app[STATUS_HOOKS]
        for status in (BotStatus.JOINING, BotStatus.ACTIVE, BotStatus.STOPPING):
            await change_status(session, meeting, status, "test", hooks=hooks)
        await change_status(session, meeting, BotStatus.COMPLETED, "test", hooks=hooks)
    summaries = worker(client, server)
    try:
        assert await summaries.claim(datetime.now(UTC)) == bot["id"]
    finally:
        await summaries.chat.aclose()
