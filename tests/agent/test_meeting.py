"""The real agent in the testmeeting simulator, for each of the three skins.

Each test opens a room with a short scenario, runs the agent (``agent.meeting.bot.Bot``: Chromium,
the platform adapter, capture, link, SSE) against it with a real WebSocket peer speaking the
control plane's side of the link, and compares what the agent reported with the room's ground
truth. Timeouts are the API's minimums scaled by ``timeout_scale`` (a host setting the API
cannot reach), so "exactly after the configured time" is checked against the scaled value.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
import struct
import time
import uuid
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio

from agent.contracts.bot_config import BotConfig, BotSettings, RecordingFormat
from agent.contracts.link import (
    AgentCommand,
    ArtifactKind,
    AvatarCommand,
    ChatCommand,
    Command,
    CommandErrorCode,
    HandCommand,
    ScreenshotCommand,
    SettingsChange,
    SpeakCommand,
    StopCommand,
    UpdateSettingsCommand,
    UploadSlot,
)
from agent.contracts.status import BotStatus, StatusReason
from agent.link.artifacts import png_size
from agent.meeting.bot import Bot
from agent.process.settings import AgentSettings
from agent.transcribe.normalize import word_error_rate
from agent.wiring import assemble
from testmeeting import Room, TestMeetingServer, parse_scenario
from tests.agent.link_peer import LinkPeer

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.asyncio(loop_scope="module"),
]

PLATFORMS = ["google_meet", "zoom", "teams"]
BOT_NAME = "Notetaker"
TOKEN = "agent-token-for-tests"
SCALE = 0.05  # admission 30 s → 1.5 s, left-alone 10 s → 0.5 s, startup-alone 60 s → 3 s
POLL = 0.25
# Never early; late by at most a poll plus one page probe, which a loaded 2-core CI box can
# stretch to about a second.
LATE = 2 * POLL + 1.0


def _meeting_ids() -> Iterator[dict[str, str]]:
    for n in itertools.count(1):
        letters = "".join(chr(ord("a") + (n // 26**k) % 26) for k in range(3))
        yield {
            "google_meet": f"{letters}-test-{letters}",
            "zoom": f"{810000000 + n}",
            "teams": f"{4100000000 + n}",
        }


_IDS = _meeting_ids()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[TestMeetingServer]:
    async with TestMeetingServer() as running:
        yield running


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@dataclass
class Run:
    """One agent run against one room."""

    room: Room
    bot: Bot
    peer: LinkPeer
    task: asyncio.Task[BotStatus]

    def statuses(self) -> list[tuple[str, str | None]]:
        return [(e.status.value, e.status_reason) for e in self.peer.events_of("status")]

    def status_time(self, status: str) -> datetime:
        found: datetime = next(
            e.ts for e in self.peer.events_of("status") if e.status.value == status
        )
        return found

    async def command(self, body: AgentCommand) -> object:
        command = Command(command=body)
        await self.peer.send_command(command)
        return await self.result(command.id)

    async def result(self, command_id: str) -> object:
        await self.peer.wait_for(lambda: command_id in self.peer.results, within=15)
        return self.peer.results[command_id]

    async def finish(self) -> BotStatus:
        return await asyncio.wait_for(self.task, 40)


@pytest_asyncio.fixture(loop_scope="module")
async def start(
    server: TestMeetingServer, tmp_path: Path, models_dir: Path
) -> AsyncIterator[object]:
    runs: list[Run] = []

    async def _start(
        platform: str, scenario: str, meeting_id: str | None = None, transcribe: bool = False
    ) -> Run:
        ids = next(_IDS)
        room_id = ids[platform]
        room = await server.create_room(
            parse_scenario(f"platform: {platform}\nmeeting_id: '{room_id}'\n{scenario}")
        )
        peer = LinkPeer(str(uuid.uuid4()), TOKEN)
        await peer.start()
        config = BotConfig(
            bot_id=uuid.UUID(peer.bot_id),
            meeting_id=1,
            platform=platform,
            meeting_url=server.meeting_url(platform, meeting_id or room_id),
            native_meeting_id=meeting_id or room_id,
            settings=BotSettings(
                bot_name=BOT_NAME,
                admission_timeout_seconds=30,
                startup_alone_timeout_seconds=60,
                left_alone_timeout_seconds=10,
                transcribe_enabled=transcribe,
            ),
            control_plane_url=peer.url,
            agent_token=TOKEN,
        )
        settings = AgentSettings(
            extra_browser_args=server.browser_args(),
            ignore_https_errors=True,
            data_dir=tmp_path,
            timeout_scale=SCALE,
            poll_interval_seconds=POLL,
            heartbeat_interval_seconds=1.0,
            drain_timeout_seconds=5.0,
            join_timeout_seconds=20.0,
            models_dir=models_dir,
        )
        bot = assemble(config, settings)
        run = Run(room, bot, peer, asyncio.create_task(bot.run()))
        runs.append(run)
        return run

    yield _start
    for run in runs:
        if not run.task.done():
            run.bot.request_stop()
            await asyncio.wait_for(run.task, 30)
        await run.peer.stop()


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_lobby_admission_participants_transcript_chat_hand_screenshot_and_meeting_end(
    platform: str, start: object
) -> None:
    run: Run = await start(  # type: ignore[operator]
        platform,
        transcribe=True,
        scenario="""
