"""The recorder without a meeting: real frames through the capture's tap, real ffmpeg, the
bundled tiny.en checking that the mix still says what the speakers said.

Two speakers on two tracks, at different times, go in through :meth:`AudioCapture.on_pcm` (the
page binding's entry point); the mp3 comes out in the agent's local artifact folder (no control
plane), announced on the SSE log as ``recording_ready``. The encoder's other formats are checked
on the same inputs by ffprobe.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from agent.browser.session import BrowserSession
from agent.capture.audio import SAMPLE_RATE
from agent.capture.pcm import AudioCapture
from agent.contracts.bot_config import BotSettings, CaptureMode, RecordingFormat
from agent.link.artifacts import ArtifactUploader
from agent.link.events import BotEvents
from agent.process.settings import AgentSettings
from agent.recording.encode import encode
from agent.recording.job import EncodeJob, ViewFrame
from agent.recording.recorder import MeetingRecorder
from agent.sse.log import EventLog
from agent.transcribe.audio_io import TrackAudio
from tests.recording.helpers import MAX_WER, codecs, probe, transcribe, wer

pytestmark = [pytest.mark.model, pytest.mark.slow]

FIRST, SECOND = "LJ001-0002", "ls_testclean_1089-134686-0001"
BLOCK = SAMPLE_RATE // 10


def _pcm(speech: Path, name: str) -> np.ndarray:
    with wave.open(str(speech / f"{name}.wav"), "rb") as wav:
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")


def _reference(speech: Path, *names: str) -> str:
    return " ".join((speech / f"{n}.txt").read_text().strip() for n in names)


def _feed(capture: AudioCapture, track: str, pcm: np.ndarray, start: float) -> None:
    """Send ``pcm`` as the page does: 100 ms base64 blocks stamped in epoch milliseconds."""
    for i in range(0, len(pcm), BLOCK):
        block = pcm[i : i + BLOCK].astype("<i2").tobytes()
        stamp = (start + i / SAMPLE_RATE) * 1000.0
        capture.on_pcm(track, stamp, base64.b64encode(block).decode())


def _recorder(capture: AudioCapture, tmp_path: Path, fmt: RecordingFormat) -> MeetingRecorder:
    settings = BotSettings(recording_enabled=True, recording_format=fmt)
    browser = BrowserSession(AgentSettings(data_dir=tmp_path), "Notetaker", capture)
    return MeetingRecorder(capture, browser, settings, tmp_path / "work")


async def test_two_tracks_become_one_mp3_that_says_both_turns(speech: Path, tmp_path: Path) -> None:
    capture = AudioCapture()
    recorder = _recorder(capture, tmp_path, RecordingFormat.MP3)
    first, second = _pcm(speech, FIRST), _pcm(speech, SECOND)
    began = time.time() - 8.0
    recorder.start(at=began)
    _feed(capture, "track-alice", first, began + 0.5)
    _feed(capture, "track-bob", second, began + 0.5 + len(first) / SAMPLE_RATE + 0.5)
    log = EventLog()
    uploader = ArtifactUploader(None, tmp_path / "artifacts")
    frame = await recorder.finish(uploader, BotEvents(log), None, "bot-1")

    assert frame is not None and capture.taps == []
    assert (frame.kind.value, frame.format) == ("recording", "mp3")
    assert frame.content_type == "audio/mpeg"
    stored = tmp_path / "artifacts" / frame.storage_key
    assert stored.is_file() and stored.stat().st_size == frame.size_bytes
    assert frame.duration_s is not None and 7.5 <= frame.duration_s <= 9.0
    assert codecs(probe(stored)) == {"audio": "mp3"}
    assert not (tmp_path / "work").exists()  # scratch tracks are gone
    said = await transcribe(stored, tmp_path / "models")
    assert wer(_reference(speech, FIRST, SECOND), said) <= MAX_WER, said
    ready = [e for e in log.snapshot() if e.event == "recording_ready"]
    assert [json.loads(e.data) for e in ready] == [
        {"recording_id": frame.artifact_id, "format": "mp3", "duration_s": frame.duration_s}
    ]


async def test_recording_never_started_records_nothing(tmp_path: Path) -> None:
    capture = AudioCapture()
    recorder = _recorder(capture, tmp_path, RecordingFormat.MP4)
    log = EventLog()
    uploader = ArtifactUploader(None, tmp_path / "artifacts")
    assert await recorder.finish(uploader, BotEvents(log), None, "bot-1") is None
    assert log.snapshot() == [] and not (tmp_path / "artifacts").exists()
    assert not (tmp_path / "work").exists()


async def _jpeg(path: Path, colour: str) -> Path:
    process = await asyncio.create_subprocess_exec(
        "ffmpeg",
        "-v",
        "error",
        "-y",
        "-f",
        "lavfi",
        "-i",
        f"color=c={colour}:s=320x180",
        "-frames:v",
        "1",
        str(path),
    )
    assert await process.wait() == 0
    return path


@pytest.mark.parametrize(
    ("fmt", "with_view", "wanted"),
    [
        (RecordingFormat.MP4, False, {"audio": "aac", "video": "h264"}),
        (RecordingFormat.MP4, True, {"audio": "aac", "video": "h264"}),
        (RecordingFormat.WEBM, False, {"audio": "opus"}),
        (RecordingFormat.WEBM, True, {"audio": "opus", "video": "vp8"}),
    ],
)
async def test_each_format_has_its_codecs_and_the_recordings_length(
    fmt: RecordingFormat, with_view: bool, wanted: dict[str, str], speech: Path, tmp_path: Path
) -> None:
    start = 1_000.0
    tracks = (TrackAudio("a", start + 0.5, speech / f"{FIRST}.wav"),)
    frames: tuple[ViewFrame, ...] = ()
    if with_view:
        frames = (
            ViewFrame(await _jpeg(tmp_path / "000000.jpg", "red"), start + 0.2),
            ViewFrame(await _jpeg(tmp_path / "000001.jpg", "blue"), start + 2.0),
        )
    out = tmp_path / f"out.{fmt.value}"
    duration = await encode(EncodeJob(tracks, frames, start, 4.0, fmt, out))
    probed = probe(out)
    assert codecs(probed) == wanted
    assert 3.8 <= duration <= 4.2
    if fmt is RecordingFormat.MP4:
        video = next(s for s in probed["streams"] if s["codec_type"] == "video")
        assert video["pix_fmt"] == "yuv420p"
        head = out.read_bytes()
        assert head.index(b"moov") < head.index(b"mdat")  # fast-start: the index comes first


def test_video_capture_is_a_capture_mode() -> None:
    assert CaptureMode.VIDEO in BotSettings(capture_modes=("audio", "video")).capture_modes


async def test_a_minute_of_four_tracks_in_one_page_call_is_recorded_whole(
    speech: Path, tmp_path: Path
) -> None:
    # An agent that lagged gets everything the page held back in one call: here a minute of
    # four tracks (2,400 blocks), put into the capture and the recorder's tap at once.
    capture = AudioCapture()
    recorder = _recorder(capture, tmp_path, RecordingFormat.MP3)
    voice = _pcm(speech, FIRST)
    began = time.time() - 61.0
    recorder.start(at=began)
    blocks: list[list[object]] = []
    for number in range(4):
        pcm = np.resize(voice, 60 * SAMPLE_RATE)  # the sentence, over and over, for 60 s
        for i in range(0, len(pcm), BLOCK):
            stamp = (began + 0.5 + i / SAMPLE_RATE) * 1000.0
            data = base64.b64encode(pcm[i : i + BLOCK].astype("<i2").tobytes()).decode()
            blocks.append([f"track-{number}", stamp, data, BLOCK])
    capture.on_pcm_batch(blocks)
    assert capture.stats.dropped == 0 and capture.frames.qsize() == 2_400
    frame = await recorder.finish(
        ArtifactUploader(None, tmp_path / "artifacts"), BotEvents(EventLog()), None, "bot-1"
    )
    assert recorder.dropped == 0
    assert frame is not None and frame.duration_s is not None and frame.duration_s >= 60.0
