"""Recording through the whole product on one skin (Google Meet): the control plane launches the
real agent (``local`` launcher), a simulated participant speaks real recorded speech, the host
ends the meeting, and the recording is checked where a user gets it — the full meeting record's
``recordings`` and its presigned URL — plus ``recording_ready`` on the bot's SSE stream (before
``completed``) and the ``recording.ready`` webhook event in the outbox.

The bot captures audio and video and asks for mp4: the path with the most parts (view frames,
mixing, H.264 + AAC, fast-start). The other formats are covered in ``test_recorder.py``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import select

from control_plane.db.engine import DB
from control_plane.db.models.webhook import WebhookMessage
from tests.agent.test_control_plane_e2e import (
    BOT_NAME,
    IDS,
    ControlPlane,
    _close,
    _meeting,
    _meeting_url,
    _now,
    _status_is,
    _subscribe,
    _until,
    control_plane,
)
from tests.recording.helpers import MAX_WER, codecs, probe, transcribe, wer

pytestmark = [pytest.mark.browser, pytest.mark.slow]

__all__ = ["control_plane"]  # the fixture, used by name

UTTERANCE = "LJ001-0001"  # 9.7 s of read speech
PLATFORM = "google_meet"


async def _download(
    http: aiohttp.ClientSession, cp: ControlPlane, meeting_id: int, target: Path
) -> dict[str, Any]:
    """Fetch the full record and the recording behind its URL (the test's URLs live 2 s, so
    a loaded machine may need a fresh one)."""
    for _ in range(5):
        async with http.get(f"{cp.api}/meetings/{meeting_id}") as response:
            assert response.status == 200, await response.text()
            record: dict[str, Any] = await response.json()
        assert len(record["recordings"]) == 1, record["recordings"]
        async with (
            aiohttp.ClientSession() as plain,
            plain.get(record["recordings"][0]["url"]) as download,
        ):
            if download.status == 200:
                data = await download.read()
                await asyncio.to_thread(target.write_bytes, data)
                return record
            assert download.status in (403, 410), download.status
    raise AssertionError("the recording's URL kept expiring before the download")


async def test_an_mp4_recording_of_the_meeting_is_listed_downloadable_and_says_the_speech(
    control_plane: ControlPlane,
    monkeypatch: pytest.MonkeyPatch,
    speech: Path,
    tmp_path: Path,
) -> None:
    cp = control_plane
    monkeypatch.setenv("MEETBOT_SPEECH_DIR", str(speech))
    monkeypatch.setenv("MEETBOT_AGENT_RECORDING_VIDEO_FPS", "2")
    meeting = await _meeting(
        monkeypatch,
        f"""
platform: {PLATFORM}
meeting_id: '{IDS[PLATFORM]}'
lobby: false
participants:
  - name: Alice
    utterances: [{{at: 1.0, file: '{speech / UTTERANCE}.wav'}}]
end_at: 13.0
""",
    )
    try:
        async with aiohttp.ClientSession(headers={"X-API-Key": cp.key}) as http:
            body = {
                "platform": PLATFORM,
                "meeting_url": _meeting_url(PLATFORM, IDS[PLATFORM]),
                "bot_name": BOT_NAME,
                "transcribe_enabled": False,
                "recording_enabled": True,
                "capture_modes": ["audio", "video"],
                "recording_format": "mp4",
            }
            async with http.post(f"{cp.api}/bots", json=body) as created:
                assert created.status == 201, await created.text()
                bot_id: str = (await created.json())["bot_id"]
            await _until(lambda: _status_is(http, cp, bot_id, {"active"}), "active")
            stream = await _subscribe(http, cp, bot_id)
            final = await _until(
                lambda: _status_is(http, cp, bot_id, {"completed", "failed"}), "the end", 90
            )
            assert (final["status"], final["status_reason"]) == ("completed", "meeting_ended")
            await _until(lambda: _now(bool(stream.task and stream.task.done())), "stream end", 30)
            await _close(stream)

            file = tmp_path / "recording.mp4"
            record = await _download(http, cp, final["id"], file)
            assert record["recording_url"]
        recording = record["recordings"][0]
        assert (recording["format"], recording["content_type"]) == ("mp4", "video/mp4")
        assert recording["size_bytes"] == file.stat().st_size
        # The meeting lasted about 13 s from admission on the scenario clock.
        assert 10.0 <= recording["duration_s"] <= 30.0, recording

        probed = probe(file)
        assert codecs(probed) == {"audio": "aac", "video": "h264"}
        assert abs(float(probed["format"]["duration"]) - recording["duration_s"]) < 0.5
        data = file.read_bytes()
        assert data.index(b"moov") < data.index(b"mdat")  # fast-start
        said = await transcribe(file, tmp_path / "models")
        reference = (speech / f"{UTTERANCE}.txt").read_text()
        assert wer(reference, said) <= MAX_WER, said

        # SSE: recording_ready, before the bot reported completed.
        names = [event for _, event, _ in stream.events]
        assert names.index("recording_ready") < len(names) - 1
        assert stream.events[-1][1] == "bot_status" and stream.of("bot_status")[-1]["status"] == (
            "completed"
        )
        ready = {"recording_id": recording["id"], "format": "mp4"}
        assert stream.of("recording_ready") == [{**ready, "duration_s": recording["duration_s"]}]
        assert cp.app is not None
        async with cp.app[DB].sessions() as session:
            bodies = (
                await session.scalars(
                    select(WebhookMessage.body).where(
                        WebhookMessage.event_type == "recording.ready"
                    )
                )
            ).all()
        assert [json.loads(b)["data"]["recording_id"] for b in bodies] == [recording["id"]]
    finally:
        await meeting.stop()
