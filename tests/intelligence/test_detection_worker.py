"""The detection worker over a real database (SQLite and PostgreSQL) and a real HTTP model.

The worker reads stored final segments, windows them, calls an OpenAI-compatible server
(:mod:`tests.intelligence.action_llm`, keyword rules) through the real ``openai`` SDK client,
and stores actions with their ``action.detected`` webhooks (docs/api.md 2.9).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import select

from control_plane.action_prompts.service import create_version
from control_plane.db.engine import Database
from control_plane.db.models.action_cursor import ActionCursor
from control_plane.db.models.workspace import Workspace
from control_plane.intelligence.action_prompt import build_messages
from control_plane.intelligence.chat import ChatMessage
from control_plane.intelligence.detection import DetectionRequest
from control_plane.intelligence.detection_metrics import DetectionMetrics
from control_plane.intelligence.worker import DetectionOptions, DetectionWorker
from control_plane.webhooks.outbox import Outbox
from tests.intelligence.action_llm import ActionServer, serve_actions
from tests.intelligence.meetings import (
    LiveMeeting,
    action_webhooks,
    end_meeting,
    live_meeting,
    say,
    stored_actions,
)

pytestmark = pytest.mark.api

FAST = DetectionOptions(
    window_pause=4.0,
    poll=0.05,
    lease=5.0,
    retry_base=0.01,
    retry_max=0.02,
    window_timeout=20.0,
)


@asynccontextmanager
async def running_worker(
    database: Database,
    server: ActionServer,
    options: DetectionOptions = FAST,
    registry: CollectorRegistry | None = None,
) -> AsyncIterator[DetectionWorker]:
    """A worker with its own client of ``server``, running for the ``async with``."""
    chat = server.chat()
    worker = DetectionWorker(
        database=database,
        chat=chat,
        outbox=Outbox(),
        options=options,
        metrics=DetectionMetrics(registry or CollectorRegistry()),
    )
    try:
        async with worker.running():
            yield worker
    finally:
        await chat.aclose()


async def cursor_of(database: Database, meeting: LiveMeeting) -> ActionCursor | None:
    async with database.sessions() as session:
        return await session.get(ActionCursor, meeting.meeting_id)


async def until(check: Callable[[], Awaitable[bool]], limit: float = 30.0) -> None:
    async with asyncio.timeout(limit):
        while not await check():  # noqa: ASYNC110 - polls the database; no event to await
            await asyncio.sleep(0.05)


async def finished(database: Database, meeting: LiveMeeting) -> bool:
    cursor = await cursor_of(database, meeting)
    return cursor is not None and cursor.finished_at is not None


async def test_windows_close_at_a_pause_and_at_the_end_with_the_previous_one_as_context(
    database: Database,
) -> None:
    meeting = await live_meeting(database)
    ids = await say(
        database,
        meeting,
        [
            ("Alice", "Morning everyone, let's start with the budget", 0.0, 2.0),
            ("Bob", "I'll send the revised budget", 2.5, 4.0),
            ("Carol", "So we decided to ship on Monday", 10.0, 12.0),
        ],
    )
    registry = CollectorRegistry()
    async with serve_actions() as server, running_worker(database, server, registry=registry):
        await end_meeting(database, meeting)
        await until(lambda: finished(database, meeting))
    # Both windows' latencies are measured from the end of their last speech.
    assert registry.get_sample_value("meetbot_action_latency_seconds_count") == 2
    assert registry.get_sample_value("meetbot_action_windows_total", {"outcome": "done"}) == 2
    # The window is the last user message; those before it are the prompt's worked examples.
    windows = [
        [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        for body in server.requests
    ]
    assert len(windows) == 2
    assert "Earlier in the meeting" not in windows[0]
    assert "[2] Bob: I'll send the revised budget" in windows[0]
    # The second window sees the first as context and numbers only its own line.
    assert "Bob: I'll send the revised budget" in windows[1].split("Transcript lines:")[0]
    numbered = windows[1].split("Transcript lines:\n")[1]
    assert numbered == "[1] Carol: So we decided to ship on Monday"
    actions = await stored_actions(database, meeting)
    assert [(a.type, a.owner, a.segment_ids) for a in actions] == [
        ("action_item", "Bob", [ids[1]]),
        ("decision", None, [ids[2]]),
    ]
    hooks = await action_webhooks(database)
    assert [(h["id"], h["type"], h["segment_ids"], h["bot_id"]) for h in hooks] == [
        (a.action_id, a.type, a.segment_ids, str(meeting.bot_id)) for a in actions
    ]
    cursor = await cursor_of(database, meeting)
    assert cursor is not None
    assert (cursor.windows, cursor.windows_failed, cursor.owner) == (2, 0, None)


async def test_a_bot_without_enable_actions_causes_no_call(database: Database) -> None:
    silent = await live_meeting(database, enable_actions=False)
    await say(database, silent, [("Dan", "I'll book the room, did we decide?", 0.0, 3.0)])
    await end_meeting(database, silent)
    listened = await live_meeting(database)
    await say(database, listened, [("Eve", "I'll write the notes", 0.0, 2.0)])
    async with serve_actions() as server, running_worker(database, server):
        await end_meeting(database, listened)
        await until(lambda: finished(database, listened))
    # The worker ran (it analysed the other meeting) and never asked about this one.
    assert len(server.requests) == 1
    assert "Dan" not in str(server.requests[0]["messages"])
    assert await cursor_of(database, silent) is None
    assert await stored_actions(database, silent) == []


async def test_a_window_that_keeps_failing_is_reported_once_and_skipped(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    meeting = await live_meeting(database)
    await say(database, meeting, [("Alice", "I'll draft the plan", 0.0, 2.0)])
    caplog.set_level(logging.INFO, logger="control_plane.intelligence.worker")
    async with serve_actions() as server:
        server.fail_statuses = [503, 503, 503]
        async with running_worker(database, server):
            # The first window closes by the pause once the next segment is stored.
            await say(database, meeting, [("Bob", "I'll review the plan", 9.0, 11.0)])
            await end_meeting(database, meeting)
            await until(lambda: finished(database, meeting))
    assert len(server.requests) == 4  # three tries of the first window, one of the second
    gave_up = [r for r in caplog.records if r.getMessage().startswith("action detection gave up")]
    assert len(gave_up) == 1
    assert getattr(gave_up[0], "outcome", None) == "unavailable"
    actions = await stored_actions(database, meeting)
    assert [(a.type, a.owner) for a in actions] == [("action_item", "Bob")]
    cursor = await cursor_of(database, meeting)
    assert cursor is not None
    assert (cursor.windows, cursor.windows_failed) == (2, 1)


async def test_answer_items_that_are_no_action_are_counted_and_logged_with_why(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    meeting = await live_meeting(database)
    # The keyword model lists both lines as action items; "I'll do it" says nothing of substance.
    await say(
        database,
        meeting,
        [("Alice", "I'll draft the plan", 0.0, 2.0), ("Bob", "I'll do it", 2.5, 3.5)],
    )
    caplog.set_level(logging.INFO, logger="control_plane.intelligence.worker")
    registry = CollectorRegistry()
    async with serve_actions() as server, running_worker(database, server, registry=registry):
        await end_meeting(database, meeting)
        await until(lambda: finished(database, meeting))
    assert [a.text for a in await stored_actions(database, meeting)] == ["I'll draft the plan"]
    dropped = "meetbot_action_items_dropped_total"
    assert registry.get_sample_value(dropped, {"reason": "too_short"}) == 1
    logged = [r for r in caplog.records if r.getMessage() == "answer items dropped"]
    assert [getattr(r, "drops", None) for r in logged] == [["too_short: I'll do it"]]
    assert getattr(logged[0], "meeting_id", None) == meeting.meeting_id


async def test_a_windows_messages_are_built_once_for_its_budget_and_all_its_tries(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []

    def counted(request: DetectionRequest) -> list[ChatMessage]:
        built.append(request.lines[0].text)
        return build_messages(request)

    # Wherever the worker's path builds them: its estimate, and detect_actions when not given.
    monkeypatch.setattr("control_plane.intelligence.worker.build_messages", counted)
    monkeypatch.setattr("control_plane.intelligence.detection.build_messages", counted)
    meeting = await live_meeting(database)
    await say(database, meeting, [("Alice", "I'll draft the plan", 0.0, 2.0)])
    async with serve_actions() as server:
        server.fail_statuses = [503, 503]
        async with running_worker(database, server):
            await end_meeting(database, meeting)
            await until(lambda: finished(database, meeting))
    assert len(server.requests) == 3  # two transient failures, then the answer
    assert built == ["I'll draft the plan"]
    assert all(body["messages"] == server.requests[0]["messages"] for body in server.requests)


async def prompt_with_model(database: Database, meeting: LiveMeeting, model: str) -> None:
    """The meeting's workspace defaults to a new action prompt naming ``model``."""
    prompt = await create_version(
        database,
        workspace_id=meeting.workspace_id,
        user_id=None,
        name="with a model",
        instructions="Report tasks and decisions.",
        model=model,
    )
    async with database.sessions.begin() as session:
        workspace = await session.get(Workspace, meeting.workspace_id)
        assert workspace is not None
        workspace.default_prompt_version_id = prompt.id


