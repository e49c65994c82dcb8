"""Detected actions on a bot's stream when its agent did not put them there (docs/api.md 2.7).

The control plane's real :class:`~control_plane.intelligence.worker.DetectionWorker` analyses the
stored transcript over a scripted OpenAI-compatible server and offers each action to the bot's
agent (``announce_action`` through the real hub and link); the agent is the agent's own link
client and stream log, answering the command as the current agent does (the event logged, then
success) or as an image older than the command does (``unknown_command``). An action the agent
streamed is marked so; one it did not (the last window's, detected after the agent left, or every
one of an old agent) is sent by the control plane's stream after the agent's last event, with
the next ids, before ``summary_ready``, as the API serves it, and reaches the webhook and the
record all the same.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import select

from agent.contracts.bot_config import BotSettings
from agent.contracts.link import AnnounceActionCommand, CommandErrorCode, CommandResult
from agent.contracts.status import BotStatus
from agent.contracts.timestamps import format_utc
from control_plane.agent_hub.keys import AGENT_HUB
from control_plane.bots.status import change_status, lock_meeting
from control_plane.db.engine import DB
from control_plane.db.models.action import MeetingAction
from control_plane.db.models.segment import Segment
from control_plane.db.models.webhook import WebhookMessage
from control_plane.hooks import STATUS_HOOKS, StatusHook
from control_plane.intelligence.detection_metrics import DetectionMetrics
from control_plane.intelligence.openai_chat import OpenAIChatModel
from control_plane.intelligence.stream_offer import announce_through
from control_plane.intelligence.summary_worker import SummaryPolicy, SummaryWorker
from control_plane.intelligence.worker import DetectionOptions, DetectionWorker
from control_plane.webhooks.wiring import OUTBOX
from tests.agent_link.test_stream_relay import (
    SUMMARY_ANSWER,
    Agent,
    Reader,
    _open,
    _start_agent,
    _subscribe,
    agents,
    settings,
)
from tests.intelligence.chat_server import ChatServer, serve
from tests.intelligence.summary_llm import chat_of
from tests.plugins.agent_link import Client, LaunchBot, LaunchedBot
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api

__all__ = ["agents", "settings"]  # fixtures of the stream tests, used here as they are

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
WORK_WAIT_S = 60.0
"""A window's wait, model call and offer on a loaded 2-core machine, with room to spare."""


def _answer(body: dict[str, Any]) -> str:
    """The model: one action per window, by what its last line says; the summary's answer."""
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")
    if name.startswith("meeting_summary"):
        return json.dumps(SUMMARY_ANSWER if name == "meeting_summary" else {"summary": "-"})
    window = str(body["messages"][-1]["content"])
    text = "share the agenda" if "agenda" in window else "send the notes"
    action = {"type": "action_item", "text": text, "owner": None, "due": None, "lines": [1]}
    return json.dumps({"actions": [action]})


@pytest.fixture
async def model() -> AsyncIterator[ChatServer]:
    async with serve() as server:
        server.script = _answer
        yield server


@pytest.fixture
async def chat(model: ChatServer) -> AsyncIterator[OpenAIChatModel]:
    """The detection workers' model (a worker does not close the model it shares)."""
    shared = chat_of(model)
    yield shared
    await shared.aclose()


def _detection(
    client: Client, chat: OpenAIChatModel, registry: CollectorRegistry, offer_timeout: float = 5.0
) -> DetectionWorker:
    """The app's detection worker as the app builds it, windows closing after 0.3 s of quiet,
    a window's offers to the stream waiting ``offer_timeout`` in all for the agent's answers."""
    options = DetectionOptions(window_pause=0.3, poll=0.05, lease=30.0, offer_timeout=offer_timeout)
    return DetectionWorker(
        database=client.app[DB],
        chat=chat,
        outbox=client.app[OUTBOX],
        options=options,
        metrics=DetectionMetrics(registry),
        publish=announce_through(client.app[AGENT_HUB]),
    )


