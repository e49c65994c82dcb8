"""A long recording in pieces: each piece is a whole file, uploaded when its span ends.

Real frames go in through :meth:`AudioCapture.on_pcm` (the page binding's entry point) with
capture times spanning three pieces of 6 s (one turn in the first, one in the second, silence
in the third); real ffmpeg encodes each piece; the pieces land in the agent's local artifact
folder (no control plane) in order, each announced as ``recording_ready``, and each holds its
own turn (the bundled tiny.en listens).
"""

from __future__ import annotations

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
from agent.contracts.bot_config import BotSettings, RecordingFormat
from agent.link.artifacts import ArtifactUploader
from agent.link.events import BotEvents
from agent.process.settings import AgentSettings
from agent.recording.pieces import Shipping
from agent.recording.recorder import MeetingRecorder
from agent.sse.log import EventLog
from tests.recording.helpers import MAX_WER, codecs, probe, transcribe, wer

pytestmark = pytest.mark.model

FIRST, SECOND = "LJ001-0002", "ls_testclean_1089-134686-0001"
BLOCK = SAMPLE_RATE // 10
PIECE_S = 6.0


def _pcm(speech: Path, name: str) -> np.ndarray:
    with wave.open(str(speech / f"{name}.wav"), "rb") as wav:
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")


def _feed(capture: AudioCapture, track: str, pcm: np.ndarray, start: float) -> None:
    """Send ``pcm`` as the page does: 100 ms base64 blocks stamped in epoch milliseconds."""
    for i in range(0, len(pcm), BLOCK):
        block = pcm[i : i + BLOCK].astype("<i2").tobytes()
        capture.on_pcm(track, (start + i / SAMPLE_RATE) * 1000.0, base64.b64encode(block).decode())


async def test_a_recording_longer_than_a_piece_is_shipped_in_whole_consecutive_pieces(
    speech: Path, tmp_path: Path
) -> None:
    capture = AudioCapture()
    log = EventLog()
    events = BotEvents(log)
    uploader = ArtifactUploader(None, tmp_path / "artifacts")
    settings = BotSettings(recording_enabled=True, recording_format=RecordingFormat.MP3)
    browser = BrowserSession(AgentSettings(data_dir=tmp_path), "Notetaker", capture)
    recorder = MeetingRecorder(
        capture,
        browser,
        settings,
        tmp_path / "work",
        piece_seconds=PIECE_S,
        shipping=Shipping(uploader, lambda: events, None, "bot-1"),
    )
    first, second = _pcm(speech, FIRST), _pcm(speech, SECOND)
    began = time.time() - 15.0  # the capture times span three pieces: 0-6, 6-12, 12-now
    recorder.start(at=began)
    _feed(capture, "track-alice", first, began + 0.5)
    _feed(capture, "track-bob", second, began + PIECE_S + 0.5)
    last = await recorder.finish(uploader, events, None, "bot-1")

    assert last is not None
    ready = [json.loads(e.data) for e in log.snapshot() if e.event == "recording_ready"]
    assert len(ready) == 3 and ready[-1]["recording_id"] == last.artifact_id
    durations = [r["duration_s"] for r in ready]
    # The first two are exactly one span long; the last runs to the stop (about 3 s).
    assert durations[0] == pytest.approx(PIECE_S, abs=0.1)
    assert durations[1] == pytest.approx(PIECE_S, abs=0.1)
    assert 2.5 <= durations[2] <= 4.0
    files = [tmp_path / "artifacts" / f"{r['recording_id']}.mp3" for r in ready]
    assert all(f.is_file() and codecs(probe(f)) == {"audio": "mp3"} for f in files)
    assert not (tmp_path / "work").exists()  # every piece's scratch folder is gone

    heard = [(await transcribe(f, tmp_path / "models")).lower() for f in files]
    reference = " ".join((speech / f"{n}.txt").read_text().strip() for n in (FIRST, SECOND))
    assert wer(reference, " ".join(heard[:2])) <= MAX_WER, heard
    assert "belly" in heard[1] and "belly" not in heard[0]  # each turn in its own piece
    assert not heard[2].strip()  # the third piece is the silence after them
