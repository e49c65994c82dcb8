"""Live action detection end to end: control plane (SQLite) → ``local`` launcher → two real
agents in one testmeeting room where people assign work and settle things (espeak-ng speech),
transcribed by the bundled whisper model.

The agents run as the VMs' launchers run them: no language model and no ``MEETBOT_ACTIONS_*``
in their environment. Detection is the control plane's (docs/api.md 2.9): its worker windows
the stored transcript and asks an OpenAI-compatible server (keyword rules,
:mod:`tests.intelligence.action_llm`, through the ``openai`` SDK). For the bot with
``enable_actions: true`` its actions reach the bot's stream (``action_detected``, through the
agent; the last window's, detected after the agent left, from the control plane after the
agent's last event), the ``action.detected`` webhook and the meeting record, resting on segments
the bot really transcribed. After the end, the meeting's summary (docs/api.md 2.14) is in
``GET …/summary``, the meeting record and the ``summary.ready`` webhook, its decisions and action
items resting on segments the bot transcribed, and the last event of its stream, which outlived
the agent's for it (``summary_ready``). The bot with ``enable_actions: false`` heard the
same meeting: every call the server got was for the other bot's windows or its summary, and it
has no summary.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from sqlalchemy import select

from control_plane.auth.provisioning import (
    add_member,
    create_workspace,
    get_or_create_user,
    issue_key,
)
from control_plane.db.engine import DB
from control_plane.db.migrate import upgrade
from control_plane.db.models.action_cursor import ActionCursor
from control_plane.db.models.bot import Meeting
from control_plane.enums import Role
from control_plane.launchers.local import LocalLauncher
from control_plane.settings import Settings
from testmeeting import TestMeetingServer, parse_scenario
from tests.agent.test_control_plane_e2e import (
    ControlPlane,
    _close,
    _record,
    _status_is,
    _subscribe,
    _until,
)
from tests.intelligence.action_llm import SUMMARY_SCHEMAS, ActionServer, schema_name, serve_actions
from tests.ports import free_port

pytestmark = pytest.mark.browser

MEETING_ID = "act-test-abc"
SCENARIO = f"""
platform: google_meet
meeting_id: '{MEETING_ID}'
lobby: false
participants:
  - name: Alice
    utterances:
      - {{at: 2.0, text: "We decided to launch the new website on March third."}}
      - {{at: 13.0, text: "Bob, please update the pricing page before Wednesday."}}
  - name: Bob
    utterances:
      - {{at: 7.5, text: "Okay. I will send the launch email to all customers by Friday."}}
"""


@dataclass
class Receiver:
    """A webhook receiver on loopback collecting the JSON bodies it is sent."""

    url: str = ""
    bodies: list[dict[str, Any]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.json())
        return web.Response(status=204)


@pytest.fixture
async def model_server() -> AsyncIterator[ActionServer]:
    """The control plane's language model: an OpenAI-compatible server on loopback."""
    async with serve_actions() as server:
        yield server


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    app = web.Application()
    app.router.add_post("/hook", found.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    found.url = f"http://127.0.0.1:{port}/hook"
    try:
        yield found
    finally:
        await runner.cleanup()


@pytest.fixture
async def control_plane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ActionServer
) -> AsyncIterator[tuple[ControlPlane, str]]:
    """A control plane delivering webhooks to loopback; yields it and its workspace id."""
    monkeypatch.setenv("MEETBOT_AGENT_IGNORE_HTTPS_ERRORS", "true")
    monkeypatch.setenv("MEETBOT_AGENT_DATA_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("MEETBOT_AGENT_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("MEETBOT_AGENT_HEARTBEAT_INTERVAL_SECONDS", "1")
    monkeypatch.setenv("MEETBOT_AGENT_DRAIN_TIMEOUT_SECONDS", "10")
    monkeypatch.setenv("MEETBOT_AGENT_TIMEOUT_SCALE", "0.05")
    # As on a VM: nothing of action detection reaches the agents.
    for name in [name for name in os.environ if name.startswith("MEETBOT_ACTIONS_")]:
        monkeypatch.delenv(name)
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'meetbot.db'}"
    await upgrade(database_url)
    port = free_port()
    settings = Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        port=port,
        public_url=f"http://127.0.0.1:{port}",
        scheduler_interval_seconds=0.1,
        webhook_allow_http=True,
        webhook_allow_private=True,
        webhook_poll_interval_seconds=0.1,
        intelligence_provider="openai",
        intelligence_base_url=model_server.base_url,
        intelligence_api_key="test",
        intelligence_model="keywords",
        # Windows close between the utterances (a second and a half without a new segment),
        # so their actions are streamed while the bot is in the meeting.
        intelligence_window_pause_seconds=1.5,
        intelligence_poll_seconds=0.2,
        # The summary is written a second after the end.
        intelligence_summary_settle_seconds=1.0,
        intelligence_summary_poll_seconds=0.2,
    )
    launcher = LocalLauncher(settings.data_dir, grace_seconds=10.0)
    cp = ControlPlane(settings, launcher)
    await cp.start()
    assert cp.app is not None
    async with cp.app[DB].sessions.begin() as session:
        user = await get_or_create_user(session, "actions-e2e@example.org")
        workspace = await create_workspace(session, "Actions E2E")
        await add_member(session, workspace, user, Role.OWNER)
        issued = await issue_key(
            session, user=user, workspace_id=workspace.id, name="e2e", key_prefix="mbk"
        )
        workspace_id = str(workspace.id)
    cp.key = issued.secret
    try:
        yield cp, workspace_id
    finally:
        await cp.stop()
        await launcher.aclose()


