"""The agent link endpoint: authentication, acks, idempotent storage across reconnects, the
status table, and the webhook events frames cause (real app, SQLite and PostgreSQL)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import aiohttp
import pytest
from sqlalchemy import func, select

from agent.contracts.link import (
    ActionEvent,
    ActionType,
    AgentFrame,
    ArtifactEvent,
    ArtifactKind,
    ChatMessageEvent,
    Heartbeat,
    MemoryReport,
    ParticipantsEvent,
    Segment,
    StatusEvent,
    TranscriptionReady,
    TranscriptSegmentEvent,
)
from agent.contracts.status import BotStatus
from control_plane.db.engine import DB
from control_plane.db.models.agent_link import AgentLink, Artifact, ChatMessage
from control_plane.db.models.bot import BotStatusChange, Meeting
from control_plane.db.models.segment import Segment as SegmentRow
from control_plane.db.models.webhook import WebhookMessage
from tests.plugins.agent_link import Client, ConnectAgent, LaunchBot

pytestmark = pytest.mark.api


async def _count(client: Client, model: type, meeting_id: int | None = None) -> int:
    async with client.app[DB].sessions() as session:
        query = select(func.count()).select_from(model)
        if meeting_id is not None:
            query = query.where(model.meeting_id == meeting_id)  # type: ignore[attr-defined]
        return int(await session.scalar(query) or 0)


async def _events(client: Client) -> list[str]:
    async with client.app[DB].sessions() as session:
        rows = await session.scalars(select(WebhookMessage.event_type).order_by(WebhookMessage.id))
        return list(rows)


async def _meeting(client: Client, meeting_id: int) -> Meeting:
    async with client.app[DB].sessions() as session:
        meeting = await session.get(Meeting, meeting_id)
        assert meeting is not None
        return meeting


async def test_the_link_refuses_a_missing_wrong_or_other_bots_token(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot()
    other = await launch_bot()
    path = f"/internal/v1/agents/{bot.bot_id}"
    for headers in (
        {},
        {"Authorization": "Bearer mat_wrong"},
        {"Authorization": f"Bearer {other.token}"},
        {"Authorization": f"Basic {bot.token}"},
    ):
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await client.ws_connect(path, headers=headers)
        assert refused.value.status == 401
    response = await client.get(path, headers={"Authorization": "Bearer mat_wrong"})
    assert response.status == 401
    assert (await response.json())["code"] == "invalid_agent_token"


async def test_register_and_statuses_are_stored_acked_and_audited(
    client: Client, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot()
    agent = await connect_agent(bot)
    await agent.register()
    held = "Teams holds a bot it detects in the lobby until the organizer admits it"
    for status, reason, detail in (
        (BotStatus.JOINING, "join_started", None),
        (BotStatus.AWAITING_ADMISSION, "lobby", held),
    ):
        await agent.send(StatusEvent(status=status, status_reason=reason, detail=detail))
    # The agent's words on a status are the record's status_detail, until the next move.
    assert (await _meeting(client, bot.meeting_id)).status_detail == held
    await agent.send(StatusEvent(status=BotStatus.ACTIVE, status_reason="admitted"))

    meeting = await _meeting(client, bot.meeting_id)
    assert (meeting.status, meeting.status_reason) == ("active", "admitted")
    assert meeting.status_detail is None
    assert meeting.start_time is not None
    async with client.app[DB].sessions() as session:
        link = await session.get(AgentLink, bot.meeting_id)
        audit = list(
            await session.scalars(
                select(BotStatusChange.to_status)
                .where(BotStatusChange.meeting_id == bot.meeting_id)
                .order_by(BotStatusChange.id)
            )
        )
    assert link is not None
    assert link.registered_at is not None
    assert audit == ["joining", "awaiting_admission", "active"]
    assert await _events(client) == ["bot.status_changed"] * 3


async def test_frames_resent_after_a_reconnect_are_acked_but_stored_once(
    client: Client, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot()
    agent = await connect_agent(bot)
    await agent.register()
    now = datetime.now(UTC)
    frames: list[AgentFrame] = [
        StatusEvent(status=BotStatus.JOINING, status_reason="join_started"),
        StatusEvent(status=BotStatus.ACTIVE, status_reason="joined"),
        ParticipantsEvent(
            participants=["Ada", "Grace"], joined=["Ada", "Grace"], meeting_name="Weekly sync"
        ),
        TranscriptSegmentEvent(
            segment=Segment(
                id="seg-1",
                start=0.5,
                end=2.0,
                absolute_start_time=now,
                absolute_end_time=now,
                text="hello there",
                speaker="Ada",
                language="en",
            )
        ),
        ChatMessageEvent(message_id="m-1", sender="Grace", text="hi bot", timestamp=now),
        ParticipantsEvent(participants=["Ada"], left=["Grace"]),
    ]
    for frame in frames:
        await agent.send(frame)
    first_events = await _events(client)

    # The control plane's acks were "lost": after reconnecting, the outbox resends everything.
    await agent.reconnect()
    await agent.register()
    for frame in frames:
        await agent.send(frame)

    meeting = await _meeting(client, bot.meeting_id)
    assert meeting.status == "active"
    assert meeting.participants == ["Ada"]
    # The title the agent read stays the meeting's name; frames without one leave it.
    assert meeting.name == "Weekly sync"
    assert await _count(client, BotStatusChange, bot.meeting_id) == 2
    assert await _count(client, SegmentRow, bot.meeting_id) == 1
    assert await _count(client, ChatMessage, bot.meeting_id) == 1
    assert await _events(client) == first_events
    assert first_events.count("participant.joined") == 2
    assert first_events.count("participant.left") == 1

    metrics = await (await client.get("/metrics")).text()
    assert 'meetbot_agent_frames_total{outcome="stored",type="status"} 2.0' in metrics
    assert 'meetbot_agent_frames_total{outcome="duplicate",type="status"} 2.0' in metrics
    assert 'meetbot_agent_frames_total{outcome="other",type="register"} 2.0' in metrics
    assert "meetbot_agent_links_open 1.0" in metrics
    # Where the stored frames' time went: each batch's wait and transaction, each run's acks.
    for stage in ("wait", "transaction", "ack"):
        counted = f'meetbot_agent_link_stage_seconds_count{{stage="{stage}"}} '
        line = next(line for line in metrics.splitlines() if line.startswith(counted))
        assert float(line.removeprefix(counted)) >= 1


async def test_a_final_segment_replaces_the_stored_text_of_its_id(
    client: Client, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    now = datetime.now(UTC)
    for text in ("helo thr", "hello there"):
        await agent.send(
            TranscriptSegmentEvent(
                segment=Segment(
                    id="seg-9",
                    start=1.0,
                    end=2.5,
                    absolute_start_time=now,
                    absolute_end_time=now,
                    text=text,
                )
            )
        )
    async with client.app[DB].sessions() as session:
        texts = list(
            await session.scalars(
                select(SegmentRow.text).where(SegmentRow.meeting_id == bot.meeting_id)
            )
        )
    assert texts == ["hello there"]


async def test_an_illegal_or_repeated_status_move_is_acked_and_ignored(
    client: Client, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    await agent.send(StatusEvent(status=BotStatus.JOINING, status_reason="join_started"))
    await agent.send(StatusEvent(status=BotStatus.ACTIVE, status_reason="joined"))
    await agent.send(StatusEvent(status=BotStatus.STOPPING, status_reason="left_alone"))
    await agent.send(StatusEvent(status=BotStatus.COMPLETED, status_reason="left_alone"))
    await agent.send(StatusEvent(status=BotStatus.FAILED, status_reason="internal_error"))
    meeting = await _meeting(client, bot.meeting_id)
    assert (meeting.status, meeting.status_reason) == ("completed", "left_alone")
    assert meeting.end_time is not None
    assert await _count(client, BotStatusChange, bot.meeting_id) == 2


async def test_artifacts_transcription_and_actions_become_rows_and_webhook_events(
    client: Client, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    recording = ArtifactEvent(
        kind=ArtifactKind.RECORDING,
        artifact_id="rec-1",
        storage_key=f"bots/{bot.bot_id}/recordings/rec-1.mp4",
        content_type="video/mp4",
        size_bytes=1234,
        format="mp4",
        duration_s=61.5,
    )
    foreign = ArtifactEvent(
        kind=ArtifactKind.RECORDING,
        artifact_id="rec-2",
        storage_key=f"bots/{uuid.uuid4()}/recordings/rec-2.mp4",
        content_type="video/mp4",
        size_bytes=1,
    )
    for frame in (
        recording,
        recording.model_copy(update={"id": str(uuid.uuid4())}),  # same artifact, new frame id
        foreign,
        TranscriptionReady(tier="realtime", segment_count=12),
        ActionEvent(action_type=ActionType.DECISION, text="Ship on Friday", segment_ids=["s1"]),
        Heartbeat(),
        # Acked and logged; no webhook event, nothing stored.
        MemoryReport(
            level="warn", tree_mb=1450.5, parts={"agent": 600.0}, warn_mb=1400, limit_mb=1700
        ),
    ):
        await agent.send(frame)
    async with client.app[DB].sessions() as session:
        artifacts = list(
            await session.scalars(select(Artifact).where(Artifact.meeting_id == bot.meeting_id))
        )
    assert [(a.artifact_id, a.kind, a.duration_s) for a in artifacts] == [
        ("rec-1", "recording", 61.5)
    ]
    assert await _events(client) == ["recording.ready", "transcription.ready", "action.detected"]


async def test_a_newer_connection_replaces_an_older_one(
    client: Client, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    first = await connect_agent(bot)
    await first.register()
    second = await connect_agent(bot)
    await second.register()
    await second.send(Heartbeat())
    assert await first.closed_by_control_plane() == 4000
    await second.send(Heartbeat())


async def test_a_frame_the_database_refuses_is_not_acked_and_lands_when_resent(
    client: Client, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    now = datetime.now(UTC)
    frame = TranscriptSegmentEvent(
        segment=Segment(
            id="seg-x",
            start=0.0,
            end=1.0,
            absolute_start_time=now,
            absolute_end_time=now,
            text="kept in the outbox",
        )
    )
    async with client.app[DB].engine.begin() as conn:
        await conn.exec_driver_sql("ALTER TABLE segments RENAME TO segments_away")
    await agent.send(frame, expect_ack=False)
    assert await agent.closed_by_control_plane() == 1011
    async with client.app[DB].engine.begin() as conn:
        await conn.exec_driver_sql("ALTER TABLE segments_away RENAME TO segments")

    await agent.reconnect()
    await agent.send(frame)
    await agent.send(frame)
    assert await _count(client, SegmentRow, bot.meeting_id) == 1
