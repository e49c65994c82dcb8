"""The meeting's end flushes the transcription within one budget, however much audio waits.

A starved bot (a VM under emulation, stop 15: whisper at 114 times real time) can end a meeting
with minutes of captured audio not fed to the transcriber yet. The flush fed that backlog frame
by frame before its time limit began, so the bot stayed ``stopping`` for over ten minutes with
nothing in its log. Now feeding, decoding and delivering share the budget; past it the
transcriber is aborted and the frames left are logged.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from pathlib import Path

import numpy as np
import pytest

from agent.capture.pcm import AudioCapture
from agent.contracts.bot_config import BotSettings
from agent.link.events import BotEvents
from agent.sse.log import EventLog
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.pipe import TranscriptionPipe
from tests.transcribe.helpers import load_wav

pytestmark = [pytest.mark.model, pytest.mark.slow]

BLOCK = 1600  # 100 ms at 16 kHz, as the page sends it
JOIN_MS = 1_700_000_000_000.0


def _queue_speech(capture: AudioCapture, pcm: np.ndarray) -> int:
    """Put ``pcm`` in the capture queue as the page's 100 ms blocks; returns the block count."""
    blocks = 0
    for start in range(0, len(pcm) - BLOCK + 1, BLOCK):
        data = base64.b64encode(pcm[start : start + BLOCK].astype("<i2").tobytes()).decode()
        capture.on_pcm("alice", JOIN_MS + blocks * 100.0, data, BLOCK)
        blocks += 1
    return blocks


async def test_a_backlog_longer_than_the_budget_is_cut_there_and_logged(
    speech: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clip = load_wav(speech, "LJ001-0001.wav")
    minutes = np.tile(clip, int(600 * 16_000 / len(clip)) + 1)[: 600 * 16_000]  # 10 min
    capture = AudioCapture(queue_seconds=600.0, queue_tracks=1)
    transcription = TranscriptionPipe(
        capture,
        BotEvents(EventLog()),
        BotSettings(language="en"),
        TranscribeOptions(models_dir=tmp_path / "models", partials=False),
        tmp_path / "work",
        "bot",
    )
    transcription.start(JOIN_MS / 1000)
    # Queued before the model is loaded and the feeder starts: the meeting's audio all waits.
    queued = _queue_speech(capture, minutes)
    assert await transcription.wait_open()
    with caplog.at_level(logging.INFO, logger="agent.transcribe.pipe"):
        await asyncio.wait_for(transcription.finish(0.5), timeout=120)
    messages = [r.getMessage() for r in caplog.records]
    late = "transcription did not finish in time"
    gave_up = [r for r in caplog.records if r.getMessage() == late]
    assert gave_up, messages
    # Cut while frames were still queued: the backlog was not fed to the end first.
    assert 0 < gave_up[0].__dict__["frames_left"] < queued
    assert "transcription flushed" in messages