async def _play(agent: Agent, *, knows_announce: bool) -> None:
    """The agent's command handling: the current one streams ``announce_action`` and answers
    success; one from an older image answers ``unknown_command`` (its link client's answer to a
    command it cannot parse)."""
    while True:
        command = await agent.link.commands.get()
        announce = command.command
        assert isinstance(announce, AnnounceActionCommand)
        if not knows_announce:
            error = CommandErrorCode.UNKNOWN_COMMAND
            await agent.link.send(CommandResult(ref_id=command.id, ok=False, error=error))
            continue
        await agent.log.append(
            "action_detected",
            {
                "id": announce.id,
                "type": announce.action_type.value,
                "text": announce.text,
                "owner": announce.owner,
                "due": announce.due,
                "segment_ids": list(announce.segment_ids),
                "timestamp": format_utc(announce.timestamp),
            },
        )
        await agent.link.send(CommandResult(ref_id=command.id, ok=True))


@dataclass(frozen=True, slots=True)
class Live:
    """A bot in its meeting: its agent (answering commands as it plays) and one stream of it."""

    bot: LaunchedBot
    agent: Agent
    reader: Reader


StartLive = Callable[[Callable[[Agent], Awaitable[None]]], Awaitable[Live]]


@pytest.fixture
async def live_bot(
    client: Client,
    owner: Caller,
    launch_bot: LaunchBot,
    agents: list[Agent],
    tmp_path: Path,
) -> AsyncIterator[StartLive]:
    """``await live_bot(play)``: an active bot with ``enable_actions``, its agent linked and
    handling commands by ``play`` until the test ends, and the owner's stream of it, read past
    the agent's first event (its ``active`` status, id 1)."""
    players: list[asyncio.Task[None]] = []

    async def start(play: Callable[[Agent], Awaitable[None]]) -> Live:
        bot = await launch_bot(BotStatus.ACTIVE, settings=BotSettings(enable_actions=True))
        agent = await _start_agent(client, bot, tmp_path, agents)
        players.append(asyncio.ensure_future(play(agent)))
        path, token = await _subscribe(client, owner, bot)
        reader = await _open(client, path, token)
        await agent.log.append("bot_status", {"status": "active", "status_reason": "admitted"})
        assert [event[0] for event in await reader.take(1)] == [1]
        return Live(bot, agent, reader)

    yield start
    for player in players:
        player.cancel()
    await asyncio.gather(*players, return_exceptions=True)


async def _agent_leaves(client: Client, live: Live) -> tuple[int, str]:
    """The meeting ends (transcript complete), the agent streams ``completed`` and exits; the
    id and name of the stream's next event (that status)."""
    await _ends(client, live.bot)
    await live.agent.log.append(
        "bot_status", {"status": "completed", "status_reason": "meeting_ended"}
    )
    await live.agent.exit()
    event = await live.reader.next()
    assert event is not None
    return event[0], event[1]


async def _said(client: Client, bot: LaunchedBot, index: int, text: str) -> None:
    async with client.app[DB].sessions.begin() as session:
        session.add(
            Segment(
                meeting_id=bot.meeting_id,
                segment_id=f"seg-{index}",
                start=index * 3.0,
                end=index * 3.0 + 2.0,
                absolute_start_time=T0 + timedelta(seconds=index * 3),
                absolute_end_time=T0 + timedelta(seconds=index * 3 + 2),
                text=text,
                speaker="Ada",
                language="en",
                completed=True,
                tier="realtime",
            )
        )


async def _ends(client: Client, bot: LaunchedBot) -> None:
    """The bot completes with its transcript complete, as its agent reports."""
    async with client.app[DB].sessions.begin() as session:
        meeting = await lock_meeting(session, bot_id=bot.bot_id)
        assert meeting is not None
        meeting.transcript_ready_at = datetime.now(UTC)
        hooks: list[StatusHook] = client.app[STATUS_HOOKS]
        for status in (BotStatus.STOPPING, BotStatus.COMPLETED):
            await change_status(session, meeting, status, "meeting_ended", hooks=hooks)