async def test_each_window_is_sent_to_the_model_its_action_prompt_names(
    database: Database,
) -> None:
    named = await live_meeting(database)
    await prompt_with_model(database, named, "big-model")
    plain = await live_meeting(database)
    await say(database, named, [("Alice", "I'll draft the plan", 0.0, 2.0)])
    await say(database, plain, [("Bob", "I'll review the plan", 0.0, 2.0)])
    async with serve_actions() as server:
        server.models = {"big-model", "keywords"}
        async with running_worker(database, server):
            await end_meeting(database, named)
            await end_meeting(database, plain)
            await until(lambda: finished(database, named))
            await until(lambda: finished(database, plain))
    sent = {window_speaker(body): body["model"] for body in server.requests}
    # The prompt's model for its bot; the provider's configured one for a bot without it.
    assert sent == {"Alice": "big-model", "Bob": "keywords"}
    assert [a.owner for a in await stored_actions(database, named)] == ["Alice"]


async def test_a_model_the_server_does_not_serve_fails_the_window_once_without_retries(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    meeting = await live_meeting(database)
    await prompt_with_model(database, meeting, "no-such-model")
    await say(database, meeting, [("Alice", "I'll draft the plan", 0.0, 2.0)])
    caplog.set_level(logging.INFO, logger="control_plane.intelligence.worker")
    registry = CollectorRegistry()
    async with serve_actions() as server:
        server.models = {"keywords"}
        async with running_worker(database, server, registry=registry):
            await end_meeting(database, meeting)
            await until(lambda: finished(database, meeting))
    # The server's 404 is not transient: one request, no retry.
    assert [body["model"] for body in server.requests] == ["no-such-model"]
    gave_up = [r for r in caplog.records if r.getMessage().startswith("action detection gave up")]
    assert len(gave_up) == 1
    assert "HTTP 404" in gave_up[0].getMessage()
    assert getattr(gave_up[0], "outcome", None) == "error"
    assert getattr(gave_up[0], "prompt_model", None) == "no-such-model"
    assert registry.get_sample_value("meetbot_action_windows_total", {"outcome": "failed"}) == 1
    assert await stored_actions(database, meeting) == []
    cursor = await cursor_of(database, meeting)
    assert cursor is not None
    assert (cursor.windows, cursor.windows_failed) == (1, 1)


def window_speaker(body: dict[str, object]) -> str:
    """The speaker of the one line of a window sent to the model."""
    messages = body["messages"]
    assert isinstance(messages, list)
    user = [m["content"] for m in messages if m["role"] == "user"][-1]
    return str(user.split("Transcript lines:\n")[1].split(":")[0].split("] ")[1])


async def test_an_action_said_again_later_is_stored_once(database: Database) -> None:
    meeting = await live_meeting(database)
    await say(
        database,
        meeting,
        [
            ("Alice", "I'll send the minutes today", 0.0, 2.0),
            ("Alice", "As I said, I'll send the minutes today", 20.0, 22.0),
        ],
    )
    async with serve_actions() as server, running_worker(database, server):
        await end_meeting(database, meeting)
        await until(lambda: finished(database, meeting))
    assert len(server.requests) == 2
    actions = await stored_actions(database, meeting)
    assert [a.text for a in actions] == ["I'll send the minutes today"]
    assert len(await action_webhooks(database)) == 1


async def test_the_cursor_ends_with_the_meeting_and_is_never_claimed_again(
    database: Database,
) -> None:
    meeting = await live_meeting(database)
    await say(database, meeting, [("Alice", "Thanks all", 0.0, 1.0)])
    async with serve_actions() as server:
        async with running_worker(database, server):
            await end_meeting(database, meeting)
            await until(lambda: finished(database, meeting))
        calls = len(server.requests)
        async with running_worker(database, server) as again:
            await asyncio.sleep(0.3)
            assert again.meetings == frozenset()
    assert calls == 1
    assert len(server.requests) == 1
    async with database.sessions() as session:
        rows = (await session.scalars(select(ActionCursor))).all()
    assert [row.meeting_id for row in rows] == [meeting.meeting_id]


async def test_a_stop_abandons_the_call_in_flight_and_frees_the_meeting_for_the_next_owner(
    database: Database,
) -> None:
    meeting = await live_meeting(database)
    await say(database, meeting, [("Alice", "I'll book the room", 0.0, 2.0)])
    await end_meeting(database, meeting)
    async with serve_actions() as server:
        server.hold = True
        async with running_worker(database, server):
            await until(lambda: _now(server.waiting == 1))
        server.forget_held()
        cursor = await cursor_of(database, meeting)
        assert cursor is not None
        # Released, and nothing stored: the window is left whole to the next owner.
        assert (cursor.owner, cursor.lease_until, cursor.last_row) == (None, None, 0)
        assert await stored_actions(database, meeting) == []
        server.release()
        async with running_worker(database, server):
            await until(lambda: finished(database, meeting))
    assert server.unheard == 1
    assert list(server.answered.values()) == [1]
    assert [a.owner for a in await stored_actions(database, meeting)] == ["Alice"]


async def _now(value: bool) -> bool:
    return value
