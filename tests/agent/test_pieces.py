"""Small pieces of the agent: PCM decoding and levels, Zoom link rewriting, PNG sizes, and the
fan-out that keeps link frames and SSE payloads in agreement."""

from __future__ import annotations

import base64
import struct
import zlib
from datetime import UTC, datetime

import numpy as np
import pytest

from agent.capture.pcm import AudioCapture, rms_dbfs
from agent.contracts.link import ArtifactEvent, ArtifactKind, Segment
from agent.contracts.timestamps import format_utc
from agent.link.artifacts import png_size
from agent.link.events import BotEvents
from agent.platforms.google_meet import GoogleMeetAdapter
from agent.platforms.teams import TeamsAdapter
from agent.platforms.zoom import ZoomAdapter
from agent.sse.log import EventLog

pytestmark = pytest.mark.unit


def _b64(samples: np.ndarray) -> str:
    return base64.b64encode(samples.astype("<i2").tobytes()).decode()


def test_capture_decodes_blocks_measures_levels_and_fills_silence() -> None:
    capture = AudioCapture(queue_seconds=1.0, queue_tracks=1)
    tone = (np.sin(np.arange(1600) / 5.0) * 8000).astype(np.int16)
    capture.on_pcm("t1", 1_700_000_000_000.0, _b64(tone), 1600)
    capture.on_pcm("t1", 1_700_000_000_100.0, "", 1600)
    frame = capture.frames.get_nowait()
    assert frame.track_id == "t1"
    assert frame.start_time == pytest.approx(1_700_000_000.0)
    assert np.array_equal(frame.pcm, tone)
    silent = capture.frames.get_nowait()
    assert silent.duration == pytest.approx(0.1) and not silent.pcm.any()
    level = capture.stats.tracks["t1"]
    assert level.frames == 2
    assert level.voiced_seconds == pytest.approx(0.1)
    assert level.peak_dbfs > -20


def test_capture_rejects_garbage_and_drops_oldest_when_nobody_reads() -> None:
    capture = AudioCapture(queue_seconds=0.2, queue_tracks=1)  # two blocks
    capture.on_pcm("t", 0.0, "***", 0)
    capture.on_pcm("t", 0.0, "", 10**9)
    capture.on_pcm("t", 0.0, base64.b64encode(b"\x01").decode(), 0)
    assert capture.stats.rejected == 3
    for n in range(3):
        capture.on_pcm("t", float(n * 100), "", 1600)
    assert capture.stats.dropped == 1
    assert capture.frames.get_nowait().start_time == pytest.approx(0.1)
    assert rms_dbfs(np.zeros(10, dtype=np.int16)) == float("-inf")


def test_a_batch_carries_blocks_of_several_tracks_and_bad_entries_are_counted() -> None:
    capture = AudioCapture(queue_seconds=1.0, queue_tracks=1)
    tone = (np.sin(np.arange(1600) / 5.0) * 8000).astype(np.int16)
    capture.on_pcm_batch(
        [
            ["a", 1_700_000_000_000.0, _b64(tone), 1600],
            ["b", 1_700_000_000_000, "", 1600],
            ["c", "soon", "", 1600],  # not a time
            ["d", 0.0, None, 1600],  # no data
            ["e", 0.0, ""],  # too short
        ]
    )
    capture.on_pcm_batch({"not": "a list"})
    assert capture.stats.batches == 2
    assert sorted(capture.stats.tracks) == ["a", "b"]
    assert capture.stats.rejected == 4
    assert [capture.frames.get_nowait().track_id for _ in range(2)] == ["a", "b"]


def test_zoom_join_links_open_in_the_web_client() -> None:
    adapter = ZoomAdapter()
    assert (
        adapter.meeting_url("https://us02web.zoom.us/j/81234567890?pwd=abc&uname=x")
        == "https://app.zoom.us/wc/81234567890/join?pwd=abc"
    )
    assert adapter.meeting_url("https://app.zoom.us/wc/812345678/join") == (
        "https://app.zoom.us/wc/812345678/join"
    )
    assert adapter.meeting_url("https://example.org/j/812345678") == (
        "https://example.org/j/812345678"
    )
    assert adapter.meeting_url("https://us02web.zoom.us/j/812345678", passcode="s3cret") == (
        "https://app.zoom.us/wc/812345678/join?pwd=s3cret"
    )


def test_passcodes_join_the_link_only_where_the_platform_carries_them() -> None:
    teams = TeamsAdapter()
    assert teams.meeting_url("https://teams.live.com/meet/1234567890", "x1") == (
        "https://teams.live.com/meet/1234567890?p=x1"
    )
    assert teams.meeting_url("https://teams.live.com/meet/1234567890?p=a", "b") == (
        "https://teams.live.com/meet/1234567890?p=a"
    )
    meet = GoogleMeetAdapter()
    assert meet.meeting_url("https://meet.google.com/abc-defg-hij", "x") == (
        "https://meet.google.com/abc-defg-hij"
    )


def test_png_size_reads_the_header() -> None:
    ihdr = struct.pack(">IIBBBBB", 640, 360, 8, 2, 0, 0, 0)
    crc = struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + crc
    assert png_size(b"\x89PNG\r\n\x1a\n" + chunk) == (640, 360)
    with pytest.raises(ValueError, match="not a PNG"):
        png_size(b"GIF89a" + bytes(30))


async def test_fan_out_sends_finals_to_the_link_and_everything_to_the_stream() -> None:
    frames: list[object] = []

    async def link(frame: object) -> None:
        frames.append(frame)

    log = EventLog()
    events = BotEvents(log, link)
    now = datetime.now(UTC)
    base = {"start": 0.0, "end": 1.0, "absolute_start_time": now, "absolute_end_time": now}
    await events.segment(Segment(id="s1", text="hel", completed=False, **base))
    await events.segment(Segment(id="s1", text="hello", completed=True, **base))
    await events.segment(Segment(id="s2", text="", completed=True, **base))  # retraction
    await events.artifact(
        ArtifactEvent(
            kind=ArtifactKind.RECORDING,
            artifact_id="r1",
            storage_key="k",
            content_type="audio/mpeg",
            size_bytes=3,
            format="mp3",
            duration_s=1.5,
        )
    )
    assert [type(f).__name__ for f in frames] == ["TranscriptSegmentEvent", "ArtifactEvent"]
    names = [e.event for e in log.snapshot()]
    assert names == ["transcript_segment"] * 3 + ["recording_ready"]
    assert '"recording_id": "r1"' in log.snapshot()[-1].data
    assert format_utc(datetime(2026, 1, 2, 3, 4, 5, 999, tzinfo=UTC)) == "2026-01-02T03:04:05Z"
