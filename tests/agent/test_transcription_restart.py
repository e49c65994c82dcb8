"""A transcriber that dies mid-meeting is replaced at once, and the meeting stays transcribed.

Issue 19's guard rail "never silently die": before, a dead transcriber task left the feeder
waiting for the rest of the meeting and nothing was said until its end. The fault is a frame of
the wrong shape put in the capture queue, which the transcriber's ingest cannot analyse.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agent.capture.audio import AudioFrame
from agent.capture.pcm import AudioCapture
from agent.contracts.bot_config import BotSettings
from agent.link.events import BotEvents
from agent.sse.log import EventLog
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.pipe import TranscriptionPipe
from tests.transcribe.helpers import load_wav, silence

pytestmark = [pytest.mark.model, pytest.mark.slow]

BLOCK = 1600  # 100 ms at 16 kHz, as the page sends it
JOIN_MS = 1_700_000_000_000.0


def _say(capture: AudioCapture, pcm: np.ndarray, at_ms: float) -> float:
    """Queue ``pcm`` as the page's 100 ms blocks from ``at_ms``; returns the end in ms."""
    for start in range(0, len(pcm) - BLOCK + 1, BLOCK):
        data = base64.b64encode(pcm[start : start + BLOCK].astype("<i2").tobytes()).decode()
        capture.on_pcm("alice", at_ms, data, BLOCK)
        at_ms += 100.0
    return at_ms


async def _until(condition: Any, seconds: float) -> None:
    async with asyncio.timeout(seconds):
        while not condition():  # noqa: ASYNC110 - the observer is a plain callback
            await asyncio.sleep(0.05)


async def test_a_failed_transcriber_is_replaced_and_the_next_speech_is_transcribed(
    speech: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    observed: list[tuple[str, dict[str, Any]]] = []
    capture = AudioCapture(queue_seconds=120.0, queue_tracks=1)
    transcription = TranscriptionPipe(
        capture,
        BotEvents(EventLog(), observer=lambda name, payload: observed.append((name, payload))),
        BotSettings(language="en"),
        TranscribeOptions(models_dir=tmp_path / "models", partials=False),
        tmp_path / "work",
        "bot",
    )
    transcription.start(JOIN_MS / 1000)
    assert await transcription.wait_open()

    def finals() -> list[dict[str, Any]]:
        return [p for n, p in observed if n == "transcript_segment" and p["completed"]]

    now = _say(capture, np.concatenate([load_wav(speech, "jfk.wav"), silence(1.5)]), JOIN_MS)
    await _until(lambda: any("country" in p["text"].lower() for p in finals()), 120)
    # The fault: a two-channel block where the capture promises mono.
    capture.frames.put_nowait(
        AudioFrame("alice", now / 1000, np.zeros((2, BLOCK), dtype=np.int16), None)
    )
    # A live page keeps sending blocks, silent ones too: the next one finds the failure.
    while not any(n == "transcription_restarted" for n, _ in observed):
        now = _say(capture, silence(0.1), now)
        await asyncio.sleep(0.1)
        assert now - JOIN_MS < 40_000, "no restart within a minute of the fault"
    now = _say(capture, np.concatenate([silence(0.5), load_wav(speech, "LJ001-0004.wav")]), now)
    _say(capture, silence(1.5), now)
    await _until(lambda: any(p["id"].startswith("bot-r1-") for p in finals()), 120)
    with caplog.at_level(logging.INFO, logger="agent.transcribe.pipe"):
        await transcription.finish(60)

    assert transcription.restarts == 1
    restarted = [p for n, p in observed if n == "transcription_restarted"]
    assert restarted == [{"restart": 1, "error": "ValueError"}]
    after = " ".join(p["text"] for p in finals() if p["id"].startswith("bot-r1-")).lower()
    assert "printing" in after or "books" in after, finals()
    ids = [p["id"] for p in finals()]
    assert len(ids) == len(set(ids))
    assert transcription.finals == len(finals())
    flushed = [r for r in caplog.records if r.getMessage() == "transcription flushed"]
    assert flushed and flushed[0].__dict__["restarts"] == 1
    # The replacement's own counters: it opened utterances and committed finals.
    counters = flushed[0].__dict__["metrics"]
    assert counters["utterances"] >= 1 and counters["finals"] >= 1, counters