async def _until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Wait for ``check`` up to :data:`WORK_WAIT_S` (a window is analysed meanwhile)."""
    for _ in range(int(WORK_WAIT_S / 0.05)):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {what} within {WORK_WAIT_S} s")


async def _streamed(client: Client, bot: LaunchedBot) -> dict[str, bool]:
    """Action id → whether the agent said it streamed it."""
    async with client.app[DB].sessions() as session:
        rows = await session.execute(
            select(MeetingAction.action_id, MeetingAction.streamed_at).where(
                MeetingAction.meeting_id == bot.meeting_id
            )
        )
        return {action_id: at is not None for action_id, at in rows}


async def _summary_written(client: Client, model: ChatServer) -> None:
    summaries = SummaryWorker(
        database=client.app[DB],
        chat=chat_of(model),
        outbox=client.app[OUTBOX],
        policy=SummaryPolicy(),
    )
    try:
        assert await summaries.step() is True
    finally:
        await summaries.chat.aclose()


async def _actions(client: Client, owner: Caller, bot: LaunchedBot) -> list[dict[str, Any]]:
    url = f"/api/v1/meetings/{bot.meeting_id}/actions"
    body: dict[str, Any] = await (await client.get(url, headers=owner.headers)).json()
    return list(body["actions"])


async def _hooked(client: Client) -> list[str]:
    async with client.app[DB].sessions() as session:
        bodies = await session.scalars(
            select(WebhookMessage.body).where(WebhookMessage.event_type == "action.detected")
        )
        return sorted(json.loads(body)["data"]["id"] for body in bodies)


async def _summary_event(client: Client, owner: Caller, bot: LaunchedBot, reader: Reader) -> int:
    url = f"/api/v1/meetings/{bot.meeting_id}/summary"
    body = await (await client.get(url, headers=owner.headers)).json()
    event = await reader.next()
    assert event is not None and event[1:] == ("summary_ready", body)
    assert await reader.next() is None
    return event[0]


async def test_the_last_windows_actions_follow_the_agents_last_event(
    client: Client,
    owner: Caller,
    live_bot: StartLive,
    model: ChatServer,
    chat: OpenAIChatModel,
) -> None:
    live = await live_bot(lambda agent: _play(agent, knows_announce=True))
    bot, reader = live.bot, live.reader
    registry = CollectorRegistry()
    # During the meeting: the window's action goes on the stream through the agent.
    await _said(client, bot, 0, "Bob, please send the notes.")
    during = _detection(client, chat, CollectorRegistry())
    async with during.running():
        event = await reader.next()
        assert event is not None and event[:2] == (2, "action_detected")
        first = event[2]
        await _until(lambda: _now_streamed(client, bot, first["id"]), "streamed mark")
    # The last words, then the end: the agent leaves before the last window is analysed.
    await _said(client, bot, 1, "Carol, share the agenda.")
    assert await _agent_leaves(client, live) == (3, "bot_status")
    after = _detection(client, chat, registry)
    async with after.running():
        # The stream sends it once detection of the meeting is finished: the next id.
        event = await reader.next()
    assert event is not None and event[:2] == (4, "action_detected")
    last = event[2]
    assert last["text"] == "share the agenda"
    assert await _actions(client, owner, bot) == [first, last]  # as the API serves them
    assert await _streamed(client, bot) == {first["id"]: True, last["id"]: False}
    assert await _hooked(client) == sorted([first["id"], last["id"]])
    assert _offers_failed(registry) == {"no_link": 1.0}  # the agent had left
    await _summary_written(client, model)
    assert await _summary_event(client, owner, bot, reader) == 5


def _offers_failed(registry: CollectorRegistry) -> dict[str, float]:
    """``meetbot_action_stream_offers_failed_total`` by reason (the reasons counted only)."""
    return {
        sample.labels["reason"]: sample.value
        for metric in registry.collect()
        if metric.name == "meetbot_action_stream_offers_failed"
        for sample in metric.samples
        if sample.name.endswith("_total")
    }


async def _now_streamed(client: Client, bot: LaunchedBot, action_id: str) -> bool:
    return (await _streamed(client, bot)).get(action_id, False)


async def test_an_agent_that_predates_announce_action_gets_its_actions_after_its_end(
    client: Client,
    owner: Caller,
    live_bot: StartLive,
    model: ChatServer,
    chat: OpenAIChatModel,
) -> None:
    live = await live_bot(lambda agent: _play(agent, knows_announce=False))
    bot, reader = live.bot, live.reader
    registry = CollectorRegistry()

    async def refused() -> bool:
        return _offers_failed(registry) == {"refused": 1.0}

    await _said(client, bot, 0, "Bob, please send the notes.")
    detection = _detection(client, chat, registry)
    async with detection.running():
        # The old agent answers unknown_command: counted, not marked, nothing streamed.
        await _until(refused, "refused offer")
        assert list((await _streamed(client, bot)).values()) == [False]
        assert await _agent_leaves(client, live) == (2, "bot_status")
        event = await reader.next()
    assert event is not None and event[:2] == (3, "action_detected")
    assert await _actions(client, owner, bot) == [event[2]]
    await _summary_written(client, model)
    assert await _summary_event(client, owner, bot, reader) == 4


OFFER_S = 3.0
"""The stalled agent's test: one window's offers wait this long in all (before: each did)."""


async def test_an_agent_that_stalls_holds_a_windows_offers_for_one_timeout_not_one_each(
    client: Client,
    owner: Caller,
    live_bot: StartLive,
    model: ChatServer,
    chat: OpenAIChatModel,
) -> None:
    texts = ["send the notes", "book the room", "call the vendor"]
    items = [
        {"type": "action_item", "text": text, "owner": None, "due": None, "lines": [1]}
        for text in texts
    ]

    def three_actions(body: dict[str, Any]) -> str:
        """The model: the three actions for any window, the summary's answer as before."""
        name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")
        return (
            _answer(body) if name.startswith("meeting_summary") else json.dumps({"actions": items})
        )

    model.script = three_actions
    offered: list[tuple[float, str]] = []

    async def stall(agent: Agent) -> None:
        """Takes each command and never answers (a wedged page, a lost link not yet noticed)."""
        while True:
            command = await agent.link.commands.get()
            assert isinstance(command.command, AnnounceActionCommand)
            offered.append((time.monotonic(), command.command.text))

    live = await live_bot(stall)
    registry = CollectorRegistry()

    async def all_failed() -> bool:
        # The first offer got no answer; the other two were not offered (its time was spent).
        return _offers_failed(registry) == {"timeout": 1.0, "not_offered": 2.0}

    await _said(client, live.bot, 0, "Bob, send the notes, book the room and call the vendor.")
    async with _detection(client, chat, registry, offer_timeout=OFFER_S).running():
        await _until(all_failed, "failed offers")
        done = time.monotonic()
        # The first offer spent the window's time: the others were counted, not offered, and
        # the window's offers ended one timeout after the first went out (before: one each).
        assert [text for _, text in offered] == texts[:1]
        assert done - offered[0][0] < 2 * OFFER_S
        assert list((await _streamed(client, live.bot)).values()) == [False] * len(texts)
        assert await _agent_leaves(client, live) == (2, "bot_status")
        # All three go out after the agent's end, in stored order, as the API serves them.
        events = await live.reader.take(len(texts))
    assert [event[:2] for event in events] == [(3 + i, "action_detected") for i in range(3)]
    assert [event[2]["text"] for event in events] == texts
    assert await _actions(client, owner, live.bot) == [event[2] for event in events]
