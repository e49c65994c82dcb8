"""A transcriber whose own task dies says so at once (issue 19: never silently die).

Before, a dead ingest task left ``feed`` waiting on a full queue for the rest of the meeting
and nothing was logged until its end. The fault here is a frame of the wrong shape (two
channels), which the ingest cannot analyse: a real error raised inside the real task.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import numpy as np
import pytest

from agent.capture.audio import AudioFrame
from agent.contracts.link import Segment
from agent.transcribe.engine import WhisperEngine
from agent.transcribe.errors import TranscriberFailed
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.realtime import RealtimeTranscriber
from agent.transcribe.vad import SileroSession
from tests.transcribe.helpers import finals, frames, load_wav, silence

pytestmark = [pytest.mark.model, pytest.mark.slow]

JOIN = 1_700_000_000.0


def broken_frame(start_time: float) -> AudioFrame:
    """100 ms of two-channel audio where the capture promises mono."""
    return AudioFrame("t", start_time, np.zeros((2, 1600), dtype=np.int16), "Alice")


async def test_a_dead_ingest_fails_feed_at_once_and_logs_it(
    speech: Path,
    tiny_engine: WhisperEngine,
    silero: SileroSession,
    caplog: pytest.LogCaptureFixture,
) -> None:
    pcm = np.concatenate([load_wav(speech, "jfk.wav"), silence(2.0)])
    before = frames(pcm, "t", JOIN, "Alice")
    after = frames(pcm, "t", before[-1].end_time + 0.1, "Alice")
    transcriber = RealtimeTranscriber(
        tiny_engine,
        join_time=JOIN,
        options=TranscribeOptions(partials=False, frame_queue_size=50),
        vad_session=silero,
    )
    got: list[Segment] = []

    async def collect() -> None:
        async for segment in transcriber.segments():
            got.append(segment)

    transcriber.start()
    collector = asyncio.create_task(collect())
    for frame in before:
        await transcriber.feed(frame)
    async with asyncio.timeout(60):  # JFK's sentence is out before the fault
        while "country" not in " ".join(s.text for s in finals(got)).lower():  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    delivered = len(got)
    with caplog.at_level(logging.ERROR, logger="agent.transcribe.realtime"):
        await transcriber.feed(broken_frame(before[-1].end_time))
        fed = 0
        with pytest.raises(TranscriberFailed) as failed:
            async with asyncio.timeout(30):  # far more frames than the queue holds
                for frame in after:
                    await transcriber.feed(frame)
                    fed += 1
    assert isinstance(failed.value.__cause__, Exception)
    assert fed < len(after)
    assert [r.getMessage() for r in caplog.records] == ["transcriber task failed"]
    with pytest.raises(TranscriberFailed):
        await asyncio.wait_for(transcriber.close(), timeout=60)
    # segments() ends after close, with nothing from the audio fed after the fault.
    await asyncio.wait_for(collector, timeout=10)
    assert len(got) == delivered, got[delivered:]
