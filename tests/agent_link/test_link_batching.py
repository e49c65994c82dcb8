"""Link frames stored many per transaction: each exactly once, acked only after the commit, and a
batch that fails midway leaves nothing half-written (real app and batcher, SQLite and PostgreSQL).

The failure is the database's own: a trigger refuses one segment's insert (``poison``), so the
batch's transaction fails after other frames of it were already written into it.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select, text

from agent.contracts.link import (
    AgentFrame,
    CommandName,
    Heartbeat,
    ParticipantsEvent,
    Register,
    Segment,
    TranscriptSegmentEvent,
)
from agent.contracts.status import BotStatus
from control_plane.agent_hub.keys import AGENT_HUB
from control_plane.agent_link.batch import FRAME_BATCHER, FrameBatcher
from control_plane.agent_link.frames import FrameStore, LinkIdentity
from control_plane.db.engine import DB
from control_plane.db.models.agent_link import AgentFrameReceipt, AgentLink
from control_plane.db.models.bot import Meeting
from control_plane.db.models.segment import Segment as SegmentRow
from control_plane.db.models.webhook import WebhookMessage
from control_plane.hooks import STATUS_HOOKS
from control_plane.webhooks.wiring import OUTBOX
from tests.agent_link.peer import ACK_WAIT_S
from tests.plugins.agent_link import Client, ConnectAgent, LaunchBot, LaunchedBot

pytestmark = pytest.mark.api

_POISON = "poison"


def _segment(n: int, words: str = "hello there") -> TranscriptSegmentEvent:
    now = datetime.now(UTC)
    return TranscriptSegmentEvent(
        segment=Segment(
            id=f"s{n}",
            start=float(n),
            end=n + 0.5,
            absolute_start_time=now,
            absolute_end_time=now,
            text=words,
        )
    )


async def _poison(client: Client, on: bool) -> None:
    """Make the database refuse (or accept again) a segment whose text is ``poison``."""
    database = client.app[DB]
    async with database.sessions.begin() as session:
        if database.dialect == "postgresql":
            if on:
                await session.execute(
                    text(
                        "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS "
                        "$$ BEGIN IF NEW.text = 'poison' THEN "
                        "RAISE EXCEPTION 'poisoned segment'; END IF; RETURN NEW; END $$"
                    )
                )
                await session.execute(
                    text(
                        "CREATE TRIGGER poison BEFORE INSERT ON segments "
                        "FOR EACH ROW EXECUTE FUNCTION refuse_poison()"
                    )
                )
            else:
                await session.execute(text("DROP TRIGGER poison ON segments"))
        elif on:
            await session.execute(
                text(
                    "CREATE TRIGGER poison BEFORE INSERT ON segments "
                    "WHEN NEW.text = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned segment'); END"
                )
            )
        else:
            await session.execute(text("DROP TRIGGER poison"))


async def _receipts(client: Client, bot: LaunchedBot) -> list[str]:
    async with client.app[DB].sessions() as session:
        rows = await session.scalars(
            select(AgentFrameReceipt.frame_id).where(AgentFrameReceipt.meeting_id == bot.meeting_id)
        )
        return list(rows)


async def _segments(client: Client, bot: LaunchedBot) -> list[str]:
    async with client.app[DB].sessions() as session:
        rows = await session.scalars(
            select(SegmentRow.segment_id).where(SegmentRow.meeting_id == bot.meeting_id)
        )
        return sorted(rows)


async def _joined_events(client: Client) -> int:
    async with client.app[DB].sessions() as session:
        count = await session.scalar(
            select(func.count())
            .select_from(WebhookMessage)
            .where(WebhookMessage.event_type == "participant.joined")
        )
        return int(count or 0)


def _store(client: Client, bot: LaunchedBot, workspace_id: uuid.UUID) -> FrameStore:
    app = client.app
    identity = LinkIdentity(meeting_id=bot.meeting_id, bot_id=bot.bot_id, workspace_id=workspace_id)
    return FrameStore(app[DB], app[AGENT_HUB], identity, app[STATUS_HOOKS], app[OUTBOX])


async def test_many_links_share_transactions_and_every_frame_is_stored_once_acked_after_commit(
    client: Client, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bots = [await launch_bot() for _ in range(4)]
    agents = [await connect_agent(bot) for bot in bots]
    for agent in agents:
        await agent.register()
    batches_before = client.app[FRAME_BATCHER].batches
    sent: list[tuple[LaunchedBot, AgentFrame]] = []
    for n in range(15):
        for bot, agent in zip(bots, agents, strict=True):
            frame: AgentFrame = _segment(n) if n % 5 else Heartbeat()
            await agent.send(frame, expect_ack=False)
            sent.append((bot, frame))
    for bot, agent in zip(bots, agents, strict=True):
        for other_bot, frame in sent:
            if other_bot is bot:
                await asyncio.wait_for(agent._acks[frame.id], ACK_WAIT_S)
                if isinstance(frame, TranscriptSegmentEvent):
                    # Acked, so committed: the receipt is there for any reader.
                    assert frame.id in await _receipts(client, bot)
    stored_frames = [frame for _, frame in sent if isinstance(frame, TranscriptSegmentEvent)]
    assert client.app[FRAME_BATCHER].batches - batches_before < len(sent)  # shared transactions

    # A reconnected agent resends what it has no ack for; nothing is stored twice.
    resent = agents[0]
    await resent.reconnect()
    await resent.register()
    for other_bot, frame in sent:
        if other_bot is bots[0]:
            await resent.send(frame)
    for bot in bots:
        receipts = await _receipts(client, bot)
        assert len(receipts) == len(set(receipts)) == len(stored_frames) // len(bots)
        assert await _segments(client, bot) == sorted(f"s{n}" for n in range(15) if n % 5)


async def test_a_final_segment_replaces_its_partials_within_a_batch_and_across_batches(
    client: Client, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot()
    agent = await connect_agent(bot)
    await agent.register()
    together = [_segment(1, "first partial"), _segment(1, "first final")]
    for frame in together:  # back to back: most often read into one group, one batch
        await agent.send(frame, expect_ack=False)
    for frame in together:
        await asyncio.wait_for(agent._acks[frame.id], ACK_WAIT_S)
    await agent.send(_segment(2, "second partial"))
    await agent.send(_segment(2, "second final"))
    async with client.app[DB].sessions() as session:
        rows = (
            await session.execute(
                select(SegmentRow.segment_id, SegmentRow.text, SegmentRow.end)
                .where(SegmentRow.meeting_id == bot.meeting_id)
                .order_by(SegmentRow.segment_id)
            )
        ).all()
    assert [tuple(row) for row in rows] == [("s1", "first final", 1.5), ("s2", "second final", 2.5)]
    assert len(await _receipts(client, bot)) == 4  # every frame stored once


async def test_a_reconnect_storm_registers_in_shared_transactions_and_says_a_pending_stop_again(
    client: Client, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bots = [await launch_bot(BotStatus.ACTIVE) for _ in range(5)]
    stopping = bots[0]
    async with client.app[DB].sessions.begin() as session:
        await session.execute(
            text("UPDATE meetings SET status = 'stopping' WHERE id = :id"),
            {"id": stopping.meeting_id},
        )
    agents = [await connect_agent(bot) for bot in bots]
    batches_before = client.app[FRAME_BATCHER].batches
    registers = [Register(agent_version=f"v{n % 2}", stream_seq=0) for n in range(len(bots))]
    for agent, frame in zip(agents, registers, strict=True):  # every link at once
        await agent.send(frame, expect_ack=False)
    for agent, frame in zip(agents, registers, strict=True):
        await asyncio.wait_for(agent._acks[frame.id], ACK_WAIT_S)  # acked after its commit
    assert client.app[FRAME_BATCHER].batches - batches_before < len(bots)

    async with client.app[DB].sessions() as session:
        links = {
            link.meeting_id: link
            for link in await session.scalars(
                select(AgentLink).where(AgentLink.meeting_id.in_([b.meeting_id for b in bots]))
            )
        }
    for n, bot in enumerate(bots):
        link = links[bot.meeting_id]
        assert link.agent_version == f"v{n % 2}"
        assert link.registered_at is not None and link.last_seen_at is not None
    first_registered = {b.meeting_id: links[b.meeting_id].registered_at for b in bots}

    # The stop requested while the agent was away is said again; the others get nothing.
    assert (await agents[0].next_command()).name is CommandName.STOP
    assert all(agent.commands.empty() for agent in agents[1:])

    # A second registration keeps the first one's time.
    await agents[1].reconnect()
    await agents[1].register()
    async with client.app[DB].sessions() as session:
        again = await session.get(AgentLink, bots[1].meeting_id)
    assert again is not None and again.registered_at == first_registered[bots[1].meeting_id]


async def test_a_batch_failing_midway_leaves_nothing_half_written_and_the_rest_is_stored_once(
    client: Client, launch_bot: LaunchBot
) -> None:
    first, second = await launch_bot(), await launch_bot()
    workspace_id = await _workspace(client, first)
    a, b = _store(client, first, workspace_id), _store(client, second, workspace_id)
    # One writer: both links' groups, queued together, go into one transaction.
    batcher = FrameBatcher(client.app[DB], writers=1)
    batcher.start()
    try:
        a1, a2, a3 = _segment(1), _segment(2, _POISON), _segment(3)
        b1 = _segment(1)
        b2 = ParticipantsEvent(participants=["Ann"], joined=["Ann"])
        await _poison(client, True)
        joined_before = await _joined_events(client)
        outcome_a, outcome_b = await asyncio.gather(
            batcher.store([(a, a1), (a, a2), (a, a3)]), batcher.store([(b, b1), (b, b2)])
        )
        assert batcher.batches == 0  # the shared transaction never committed
        # The other link's frames are stored; this link's stop at the refused one: its
        # receipt, its segment and everything after it are absent.
        assert outcome_b.outcomes == ["stored", "stored"] and outcome_b.error is None
        assert outcome_a.outcomes == ["stored"] and outcome_a.error is not None
        assert await _receipts(client, first) == [a1.id]
        assert await _segments(client, first) == ["s1"]
        assert sorted(await _receipts(client, second)) == sorted([b1.id, b2.id])
        assert await _joined_events(client) == joined_before + 1

        # The agent resends everything not acked (a1's ack may have been lost too).
        await _poison(client, False)
        again = await batcher.store([(a, a1), (a, a2), (a, a3)])
        assert again.outcomes == ["duplicate", "stored", "stored"] and again.error is None
        resent_b = await batcher.store([(b, b1), (b, b2)])
        assert resent_b.outcomes == ["duplicate", "duplicate"]
        assert sorted(await _receipts(client, first)) == sorted([a1.id, a2.id, a3.id])
        assert await _segments(client, first) == ["s1", "s2", "s3"]
        assert await _joined_events(client) == joined_before + 1
    finally:
        await batcher.aclose()


async def test_a_link_whose_frame_is_refused_closes_unacked_and_its_resend_is_stored_once(
    client: Client, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot()
    agent = await connect_agent(bot)
    await agent.register()
    await _poison(client, True)
    frames = [_segment(1), _segment(2, _POISON), _segment(3)]
    for frame in frames:
        await agent.send(frame, expect_ack=False)
    assert await agent.closed_by_control_plane() == 1011
    assert not agent._acks[frames[1].id].done() and not agent._acks[frames[2].id].done()
    assert frames[1].id not in await _receipts(client, bot)
    assert frames[2].id not in await _receipts(client, bot)

    await _poison(client, False)
    await agent.reconnect()
    await agent.register()
    for frame in frames:
        await agent.send(frame)
    assert sorted(await _receipts(client, bot)) == sorted(frame.id for frame in frames)
    assert await _segments(client, bot) == ["s1", "s2", "s3"]


async def _workspace(client: Client, bot: LaunchedBot) -> uuid.UUID:
    async with client.app[DB].sessions() as session:
        workspace_id = await session.scalar(
            select(Meeting.workspace_id).where(Meeting.id == bot.meeting_id)
        )
    assert workspace_id is not None
    return workspace_id


async def test_a_batch_waits_for_more_groups_until_it_is_full_or_its_oldest_is_old_enough(
    client: Client, launch_bot: LaunchBot
) -> None:
    first, second = await launch_bot(), await launch_bot()
    workspace_id = await _workspace(client, first)
    a, b = _store(client, first, workspace_id), _store(client, second, workspace_id)
    # An hour's wait: only a full batch (four frames) is stored, in one transaction.
    stages: list[tuple[str, float]] = []
    batcher = FrameBatcher(
        client.app[DB],
        max_frames=4,
        writers=1,
        max_wait=3600.0,
        observe=lambda stage, seconds: stages.append((stage, seconds)),
    )
    batcher.start()
    try:
        early = asyncio.ensure_future(batcher.store([(a, _segment(1)), (a, _segment(2))]))
        for _ in range(5):  # the writer takes the group and waits for more
            await asyncio.sleep(0)
        # Queued by now: timed from before ensure_future, the wait counted the task's own
        # start and could exceed the batcher's (0.05150 against 0.05123 s once, under load).
        queued_at = time.perf_counter()
        await asyncio.sleep(0.05)
        assert not early.done()
        waited = time.perf_counter() - queued_at
        late = await batcher.store([(b, _segment(1)), (b, _segment(2))])
        assert (await early).outcomes == late.outcomes == ["stored", "stored"]
        assert batcher.batches == 1
        # The batch's wait is its oldest group's: from the early group's queueing on.
        assert [stage for stage, _ in stages] == ["wait", "transaction"]
        assert stages[0][1] >= waited and stages[1][1] > 0
    finally:
        await batcher.aclose()
    # A short wait: a lone group is stored once its wait is over.
    batcher = FrameBatcher(client.app[DB], max_frames=4, writers=1, max_wait=0.01)
    batcher.start()
    try:
        alone = await batcher.store([(a, _segment(3))])
        assert alone.outcomes == ["stored"] and batcher.batches == 1
    finally:
        await batcher.aclose()
    assert await _segments(client, first) == ["s1", "s2", "s3"]
    assert await _segments(client, second) == ["s1", "s2"]
