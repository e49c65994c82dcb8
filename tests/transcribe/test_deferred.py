"""Deferred tier: the accurate pass after the meeting, and refine mode."""

from __future__ import annotations

import asyncio
import wave
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from agent.capture.audio import SpeakerActivity
from agent.contracts.link import Segment
from agent.transcribe.audio_io import TrackAudio
from agent.transcribe.deferred import (
    DeferredTranscriber,
    RefiningTranscriber,
    replacement_map,
    transcribe_meeting,
)
from agent.transcribe.engine import WhisperEngine
from agent.transcribe.normalize import word_error_rate
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.realtime import RealtimeTranscriber
from agent.transcribe.vad import SileroSession
from tests.transcribe.helpers import finals, frames, load_wav, reference, silence

pytestmark = [pytest.mark.model, pytest.mark.slow]

JOIN = 1_700_000_000.0


def _write_wav(path: Path, pcm: npt.NDArray[np.int16]) -> Path:
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16_000)
        wav.writeframes(pcm.astype("<i2").tobytes())
    return path


async def test_mixed_recording_is_split_and_named_by_the_timeline(
    speech: Path, tmp_path: Path, tiny_engine: WhisperEngine
) -> None:
    # Two speakers with only 0.25 s between them: one utterance for the VAD, two people.
    ada, bob = load_wav(speech, "jfk.wav"), load_wav(speech, "ls_testclean_61-70968-0000.wav")
    pcm = np.concatenate([silence(0.5), ada, silence(0.25), bob, silence(1.0)])
    wav = _write_wav(tmp_path / "mix.wav", pcm)
    t_bob = 0.5 + len(ada) / 16_000 + 0.25
    activities = [
        SpeakerActivity("Ada", True, JOIN + 0.6),
        SpeakerActivity("Ada", False, JOIN + t_bob - 0.1),
        SpeakerActivity("Bob", True, JOIN + t_bob + 0.1),
        SpeakerActivity("Bob", False, JOIN + t_bob + len(bob) / 16_000),
    ]
    segments = await transcribe_meeting(
        tiny_engine,
        [TrackAudio("mix", JOIN, wav)],
        join_time=JOIN,
        options=TranscribeOptions(),
        activities=activities,
    )
    assert all(s.tier == "deferred" and s.completed for s in segments)
    said = {n: " ".join(s.text for s in segments if s.speaker == n) for n in ("Ada", "Bob")}
    assert word_error_rate(reference(speech, "jfk.wav"), said["Ada"]) <= 0.15
    assert word_error_rate(reference(speech, "ls_testclean_61-70968-0000.wav"), said["Bob"]) <= 0.2


async def test_deferred_tier_records_then_transcribes_each_track(
    speech: Path, tmp_path: Path, tiny_engine: WhisperEngine
) -> None:
    ada = np.concatenate([load_wav(speech, "LJ001-0002.wav"), silence(1.0)])
    bob = np.concatenate([silence(0.7), load_wav(speech, "ls_testclean_1089-134686-0001.wav")])
    transcriber = DeferredTranscriber(
        tiny_engine, tmp_path, join_time=JOIN, track_speakers={"b": "Bob"}
    )
    stream = sorted(
        [*frames(ada, "a", JOIN, "Ada"), *frames(bob, "b", JOIN)], key=lambda f: f.start_time
    )
    out: list[Segment] = []
    async with transcriber:
        for frame in stream:
            await transcriber.feed(frame)
        assert transcriber.metrics.decodes.total() == 0  # nothing decoded during the meeting
    async for segment in transcriber.segments():
        out.append(segment)
    assert {s.speaker for s in out} == {"Ada", "Bob"}
    bob_text = " ".join(s.text for s in out if s.speaker == "Bob")
    assert word_error_rate(reference(speech, "ls_testclean_1089-134686-0001.wav"), bob_text) <= 0.3
    assert all(s.tier == "deferred" for s in out)


async def test_refine_replaces_realtime_segments(
    speech: Path, tmp_path: Path, tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    pcm = np.concatenate([load_wav(speech, "jfk.wav"), silence(1.0)])
    options = TranscribeOptions(partials=False, deferred_model="tiny.en")
    refining = RefiningTranscriber(
        RealtimeTranscriber(tiny_engine, join_time=JOIN, options=options, vad_session=silero),
        DeferredTranscriber(tiny_engine, tmp_path, join_time=JOIN, options=options),
    )
    seen: list[Segment] = []

    async def collect() -> None:
        async for segment in refining.segments():
            seen.append(segment)

    collector = asyncio.create_task(collect())
    async with refining:
        for frame in frames(pcm, "t", JOIN, "Ada"):
            await refining.feed(frame)
    await collector
    realtime = finals([s for s in seen if s.tier == "realtime"])
    deferred = [s for s in seen if s.tier == "deferred"]
    assert realtime and deferred
    assert set(refining.replacements) == {s.id for s in realtime}
    replaced_by = {i for ids in refining.replacements.values() for i in ids}
    assert replaced_by == {s.id for s in deferred}
    assert word_error_rate(reference(speech, "jfk.wav"), " ".join(s.text for s in deferred)) <= 0.1


def test_replacement_map_matches_time_and_speaker() -> None:
    def seg(seg_id: str, start: float, end: float, speaker: str | None) -> Segment:
        at = datetime(2026, 1, 1, tzinfo=UTC)
        return Segment(
            id=seg_id,
            start=start,
            end=end,
            absolute_start_time=at,
            absolute_end_time=at,
            text="x",
            speaker=speaker,
        )

    realtime = [seg("r1", 0, 2, "A"), seg("r2", 2.5, 4, "B"), seg("r3", 9, 10, "A")]
    deferred = [seg("d1", 0.1, 3.9, "A"), seg("d2", 2.4, 4.1, "B")]
    assert replacement_map(realtime, deferred) == {"r1": ["d1"], "r2": ["d2"], "r3": []}
