"""Live action detection end to end: control plane (SQLite) → ``local`` launcher → two real
agents in one testmeeting room where people assign work and settle things (espeak-ng speech),
transcribed by the bundled whisper model.

The bot with ``enable_actions: true`` runs the ``local`` provider (the packaged Qwen2.5-Coder
0.5B GGUF, in its own process): its ``action_detected`` events rest on segment ids that exist,
the ``action.detected`` webhook reaches a receiver, and the meeting record and
``GET …/actions`` list the same actions. The bot with ``enable_actions: false`` hears the same
meeting with its provider set to ``openai`` against a real OpenAI-compatible server that counts
requests: it receives none. The whole meeting is one window (a long pause setting), so the
model is asked once, when the bot leaves.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from agent.actions.local_models import resolve_local_model
from agent.actions.settings import ActionSettings
from control_plane.auth.provisioning import (
    add_member,
    create_workspace,
    get_or_create_user,
    issue_key,
)
from control_plane.db.engine import DB
from control_plane.db.migrate import upgrade
from control_plane.enums import Role
from control_plane.launchers.local import LocalLauncher
from control_plane.settings import Settings
from testmeeting import TestMeetingServer, parse_scenario
from tests.actions.llm_server import serve
from tests.agent.test_control_plane_e2e import (
    ControlPlane,
    _close,
    _record,
    _status_is,
    _subscribe,
    _until,
)
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


@pytest.fixture(scope="session")
def action_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packaged default model joined once; the agents use the file in place."""
    return resolve_local_model(ActionSettings().local_model, tmp_path_factory.mktemp("llm"))


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
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, action_model: Path
) -> AsyncIterator[tuple[ControlPlane, str]]:
    """A control plane delivering webhooks to loopback; yields it and its workspace id."""
    monkeypatch.setenv("MEETBOT_AGENT_IGNORE_HTTPS_ERRORS", "true")
    monkeypatch.setenv("MEETBOT_AGENT_DATA_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("MEETBOT_AGENT_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("MEETBOT_AGENT_HEARTBEAT_INTERVAL_SECONDS", "1")
    monkeypatch.setenv("MEETBOT_AGENT_DRAIN_TIMEOUT_SECONDS", "10")
    monkeypatch.setenv("MEETBOT_AGENT_TIMEOUT_SCALE", "0.05")
    # The whole meeting is one window, detected as the bot leaves: one call. Its answer gets the
    # default 384 tokens: at 200, three actions citing long segment ids were cut off mid-JSON
    # now and then (answers_invalid=1, no action).
    monkeypatch.setenv("MEETBOT_ACTIONS_LOCAL_MODEL", str(action_model))
    monkeypatch.setenv("MEETBOT_ACTIONS_WINDOW_PAUSE_SECONDS", "120")
    monkeypatch.setenv("MEETBOT_ACTIONS_WINDOW_MAX_SPEECH_SECONDS", "300")
    monkeypatch.setenv("MEETBOT_ACTIONS_LOCAL_CONTEXT_TOKENS", "2048")
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
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cp, workspace_id = control_plane
    meeting = TestMeetingServer(scenario=parse_scenario(SCENARIO))
    await meeting.start()
    monkeypatch.setenv("MEETBOT_AGENT_EXTRA_BROWSER_ARGS", json.dumps(meeting.browser_args()))
    try:
        async with (
            serve(None) as counting,
            aiohttp.ClientSession(headers={"X-API-Key": cp.key}) as http,
        ):
            hooks = f"{cp.api}/workspaces/{workspace_id}/webhooks"
            endpoint = {"url": receiver.url, "filter_types": ["action.detected"]}
            async with http.post(hooks, json=endpoint) as r:
                assert r.status == 201, await r.text()

            monkeypatch.setenv("MEETBOT_ACTIONS_PROVIDER", "local")
            with_actions = await _launch(http, cp, "Notetaker", True)
            # The second agent's provider would call the counting server, if it called at all.
            monkeypatch.setenv("MEETBOT_ACTIONS_PROVIDER", "openai")
            monkeypatch.setenv("MEETBOT_ACTIONS_LLM_BASE_URL", counting.base_url)
            monkeypatch.setenv("MEETBOT_ACTIONS_LLM_API_KEY", "k")
            without = await _launch(http, cp, "Listener", False)

            for bot_id in (with_actions, without):
                await _until(partial(_status_is, http, cp, bot_id, {"active"}), "active", 60)
            stream = await _subscribe(http, cp, with_actions)
            quiet = await _subscribe(http, cp, without)
            room = meeting.room("google_meet", MEETING_ID)
            await _until(lambda: _said_all(room), "the last utterance", 60)
            await asyncio.sleep(6.0)  # the last words end and reach the transcriber
            await room.end()
            for bot_id in (with_actions, without):
                ended = partial(_status_is, http, cp, bot_id, {"completed", "failed"})
                final = await _until(ended, "the end", 300)
                assert final["status"] == "completed", final
            for s in (stream, quiet):
                await _until(partial(_done, s), "stream end", 30)
                await _close(s)

            detected = stream.of("action_detected")
            assert detected, stream.of("transcript_segment")
            said = {s["id"] for s in stream.of("transcript_segment") if s["completed"]}
            for action in detected:
                assert action["type"] in {"action_item", "decision", "question", "follow_up"}
                assert action["segment_ids"] and set(action["segment_ids"]) <= said
            ids = [a["id"] for a in detected]

            record = await _record(http, cp, with_actions)
            meeting_url = f"{cp.api}/meetings/{record['id']}"
            full = await _get(http, meeting_url)
            assert [a["id"] for a in full["actions"]] == ids
            assert [a["id"] for a in (await _get(http, f"{meeting_url}/actions"))["actions"]] == ids
            stored = {s["id"] for s in (await _get(http, f"{meeting_url}/transcript"))["segments"]}
            assert all(set(a["segment_ids"]) <= stored for a in full["actions"])

            await _until(lambda: _now(len(receiver.bodies) >= len(ids)), "the webhooks", 30)
            assert {b["data"]["id"] for b in receiver.bodies} == set(ids)
            assert {b["type"] for b in receiver.bodies} == {"action.detected"}

            # The bot without actions heard the same meeting and asked nobody anything.
            assert [s for s in quiet.of("transcript_segment") if s["completed"]]
            assert quiet.of("action_detected") == []
            quiet_record = await _record(http, cp, without)
            assert (await _get(http, f"{cp.api}/meetings/{quiet_record['id']}/actions")) == {
                "actions": []
            }
            assert counting.requests == []
    finally:
        await meeting.stop()


async def _said_all(room: Any) -> bool:
    return sum(1 for e in room.timeline() if e.type == "speech") >= 3


async def _done(stream: Any) -> bool:
    return bool(stream.task and stream.task.done())


async def _now(value: bool) -> bool:
    return value
