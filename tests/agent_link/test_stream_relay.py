"""A bot's SSE stream served by the control plane, fed by the agent's real link client.

The agent side is the agent's own :class:`~agent.link.client.LinkClient` with its stream log
(``agent.sse.log.EventLog``); the client reads ``GET /api/v1/bots/{bot_id}/stream`` as returned
by subscribe: token rules, ids and order, partials replaced by finals (and not stored), replay
with ``Last-Event-ID`` (older than the replica's window: fetched from the agent), pings, and
the end once the agent's log closes (or once a lost agent's bot stays final); for a bot with
``enable_actions``, the end after the meeting's summary (``summary_ready``, written by the real
summary worker over a scripted OpenAI-compatible server). With two replicas on PostgreSQL the
client reads from the replica that does not hold the link, replay and an event over NOTIFY's
8000 bytes included.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
from aiohttp import web
from pytest_aiohttp import AiohttpClient
from sqlalchemy import func, select, update

from agent.contracts.bot_config import BotSettings
from agent.contracts.link import Register
from agent.contracts.status import BotStatus
from agent.link.client import LinkClient, LinkTiming, agent_link_url
from agent.link.outbox import Outbox
from agent.sse.log import EventLog
from control_plane.agent_hub.keys import AGENT_HUB, STREAM_SIGNER
from control_plane.app import create_app
from control_plane.bots.status import change_status, lock_meeting
from control_plane.db.engine import DB
from control_plane.db.models.action_cursor import ActionCursor
from control_plane.db.models.bot import Meeting
from control_plane.db.models.segment import Segment
from control_plane.hooks import STATUS_HOOKS, StatusHook
from control_plane.intelligence.summary_worker import SummaryPolicy, SummaryWorker
from control_plane.launchers.memory import MemoryLauncher
from control_plane.settings import Settings
from control_plane.token_cipher import KEY_FILE_NAME
from control_plane.webhooks.outbox import Outbox as WebhookOutbox
from tests.intelligence.chat_server import ChatServer
from tests.intelligence.summary_llm import chat_of, scripted_server
from tests.plugins.agent_link import Client, LaunchBot, LaunchedBot
from tests.plugins.api_app import KEY_PREFIX, Caller

pytestmark = pytest.mark.api

READ_WAIT_S = 10.0


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Fast pings, and a window of about three events so that replay fetches from the agent.

    Summaries are due as soon as a meeting ends and the app's own intelligence workers idle:
    the test that needs a summary writes it with its own worker over a scripted server (the
    app's model is an endpoint that refuses connections, never called).
    """
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        public_url="http://127.0.0.1:1",
        subscribe_wait_seconds=5.0,
        heartbeat_timeout_seconds=30.0,
        agent_connect_timeout_seconds=60.0,
        stream_ping_seconds=0.2,
        stream_window_bytes=1024,
        stream_end_check_seconds=0.3,
        intelligence_provider="openai",
        intelligence_base_url="http://127.0.0.1:9/v1",
        intelligence_poll_seconds=3600.0,
        intelligence_summary_poll_seconds=3600.0,
        intelligence_summary_settle_seconds=0.0,
    )


@dataclass
class Agent:
    """The agent's stream log and real link client."""

    log: EventLog
    link: LinkClient

    async def exit(self) -> None:
        """End as the agent does: close the log, send the stream's end, close the link."""
        await self.log.close()
        assert await self.link.finish_stream(READ_WAIT_S)
        await self.link.close()


@pytest.fixture
async def agents(tmp_path: Path) -> AsyncIterator[list[Agent]]:
    started: list[Agent] = []
    yield started
    for agent in started:
        await agent.link.close()


async def _start_agent(
    client: Client, bot: LaunchedBot, tmp_path: Path, started: list[Agent]
) -> Agent:
    log = EventLog()
    outbox = Outbox(tmp_path / f"outbox-{bot.bot_id}.sqlite3")
    link = LinkClient(
        agent_link_url(str(client.make_url("")), str(bot.bot_id)),
        bot.token,
        outbox,
        register=lambda: Register(agent_version="test", stream_seq=log.last_id),
        timing=LinkTiming(heartbeat_interval=1.0, reconnect_min=0.05, reconnect_max=0.2),
        stream=log,
    )
    agent = Agent(log, link)
    started.append(agent)
    link.start()
    await asyncio.wait_for(link.connected.wait(), READ_WAIT_S)
    return agent