async def _launch(http: aiohttp.ClientSession, cp: ControlPlane, name: str, actions: bool) -> str:
    """Launch a transcribing bot; return once its agent process runs (it read its env)."""
    body = {
        "platform": "google_meet",
        "meeting_url": f"https://meet.google.com/{MEETING_ID}",
        "bot_name": name,
        "enable_actions": actions,
        "language": "en",  # the bundled tiny.en alone
        "recording_enabled": False,
    }
    async with http.post(f"{cp.api}/bots", json=body) as created:
        assert created.status == 201, await created.text()
        bot_id: str = (await created.json())["bot_id"]

    async def spawned() -> bool:
        return bool((await _record(http, cp, bot_id))["bot_container_id"])

    await _until(spawned, "the agent process", 30)
    return bot_id


async def _get(http: aiohttp.ClientSession, url: str) -> Any:
    async with http.get(url) as response:
        assert response.status == 200, await response.text()
        return await response.json()


async def test_actions_reach_stream_webhook_and_record_and_a_bot_without_them_calls_nothing(
    control_plane: tuple[ControlPlane, str],
    receiver: Receiver,
    model_server: ActionServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cp, workspace_id = control_plane
    meeting = TestMeetingServer(scenario=parse_scenario(SCENARIO))
    await meeting.start()
    monkeypatch.setenv("MEETBOT_AGENT_EXTRA_BROWSER_ARGS", json.dumps(meeting.browser_args()))
    try:
        async with aiohttp.ClientSession(headers={"X-API-Key": cp.key}) as http:
            hooks = f"{cp.api}/workspaces/{workspace_id}/webhooks"
            endpoint = {"url": receiver.url, "filter_types": ["action.detected", "summary.ready"]}
            async with http.post(hooks, json=endpoint) as r:
                assert r.status == 201, await r.text()

            with_actions = await _launch(http, cp, "Notetaker", True)
            without = await _launch(http, cp, "Listener", False)

            for bot_id in (with_actions, without):
                await _until(partial(_status_is, http, cp, bot_id, {"active"}), "active", 60)
            stream = await _subscribe(http, cp, with_actions)
            quiet = await _subscribe(http, cp, without)
            room = meeting.room("google_meet", MEETING_ID)
            await _until(lambda: _said_all(room), "the last utterance", 60)
            await asyncio.sleep(6.0)  # the last words end, are transcribed and analysed
            await room.end()
            for bot_id in (with_actions, without):
                ended = partial(_status_is, http, cp, bot_id, {"completed", "failed"})
                final = await _until(ended, "the end", 300)
                assert final["status"] == "completed", final
            for s in (stream, quiet):
                await _until(partial(_done, s), "stream end", 30)
                await _close(s)

            record = await _record(http, cp, with_actions)
            meeting_url = f"{cp.api}/meetings/{record['id']}"
            await _until(partial(_analysed, cp, record["id"]), "the last window", 60)
            full = await _get(http, meeting_url)
            ids = [a["id"] for a in full["actions"]]
            assert ids, full
            said = {s["id"] for s in stream.of("transcript_segment") if s["completed"]}
            stored = {s["id"] for s in (await _get(http, f"{meeting_url}/transcript"))["segments"]}
            for action in full["actions"]:
                assert action["type"] in {"action_item", "decision", "question", "follow_up"}
                assert action["segment_ids"] and set(action["segment_ids"]) <= said & stored
            assert [a["id"] for a in (await _get(http, f"{meeting_url}/actions"))["actions"]] == ids

            # Every action reached the stream, as stored: those of windows closed while the bot
            # was in the meeting through the agent, the last window's after the agent's end.
            detected = stream.of("action_detected")
            assert sorted(action["id"] for action in detected) == sorted(ids)
            by_id = {a["id"]: a for a in full["actions"]}
            for action in detected:
                assert action == by_id[action["id"]]

            def hooked(kind: str) -> list[dict[str, Any]]:
                return [body for body in receiver.bodies if body["type"] == kind]

            await _until(lambda: _now(len(hooked("action.detected")) >= len(ids)), "webhooks", 30)
            assert sorted(b["data"]["id"] for b in hooked("action.detected")) == sorted(ids)
            assert {b["type"] for b in receiver.bodies} <= {"action.detected", "summary.ready"}

            # The bot without actions heard the same meeting and caused no call: every request
            # the model got was one of the other bot's windows, its meeting never enrolled.
            assert [s for s in quiet.of("transcript_segment") if s["completed"]]
            assert quiet.of("action_detected") == []
            quiet_record = await _record(http, cp, without)
            assert (await _get(http, f"{cp.api}/meetings/{quiet_record['id']}/actions")) == {
                "actions": []
            }
            assert cp.app is not None
            async with cp.app[DB].sessions() as session:
                assert await session.get(ActionCursor, quiet_record["id"]) is None
                cursor = await session.get(ActionCursor, record["id"])
            assert cursor is not None
            assert cursor.windows_failed == 0
            detections = [r for r in model_server.requests if schema_name(r) not in SUMMARY_SCHEMAS]
            assert len(detections) == cursor.windows > 0

            # The summary after the end (issue 34 item 3, docs/api.md 2.14).
            summary_url = f"{meeting_url}/summary"
            await _until(partial(_answers, http, summary_url, 200), "the summary", 60)
            summary = await _get(http, summary_url)
            assert summary["status"] == "ready" and summary["summary"], summary
            # The stream of the bot with enable_actions outlived its agent for the summary: its
            # last event, numbered after the agent's (docs/api.md 2.7); the other's has none.
            assert stream.events[-1] == (len(stream.events), "summary_ready", summary)
            assert stream.of("summary_ready") == [summary]
            assert quiet.of("summary_ready") == []
            items = [*summary["decisions"], *summary["action_items"]]
            assert items, summary  # "we decided …", "I will send …"
            for item in items:
                assert item["segment_ids"] and set(item["segment_ids"]) <= said & stored
            cited = {s["id"]: s for s in stream.of("transcript_segment") if s["completed"]}
            for item in summary["action_items"]:
                # An owner is one the cited lines say (the speaker of "I will …", a name asked).
                lines = [cited[i] for i in item["segment_ids"]]
                assert item["owner"] is None or any(
                    item["owner"] in (line["speaker"], *line["text"].replace(",", " ").split())
                    for line in lines
                ), item
            assert (await _get(http, meeting_url))["summary"] == summary
            await _until(lambda: _now(bool(hooked("summary.ready"))), "summary.ready", 30)
            [hook] = hooked("summary.ready")
            assert hook["data"]["meeting_id"] == record["id"]
            assert hook["data"]["summary"] == summary["summary"]
            assert hook["data"]["action_items"] == summary["action_items"]
            assert hook["data"]["decisions"] == summary["decisions"]
            # One part for this short meeting and none for the bot without enable_actions.
            assert [schema_name(r) for r in model_server.requests if r not in detections] == [
                "meeting_summary"
            ]
            async with http.get(f"{cp.api}/meetings/{quiet_record['id']}/summary") as response:
                assert response.status == 404
                assert (await response.json())["code"] == "summary_not_found"
    finally:
        await meeting.stop()


async def _analysed(cp: ControlPlane, meeting_id: int) -> bool:
    """The control plane analysed the meeting's every stored segment (its cursor is done)."""
    assert cp.app is not None
    async with cp.app[DB].sessions() as session:
        cursor = await session.get(ActionCursor, meeting_id)
        status = await session.scalar(select(Meeting.status).where(Meeting.id == meeting_id))
    return cursor is not None and cursor.finished_at is not None and status == "completed"


async def _answers(http: aiohttp.ClientSession, url: str, status: int) -> bool:
    async with http.get(url) as response:
        return response.status == status


async def _said_all(room: Any) -> bool:
    return sum(1 for e in room.timeline() if e.type == "speech") >= 3


async def _done(stream: Any) -> bool:
    return bool(stream.task and stream.task.done())


async def _now(value: bool) -> bool:
    return value