lobby: true
admission: {decision: admit, after_s: 0.5}
participants:
  - name: Alice
    utterances: [{at: 0.2, text: "Good morning everyone, let us review the plan for this week."}]
    chat: [{at: 0.5, text: "Hello from Alice"}]
  - {name: Bob, join_at: 1.5, leave_at: 4.0}
""",
    )
    peer, room = run.peer, run.room
    await peer.wait_for(lambda: any(s == "active" for s, _ in run.statuses()), within=30)
    await peer.wait_for(
        lambda: any("Bob" in e.left for e in peer.events_of("participants")), within=15
    )
    await peer.wait_for(lambda: bool(peer.events_of("chat_message")), within=10)

    # Chat both ways: Alice's message reached the agent, the agent's message reached the room.
    alice = peer.events_of("chat_message")[0]
    assert (alice.sender, alice.text, alice.from_bot) == ("Alice", "Hello from Alice", False)
    result = await run.command(ChatCommand(text="Notes are on."))
    assert result.ok, result  # type: ignore[attr-defined]
    await _until(lambda: any(m.text == "Notes are on." for m in room.chat))
    sent = next(m for m in room.chat if m.text == "Notes are on.")
    assert sent.sender == BOT_NAME
    assert any(e.from_bot and e.text == "Notes are on." for e in peer.events_of("chat_message"))

    # Hand raise and lower, as the host sees it.
    bot_in_room = room.find_by_name(BOT_NAME)
    assert (await run.command(HandCommand(raised=True))).ok  # type: ignore[attr-defined]
    await _until(lambda: room.participants[bot_in_room.id].hand_raised)
    assert (await run.command(HandCommand(raised=False))).ok  # type: ignore[attr-defined]
    await _until(lambda: not room.participants[bot_in_room.id].hand_raised)

    # Screenshot: a PNG of the meeting, uploaded to the slot the control plane named.
    slot = UploadSlot(
        storage_key=f"bots/{peer.bot_id}/screenshot/shot.png",
        url=f"{peer.url}/uploads/shot.png",
        headers={"Content-Type": "image/png"},
        agent_auth=True,
        expires_at=datetime.now(UTC) + timedelta(minutes=5),
    )
    shot = await run.command(ScreenshotCommand(artifact_id="a1", upload=slot))
    assert shot.ok, shot  # type: ignore[attr-defined]
    body, headers = peer.uploads["shot.png"]
    assert png_size(body) == (1280, 720)
    assert headers["Authorization"] == f"Bearer {TOKEN}"
    assert shot.result["storage_key"] == slot.storage_key  # type: ignore[attr-defined]
    assert any(a.artifact_id == "a1" for a in peer.events_of("artifact"))

    # Speech reached the agent as audio frames, and came out as a transcript segment named
    # after the speaker, on the link (final) and on the stream (partials, then the final).
    # The endpointer may close an utterance at the comma's pause ("Good morning everyone!"
    # then "Let us review ..."), as it should in real speech, so Alice's finals are judged
    # together, in order.
    assert run.bot.capture.stats.voiced_seconds > 1.0
    reference = "good morning everyone let us review the plan for this week"

    def said() -> str:
        return " ".join(e.segment.text for e in peer.events_of("transcript_segment"))

    await peer.wait_for(lambda: bool(peer.events_of("transcript_segment")), within=30)
    with contextlib.suppress(TimeoutError):
        await peer.wait_for(lambda: word_error_rate(reference, said()) <= 0.5, within=20)
    finals = [e.segment for e in peer.events_of("transcript_segment")]
    assert word_error_rate(reference, said()) <= 0.5, said()
    for final in finals:
        assert final.completed
        assert final.speaker == "Alice"
        assert 0.0 <= final.start < final.end
    assert all(a.start < b.start for a, b in itertools.pairwise(finals))

    # A voice the bot does not have is refused clearly, naming the argument.
    speak = await run.command(SpeakCommand(text="hi", voice="nobody"))
    assert speak.error is CommandErrorCode.INVALID_ARGUMENTS  # type: ignore[attr-defined]
    assert speak.field == "voice"  # type: ignore[attr-defined]

    await room.end()
    assert await run.finish() is BotStatus.COMPLETED
    assert run.statuses() == [
        ("joining", "join_started"),
        ("awaiting_admission", "lobby"),
        ("active", "admitted"),
        ("stopping", "meeting_ended"),
        ("completed", "meeting_ended"),
    ]
    updates = peer.events_of("participants")
    assert [u.participants for u in updates] == [["Alice"], ["Alice", "Bob"], ["Alice"]]
    assert [(u.joined, u.left) for u in updates] == [
        (["Alice"], []),
        (["Bob"], []),
        ([], ["Bob"]),
    ]
    # The SSE log says the same, in the same order, with increasing ids.
    stream = run.bot.stream.snapshot()
    assert [e.id for e in stream] == list(range(1, len(stream) + 1))
    sse_updates = [json.loads(e.data) for e in stream if e.event == "participant_update"]
    assert [u["participants"] for u in sse_updates] == [u.participants for u in updates]
    sse_statuses = [json.loads(e.data)["status"] for e in stream if e.event == "bot_status"]
    assert sse_statuses == [s for s, _ in run.statuses()]
    sse_segments = [json.loads(e.data) for e in stream if e.event == "transcript_segment"]
    assert {s["id"] for s in sse_segments} == {f.id for f in finals}
    for final in finals:
        last = [s for s in sse_segments if s["id"] == final.id][-1]
        assert last["completed"] is True and last["text"] == final.text
    assert any(e.type == "transcription_ready" for e in peer.stored.values())
    assert peer.duplicates == 0


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_lobby_never_answered_fails_after_exactly_the_admission_timeout(
    platform: str, start: object
) -> None:
    run: Run = await start(  # type: ignore[operator]
        platform, "lobby: true\nadmission: {decision: ignore}\nparticipants: [{name: Alice}]\n"
    )
    assert await run.finish() is BotStatus.FAILED
    assert run.statuses()[-2:] == [
        ("stopping", "admission_timeout"),
        ("failed", "admission_timeout"),
    ]
    waited = (run.status_time("stopping") - run.status_time("awaiting_admission")).total_seconds()
    configured = 30 * SCALE
    assert configured <= waited <= configured + LATE


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_denied_by_the_host(platform: str, start: object) -> None:
    run: Run = await start(  # type: ignore[operator]
        platform,
        "lobby: true\nadmission: {decision: deny, after_s: 0.3}\nparticipants: [{name: Alice}]\n",
    )
    assert await run.finish() is BotStatus.FAILED
    assert ("awaiting_admission", "lobby") in run.statuses()
    assert run.statuses()[-1] == ("failed", "admission_denied")


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_removed_by_the_host(platform: str, start: object) -> None:
    run: Run = await start(  # type: ignore[operator]
        platform, "lobby: false\nparticipants: [{name: Alice}]\nremovals: [{at: 1.0}]\n"
    )
    assert await run.finish() is BotStatus.COMPLETED
    assert run.statuses() == [
        ("joining", "join_started"),
        ("active", "joined"),
        ("stopping", "removed_by_host"),
        ("completed", "removed_by_host"),
    ]


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_left_alone_after_the_last_participant_leaves(platform: str, start: object) -> None:
    run: Run = await start(  # type: ignore[operator]
        platform, "lobby: false\nparticipants: [{name: Alice, leave_at: 1.0}]\n"
    )
    assert await run.finish() is BotStatus.COMPLETED
    assert run.statuses()[-1] == ("completed", "left_alone")
    left = next(e.t for e in run.room.timeline() if e.type == "left" and e.name == "Alice")
    waited = run.status_time("stopping").timestamp() - left
    assert waited >= 10 * SCALE
    assert [u.left for u in run.peer.events_of("participants")][-1] == ["Alice"]
    # The bot left the room cleanly.
    assert any(e.type == "left" and e.name == BOT_NAME for e in run.room.timeline())


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_startup_alone_when_nobody_comes(platform: str, start: object) -> None:
    run: Run = await start(platform, "lobby: false\n")  # type: ignore[operator]
    assert await run.finish() is BotStatus.COMPLETED
    assert run.statuses()[-1] == ("completed", "startup_alone")
    waited = (run.status_time("stopping") - run.status_time("active")).total_seconds()
    assert 60 * SCALE <= waited <= 60 * SCALE + LATE
    assert run.peer.events_of("participants")[0].participants == []


@pytest.mark.parametrize("platform", PLATFORMS)
async def test_unknown_meeting_fails_as_not_found(platform: str, start: object) -> None:
    unknown = {"google_meet": "zzz-zzzz-zzz", "zoom": "899999999", "teams": "4199999999"}
    run: Run = await start(  # type: ignore[operator]
        platform, "lobby: false\n", meeting_id=unknown[platform]
    )
    assert await run.finish() is BotStatus.FAILED
    assert run.statuses()[-1] == ("failed", "meeting_not_found")


async def _until(predicate: Callable[[], bool], within: float = 10.0) -> None:
    async with asyncio.timeout(within):
        # The room exposes state, not events, so it is polled.
        while not predicate():  # noqa: ASYNC110 - see above
            await asyncio.sleep(0.1)


def _solid_png(rgb: tuple[int, int, int], width: int = 64, height: int = 36) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


async def _centre_pixel(png: bytes) -> tuple[int, int, int]:
    """The centre pixel of a PNG, decoded by ffmpeg (no imaging library in the project)."""
    width, height = png_size(png)
    process = await asyncio.create_subprocess_exec(
        "ffmpeg",
        "-loglevel",
        "error",
        "-f",
        "png_pipe",
        "-i",
        "-",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "-",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    raw, _ = await process.communicate(png)
    offset = ((height // 2) * width + width // 2) * 3
    red, green, blue = raw[offset : offset + 3]
    return red, green, blue


async def test_avatar_command_shows_the_image_on_the_bot_camera(start: object) -> None:
    run: Run = await start(  # type: ignore[operator]
        "google_meet", "lobby: false\nparticipants: [{name: Alice}]\n"
    )
    await run.peer.wait_for(lambda: any(s == "active" for s, _ in run.statuses()), within=30)
    me = run.room.find_by_name(BOT_NAME).id
    await _until(lambda: bool(run.room.received_frames(me, "camera")), within=15)
    before = run.room.received_frames(me, "camera")[-1][1]
    assert await _centre_pixel(before) != (255, 0, 0)  # the default image: initials on grey
    red = "data:image/png;base64," + base64.b64encode(_solid_png((255, 0, 0))).decode()
    result = await run.command(AvatarCommand(image_url=red))
    assert result.ok, result  # type: ignore[attr-defined]
    sent_at = time.time()

    async def camera_is_red() -> bool:
        frames = [png for t, png in run.room.received_frames(me, "camera") if t > sent_at]
        return bool(frames) and await _centre_pixel(frames[-1]) == (255, 0, 0)

    async with asyncio.timeout(15):
        while not await camera_is_red():  # noqa: ASYNC110 - the room keeps frames, no events
            await asyncio.sleep(0.3)
    # An argument the model refuses is answered with a typed error naming it, as is a command
    # this agent does not know (sent raw: the control plane's models would refuse to build them).
    await run.peer.send_raw(
        '{"type": "command", "id": "bad-avatar", "ts": "2026-01-01T00:00:00Z",'
        ' "command": {"name": "avatar", "image_url": "ftp://example.org/x.png"}}'
    )
    bad = await run.result("bad-avatar")
    assert bad.error is CommandErrorCode.INVALID_ARGUMENTS  # type: ignore[attr-defined]
    assert bad.field == "image_url"  # type: ignore[attr-defined]
    await run.peer.send_raw(
        '{"type": "command", "id": "dance", "ts": "2026-01-01T00:00:00Z",'
        ' "command": {"name": "dance"}}'
    )
    unknown = await run.result("dance")
    assert unknown.error is CommandErrorCode.UNKNOWN_COMMAND  # type: ignore[attr-defined]
    run.bot.request_stop()
    assert await run.finish() is BotStatus.COMPLETED


async def test_update_settings_applies_before_admission_and_refuses_what_cannot_change_live(
    start: object, caplog: pytest.LogCaptureFixture
) -> None:
    """update_settings on a real agent: in the lobby, transcription (with its language) and
    recording switch on and are used once admitted; in the meeting, what can no longer change
    is refused whole with the field named, and recording can still be stopped."""
    caplog.set_level(logging.INFO, logger="agent.transcribe.pipe")
    run: Run = await start(  # type: ignore[operator]
        "google_meet",
        """