def _segment(segment_id: str, text: str, *, completed: bool) -> dict[str, Any]:
    return {
        "id": segment_id,
        "start": 1.0,
        "end": 2.5,
        "absolute_start_time": "2026-11-24T10:00:01Z",
        "absolute_end_time": "2026-11-24T10:00:02Z",
        "text": text,
        "speaker": "Alice",
        "language": "en",
        "completed": completed,
        "tier": "realtime",
    }


@dataclass
class Reader:
    """One SSE response read event by event."""

    response: aiohttp.ClientResponse
    pings: int = 0
    events: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)

    async def next(self) -> tuple[int, str, dict[str, Any]] | None:
        """The next event, or None when the stream ended."""
        current: dict[str, str] = {}
        while True:
            raw = await asyncio.wait_for(self.response.content.readline(), READ_WAIT_S)
            if not raw:
                return None
            line = raw.decode().rstrip("\n")
            if line.startswith(":"):
                self.pings += line == ": ping"
                continue
            if line:
                key, _, value = line.partition(": ")
                current[key] = value
            elif current:
                event = (int(current["id"]), current["event"], json.loads(current["data"]))
                self.events.append(event)
                return event

    async def ping(self) -> None:
        """Read on until the next ``: ping`` comment (no event may come meanwhile)."""
        while True:
            raw = await asyncio.wait_for(self.response.content.readline(), READ_WAIT_S)
            assert raw, "the stream ended early"
            line = raw.decode().rstrip("\n")
            assert not line or line.startswith(":"), line
            if line == ": ping":
                self.pings += 1
                return

    async def take(self, count: int) -> list[tuple[int, str, dict[str, Any]]]:
        """The next ``count`` events."""
        taken = []
        for _ in range(count):
            event = await self.next()
            assert event is not None, "the stream ended early"
            taken.append(event)
        return taken


async def _subscribe(client: Client, owner: Caller, bot: LaunchedBot) -> tuple[str, str]:
    response = await client.post(f"/api/v1/bots/{bot.bot_id}/subscribe", headers=owner.headers)
    assert response.status == 200, await response.text()
    body = await response.json()
    return urlsplit(body["url"]).path, body["token"]