lobby: true
admission: {decision: admit, after_s: 1.0}
participants:
  - name: Alice
    utterances: [{at: 2.5, text: "Good morning everyone, let us review the plan for this week."}]
""",
    )
    peer = run.peer
    await peer.wait_for(lambda: any(s == "awaiting_admission" for s, _ in run.statuses()), 30)
    on = await run.command(
        UpdateSettingsCommand(
            changes=SettingsChange(transcribe_enabled=True, language="en", recording_enabled=True)
        )
    )
    assert on.ok, on  # type: ignore[attr-defined]
    effective = on.result["settings"]  # type: ignore[attr-defined]
    assert (effective["transcribe_enabled"], effective["language"]) == (True, "en")
    assert effective["recording_enabled"] is True
    assert effective["bot_name"] == BOT_NAME  # untouched

    await peer.wait_for(lambda: any(s == "active" for s, _ in run.statuses()), within=30)
    # The transcriber opened with the language set in the lobby, and transcribes.
    await peer.wait_for(lambda: bool(peer.events_of("transcript_segment")), within=60)
    segment = peer.events_of("transcript_segment")[0].segment
    assert segment.language == "en"
    opened = [r for r in caplog.records if r.getMessage() == "transcription started"]
    assert [getattr(r, "language", None) for r in opened] == ["en"]

    # In the meeting: each of these is refused whole, naming the field.
    for change, field in (
        (SettingsChange(bot_name="Renamed", recording_enabled=False), "bot_name"),
        (SettingsChange(language="de"), "language"),
        (SettingsChange(transcribe_enabled=False), "transcribe_enabled"),
        (SettingsChange(recording_format=RecordingFormat.MP3), "recording_format"),
    ):
        refused = await run.command(UpdateSettingsCommand(changes=change))
        assert refused.error is CommandErrorCode.SETTING_NOT_LIVE, refused  # type: ignore[attr-defined]
        assert refused.field == field  # type: ignore[attr-defined]
    assert run.bot.media.settings.recording_enabled is True  # nothing was half-applied
    assert run.bot.media.recorder is not None and run.bot.media.recorder.running

    # Recording can stop live; a stopped recording is not resumed.
    off = await run.command(UpdateSettingsCommand(changes=SettingsChange(recording_enabled=False)))
    assert off.ok, off  # type: ignore[attr-defined]
    assert run.bot.media.recorder.stopped_at is not None  # capture stopped
    again = await run.command(UpdateSettingsCommand(changes=SettingsChange(recording_enabled=True)))
    assert again.error is CommandErrorCode.SETTING_NOT_LIVE  # type: ignore[attr-defined]
    assert again.field == "recording_enabled"  # type: ignore[attr-defined]

    await run.room.end()
    assert await run.finish() is BotStatus.COMPLETED
    # What was recorded before the stop is still encoded, uploaded and reported.
    recordings = [a for a in peer.events_of("artifact") if a.kind is ArtifactKind.RECORDING]
    assert len(recordings) == 1
    assert recordings[0].size_bytes > 0
    uploaded, _ = peer.uploads[recordings[0].storage_key.rsplit("/", 1)[-1]]
    assert len(uploaded) == recordings[0].size_bytes


async def test_a_stop_command_in_the_lobby_leaves_at_once(start: object) -> None:
    run: Run = await start(  # type: ignore[operator]
        "zoom", "lobby: true\nadmission: {decision: ignore}\nparticipants: [{name: Alice}]\n"
    )
    await run.peer.wait_for(
        lambda: any(s == "awaiting_admission" for s, _ in run.statuses()), within=30
    )
    result = await run.command(StopCommand(reason=StatusReason.STOPPED_BY_API))
    assert result.ok  # type: ignore[attr-defined]
    assert await run.finish() is BotStatus.COMPLETED
    assert run.statuses()[-2:] == [
        ("stopping", "stopped_by_api"),
        ("completed", "stopped_by_api"),
    ]
    waited = (run.status_time("stopping") - run.status_time("awaiting_admission")).total_seconds()
    assert waited < 30 * SCALE  # well before the admission timeout would have ended it
    assert any(e.type == "left" and e.name == BOT_NAME for e in run.room.timeline())