async def _open(client: Client, path: str, token: str, last_event_id: int | None = None) -> Reader:
    headers = {"Authorization": f"Bearer {token}"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    response = await client.get(path, headers=headers)
    assert response.status == 200, await response.text()
    assert response.headers["Content-Type"].startswith("text/event-stream")
    return Reader(response)


async def _refused(client: Client, path: str, headers: dict[str, str]) -> str:
    response = await client.get(path, headers=headers)
    assert response.status == 401
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="bot-stream"'
    body = await response.json()
    assert body["code"] == "invalid_stream_token"
    detail: str = body["detail"]
    return detail


async def test_a_client_reads_the_bots_stream_through_the_control_plane(
    client: Client, owner: Caller, launch_bot: LaunchBot, agents: list[Agent], tmp_path: Path
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    other = await launch_bot(BotStatus.ACTIVE)
    agent = await _start_agent(client, bot, tmp_path, agents)
    log = agent.log
    await log.append("bot_status", {"status": "active", "status_reason": "admitted"})
    await log.append("transcript_segment", _segment("s1", "Good mor", completed=False))
    await log.append("transcript_segment", _segment("s1", "Good morning", completed=False))
    await log.append("transcript_segment", _segment("s1", "Good morning, all.", completed=True))
    path, token = await _subscribe(client, owner, bot)
    assert path == f"/api/v1/bots/{bot.bot_id}/stream"

    # Token rules: checked when the stream opens.
    signer = client.app[STREAM_SIGNER]
    assert await _refused(client, path, {}) == "bearer token required"
    assert await _refused(client, path, {"Authorization": "Bearer not-a-jwt"}) == "invalid token"
    expired = signer.mint(bot.bot_id, 60, now=datetime.now(UTC) - timedelta(hours=1)).token
    assert await _refused(client, path, {"Authorization": f"Bearer {expired}"}) == "token expired"
    others = signer.mint(other.bot_id, 60).token
    detail = await _refused(client, path, {"Authorization": f"Bearer {others}"})
    assert detail == "token is for another bot"

    # From the start: ids from 1, the agent's names and payloads, partials before the final.
    reader = await _open(client, path, token)
    first = await reader.take(4)
    assert [event[0] for event in first] == [1, 2, 3, 4]
    assert [(event[1], event[2]) for event in first] == [
        (item.event, json.loads(item.data)) for item in log.snapshot()
    ]
    texts = [(data["text"], data["completed"]) for _, name, data in first[1:]]
    assert texts == [("Good mor", False), ("Good morning", False), ("Good morning, all.", True)]
    # Partials travel over the link to the stream; nothing of them is stored.
    async with client.app[DB].sessions() as session:
        stored = await session.scalar(
            select(func.count()).select_from(Segment).where(Segment.meeting_id == bot.meeting_id)
        )
    assert stored == 0

    # Live events follow in order.
    await log.append("speak_started", {"speech_id": "sp1", "timestamp": "2026-11-24T10:00:03Z"})
    await log.append("participant_update", {"participants": ["Alice"], "joined": [], "left": []})
    live = await reader.take(2)
    assert [(event[0], event[1]) for event in live] == [
        (5, "speak_started"),
        (6, "participant_update"),
    ]

    # Replay after an id: the window holds about three events, so 3 and 4 come from the agent.
    replay = await _open(client, path, token, last_event_id=2)
    again = await replay.take(4)
    assert [event[0] for event in again] == [3, 4, 5, 6]
    assert again == reader.events[2:6]

    # Pings keep a quiet stream open.
    await reader.ping()
    await reader.ping()

    # The agent exits: its last events arrive, then both streams end.
    await log.append("bot_status", {"status": "completed", "status_reason": "meeting_ended"})
    await agent.exit()
    assert [event[0] for event in await reader.take(1)] == [7]
    assert await reader.next() is None
    assert [event[0] for event in await replay.take(1)] == [7]
    assert await replay.next() is None


async def test_an_agent_that_reconnects_resumes_its_stream_without_gaps(
    client: Client, owner: Caller, launch_bot: LaunchBot, agents: list[Agent], tmp_path: Path
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await _start_agent(client, bot, tmp_path, agents)
    path, token = await _subscribe(client, owner, bot)
    reader = await _open(client, path, token)
    await agent.log.append("bot_status", {"status": "active", "status_reason": "admitted"})
    assert [event[0] for event in await reader.take(1)] == [1]
    await agent.link.close()  # the link drops; the bot keeps logging
    for n in range(3):
        await agent.log.append("participant_update", {"participants": [f"P{n}"]})
    agent.link.start()
    assert [event[0] for event in await reader.take(3)] == [2, 3, 4]
    await agent.exit()
    assert await reader.next() is None


async def test_a_lost_agents_stream_ends_once_its_bot_stays_final(
    client: Client, owner: Caller, launch_bot: LaunchBot, agents: list[Agent], tmp_path: Path
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await _start_agent(client, bot, tmp_path, agents)
    path, token = await _subscribe(client, owner, bot)
    reader = await _open(client, path, token)
    await agent.log.append("bot_status", {"status": "active", "status_reason": "admitted"})
    assert [event[0] for event in await reader.take(1)] == [1]
    await agent.link.close()  # gone without its stream's end (killed, VM lost)
    await asyncio.sleep(1.0)  # several end checks: the bot is not final, the stream stays open
    assert not reader.response.content.at_eof()
    async with client.app[DB].sessions.begin() as session:  # what the reaper stores
        await session.execute(
            update(Meeting)
            .where(Meeting.id == bot.meeting_id)
            .values(status=BotStatus.FAILED.value, status_reason="agent_lost")
        )
    assert await reader.next() is None


@pytest.fixture
async def other_replica(
    settings: Settings, client: Client, aiohttp_client: AiohttpClient, tmp_path: Path
) -> Client:
    """A second replica with a data folder of its own: only the database and the deployment's
    token encryption key (here the first replica's, from its key file) are shared."""
    if not settings.effective_database_url.startswith("postgresql"):
        pytest.skip("SQLite deployments are one process: there is no second replica")
    del client  # started first: it owns the database the second replica joins
    own = settings.model_copy(
        update={
            "data_dir": tmp_path / "replica-b",
            "token_encryption_key": (settings.data_dir / KEY_FILE_NAME).read_text().strip(),
        }
    )
    replica: web.Application = create_app(own, launcher=MemoryLauncher())
    return await aiohttp_client(replica)


async def test_a_replica_without_the_link_serves_the_stream_and_its_replay(
    client: Client,
    other_replica: Client,
    owner: Caller,
    launch_bot: LaunchBot,
    agents: list[Agent],
    tmp_path: Path,
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await _start_agent(client, bot, tmp_path, agents)  # linked to the first replica
    log = agent.log
    for n in range(5):
        await log.append("transcript_segment", _segment(f"s{n}", f"line {n}", completed=True))
    path, token = await _subscribe(other_replica, owner, bot)
    assert client.app[AGENT_HUB].connected(bot.bot_id)
    assert not other_replica.app[AGENT_HUB].connected(bot.bot_id)

    # From the start on the other replica: every event is older than its window at first.
    reader = await _open(other_replica, path, token)
    assert [event[0] for event in await reader.take(5)] == [1, 2, 3, 4, 5]

    # Live events cross replicas, one of them over NOTIFY's 8000-byte payload limit.
    names = [f"Participant number {n} with a long name é" for n in range(400)]
    await log.append("participant_update", {"participants": names, "joined": names, "left": []})
    await log.append("speak_finished", {"speech_id": "sp1", "interrupted": False, "error": None})
    big, finished = await reader.take(2)
    assert (big[0], big[1], big[2]["participants"]) == (6, "participant_update", names)
    assert (finished[0], finished[1]) == (7, "speak_finished")

    # Replay on the other replica: events older than its window come from the agent's replica.
    replay = await _open(other_replica, path, token, last_event_id=1)
    again = await replay.take(6)
    assert [event[0] for event in again] == [2, 3, 4, 5, 6, 7]
    assert again == reader.events[1:7]

    await log.append("bot_status", {"status": "completed", "status_reason": "meeting_ended"})
    await agent.exit()
    assert [event[0] for event in await reader.take(1)] == [8]
    assert await reader.next() is None
    assert [event[0] for event in await replay.take(1)] == [8]
    assert await replay.next() is None


SUMMARY_ANSWER = {
    "summary": "The team agreed to ship the beta.",
    "decisions": [{"text": "Ship the beta on Monday", "lines": [1]}],
    "action_items": [],
}


@pytest.fixture
async def summary_model() -> AsyncIterator[ChatServer]:
    async with scripted_server(lambda body: SUMMARY_ANSWER) as server:
        yield server


async def _meeting_ends(client: Client, bot: LaunchedBot) -> None:
    """One line said and the transcript complete (what the agent's ``transcription_ready``
    stores), then the bot completed, stored as its agent's reports are (through the status
    hooks: a bot with ``enable_actions`` gets its pending summary there), and the meeting's
    action detection finished with no action found (what the detection worker stores)."""
    async with client.app[DB].sessions.begin() as session:
        session.add(
            Segment(
                meeting_id=bot.meeting_id,
                segment_id="seg-0",
                start=1.0,
                end=2.5,
                absolute_start_time=datetime(2026, 11, 24, 10, 0, 1, tzinfo=UTC),
                absolute_end_time=datetime(2026, 11, 24, 10, 0, 2, tzinfo=UTC),
                text="We agreed to ship the beta on Monday.",
                speaker="Alice",
                language="en",
                completed=True,
                tier="realtime",
            )
        )
    async with client.app[DB].sessions.begin() as session:
        meeting = await lock_meeting(session, bot_id=bot.bot_id)
        assert meeting is not None
        meeting.transcript_ready_at = datetime.now(UTC)
        hooks: list[StatusHook] = client.app[STATUS_HOOKS]
        for status in (BotStatus.STOPPING, BotStatus.COMPLETED):
            await change_status(session, meeting, status, "meeting_ended", hooks=hooks)
        session.add(ActionCursor(meeting_id=bot.meeting_id, finished_at=datetime.now(UTC)))


async def _summary_after_the_end(
    client: Client,
    serving: Client,
    owner: Caller,
    launch_bot: LaunchBot,
    agents: list[Agent],
    tmp_path: Path,
    summary_model: ChatServer,
) -> None:
    """Agents linked to ``client`` end their meetings; ``serving`` serves the streams."""
    bot = await launch_bot(BotStatus.ACTIVE, settings=BotSettings(enable_actions=True))
    plain = await launch_bot(BotStatus.ACTIVE)  # enable_actions false
    readers = []
    for each in (bot, plain):
        agent = await _start_agent(client, each, tmp_path, agents)
        path, token = await _subscribe(serving, owner, each)
        readers.append(await _open(serving, path, token))
        await agent.log.append("bot_status", {"status": "active", "status_reason": "admitted"})
        await _meeting_ends(client, each)
        await agent.log.append(
            "bot_status", {"status": "completed", "status_reason": "meeting_ended"}
        )
        await agent.exit()
    reader, plain_reader = readers

    # Without enable_actions the stream ends with the agent's, as ever.
    assert [event[0] for event in await plain_reader.take(2)] == [1, 2]
    assert await plain_reader.next() is None

    # With it, the stream outlives the agent's: pings, no event, until the summary is written.
    assert [event[0] for event in await reader.take(2)] == [1, 2]
    await reader.ping()
    await reader.ping()
    summaries = SummaryWorker(
        database=client.app[DB],
        chat=chat_of(summary_model),
        outbox=WebhookOutbox(),
        policy=SummaryPolicy(),
    )
    try:
        assert await summaries.step() is True
        assert await summaries.step() is False  # the plain bot has no summary to write
    finally:
        await summaries.chat.aclose()
    response = await serving.get(
        f"/api/v1/meetings/{bot.meeting_id}/summary", headers=owner.headers
    )
    assert response.status == 200
    body = await response.json()
    assert body["status"] == "ready" and body["summary"] == SUMMARY_ANSWER["summary"]
    # The next id after the agent's last, the route's object; then the stream ends.
    assert await reader.next() == (3, "summary_ready", body)
    assert await reader.next() is None


async def test_a_stream_with_enable_actions_ends_with_the_meetings_summary(
    client: Client,
    owner: Caller,
    launch_bot: LaunchBot,
    agents: list[Agent],
    tmp_path: Path,
    summary_model: ChatServer,
) -> None:
    await _summary_after_the_end(client, client, owner, launch_bot, agents, tmp_path, summary_model)


async def test_a_replica_without_the_link_sends_the_summary_too(
    client: Client,
    other_replica: Client,
    owner: Caller,
    launch_bot: LaunchBot,
    agents: list[Agent],
    tmp_path: Path,
    summary_model: ChatServer,
) -> None:
    await _summary_after_the_end(
        client, other_replica, owner, launch_bot, agents, tmp_path, summary_model
    )


async def test_a_stream_with_enable_actions_ends_without_event_when_the_summary_fails(
    client: Client,
    owner: Caller,
    launch_bot: LaunchBot,
    agents: list[Agent],
    tmp_path: Path,
    summary_model: ChatServer,
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE, settings=BotSettings(enable_actions=True))
    agent = await _start_agent(client, bot, tmp_path, agents)
    path, token = await _subscribe(client, owner, bot)
    reader = await _open(client, path, token)
    await agent.log.append("bot_status", {"status": "active", "status_reason": "admitted"})
    await _meeting_ends(client, bot)
    await agent.exit()
    assert [event[0] for event in await reader.take(1)] == [1]
    await reader.ping()  # waiting for the summary
    summary_model.fail_statuses = [503]
    summaries = SummaryWorker(
        database=client.app[DB],
        chat=chat_of(summary_model),
        outbox=WebhookOutbox(),
        policy=SummaryPolicy(max_attempts=1),
    )
    try:
        assert await summaries.step() is True
    finally:
        await summaries.chat.aclose()
    assert summaries.failed == 1
    response = await client.get(f"/api/v1/meetings/{bot.meeting_id}/summary", headers=owner.headers)
    assert (response.status, (await response.json())["code"]) == (409, "summary_failed")
    assert await reader.next() is None  # the route and the webhook tell the rest


async def test_a_lost_agents_stream_with_enable_actions_waits_for_the_summary_too(
    client: Client,
    owner: Caller,
    launch_bot: LaunchBot,
    agents: list[Agent],
    tmp_path: Path,
    summary_model: ChatServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE, settings=BotSettings(enable_actions=True))
    agent = await _start_agent(client, bot, tmp_path, agents)
    path, token = await _subscribe(client, owner, bot)
    reader = await _open(client, path, token)
    await agent.log.append("bot_status", {"status": "active", "status_reason": "admitted"})
    assert [event[0] for event in await reader.take(1)] == [1]
    await agent.link.close()  # gone without its stream's end (killed, VM lost)
    with caplog.at_level(logging.INFO, logger="control_plane.bots.stream"):
        await _meeting_ends(client, bot)  # what the reaper stores, through the status hooks

        def waiting() -> bool:
            return any(r.getMessage().startswith("stream waits") for r in caplog.records)

        # The lost-agent check ended the agent's stream; the client's stays open for the summary.
        for _ in range(int(READ_WAIT_S / 0.05)):
            if waiting():
                break
            await asyncio.sleep(0.05)
        assert waiting()
    assert not reader.response.content.at_eof()
    summaries = SummaryWorker(
        database=client.app[DB],
        chat=chat_of(summary_model),
        outbox=WebhookOutbox(),
        policy=SummaryPolicy(),
    )
    try:
        assert await summaries.step() is True
    finally:
        await summaries.chat.aclose()
    event = await reader.next()
    assert event is not None and event[:2] == (2, "summary_ready")
    assert event[2]["summary"] == SUMMARY_ANSWER["summary"]
    assert await reader.next() is None
