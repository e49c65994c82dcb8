"""TrackRecorder: one WAV per track whose sample index stays a clock; digital silence unwritten."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from agent.capture.audio import AudioFrame
from agent.transcribe.audio_io import TrackRecorder, read_audio

pytestmark = pytest.mark.unit

BLOCK = 1600  # 100 ms at 16 kHz


def _tone(level: int = 1000) -> np.ndarray:
    return np.full(BLOCK, level, dtype=np.int16)


def _zeros() -> np.ndarray:
    return np.zeros(BLOCK, dtype=np.int16)


async def test_recorder_keeps_the_clock_across_gaps(tmp_path: Path) -> None:
    recorder = TrackRecorder(tmp_path)
    await recorder.add(AudioFrame("a", 100.0, _tone()))
    await recorder.add(AudioFrame("a", 100.5, _tone()))  # 0.4 s without frames
    await recorder.add(AudioFrame("b", 100.2, _tone(), "Bob"))
    tracks = await recorder.close()
    assert [(t.track_id, t.start_time, t.speaker) for t in tracks] == [
        ("a", 100.0, None),
        ("b", 100.2, "Bob"),
    ]
    a = read_audio(tracks[0].path)
    assert len(a) == 1600 + 6400 + 1600
    assert not a[1600:8000].any() and a[8000:].all()


async def test_digital_silence_starts_no_file_and_keeps_the_clock(tmp_path: Path) -> None:
    # A page holding a track per possible speaker sends zeros on all of them, all the time.
    recorder = TrackRecorder(tmp_path)
    for step in range(50):  # 5 s: "idle" never speaks; "ada" speaks at 1.0-1.5 s and 3.0 s
        at = 200.0 + step * 0.1
        await recorder.add(AudioFrame("idle", at, _zeros()))
        speaking = 10 <= step < 15 or step == 30
        await recorder.add(AudioFrame("ada", at, _tone(-700) if speaking else _zeros(), "Ada"))
    tracks = await recorder.close()

    assert [(t.track_id, t.speaker) for t in tracks] == [("ada", "Ada")]
    assert tracks[0].start_time == 201.0  # its first sound, not the first frame
    ada = read_audio(tracks[0].path)
    # Sound, the 1.5 s of zeros between the sounds as a gap, sound; nothing after the last.
    assert len(ada) == 5 * BLOCK + 15 * BLOCK + BLOCK
    assert (ada[: 5 * BLOCK] == -700).all()
    assert not ada[5 * BLOCK : 20 * BLOCK].any()
    assert (ada[20 * BLOCK :] == -700).all()
    assert await asyncio.to_thread(lambda: list(tmp_path.iterdir())) == [tracks[0].path]


async def test_a_track_silent_longer_than_the_gap_limit_starts_a_new_file(tmp_path: Path) -> None:
    recorder = TrackRecorder(tmp_path)
    await recorder.add(AudioFrame("a", 0.0, _tone()))
    await recorder.add(AudioFrame("a", 60.0, _zeros()))  # muted for minutes, zeros all along
    await recorder.add(AudioFrame("a", 300.0, _tone()))
    tracks = await recorder.close()
    assert [(t.track_id, t.start_time) for t in tracks] == [("a", 0.0), ("a", 300.0)]
    assert [len(read_audio(t.path)) for t in tracks] == [BLOCK, BLOCK]


async def test_a_file_stays_on_the_stamps_clock_when_the_page_audio_clock_drifts(
    tmp_path: Path,
) -> None:
    # A page whose audio clock runs 0.5 % slow: each 100 ms frame is stamped 0.5 ms after the
    # one before it ended, no gap between two frames worth filling. Someone talks, pausing
    # for 100 ms every 2 s. After a minute the file must still put its samples where the
    # stamps do (not 0.3 s early), and the silence that catches up goes into the pauses.
    recorder = TrackRecorder(tmp_path)
    stamps = [100.0 + i * 0.1005 for i in range(600)]
    for i, at in enumerate(stamps):
        await recorder.add(AudioFrame("a", at, _tone(10 if i % 20 == 19 else 1000)))
    [track] = await recorder.close()
    audio = read_audio(track.path)
    assert abs(track.start_time + len(audio) / 16_000 - (stamps[-1] + 0.1)) <= 0.02
    assert (audio != 0).sum() == 600 * BLOCK  # every sample kept, silence only added
    zeros = np.flatnonzero(audio == 0)
    run_ends = zeros[np.append(np.diff(zeros) > 1, True)]
    assert len(run_ends) >= 5
    # Each added silence runs into a pause's quiet frame, never into a loud one (a click).
    assert all(audio[end + 1] == 10 for end in run_ends if end + 1 < len(audio))


async def test_a_long_stretch_without_a_pause_is_caught_up_anyway(tmp_path: Path) -> None:
    recorder = TrackRecorder(tmp_path)
    stamps = [100.0 + i * 0.1005 for i in range(600)]
    for at in stamps:
        await recorder.add(AudioFrame("a", at, _tone()))
    [track] = await recorder.close()
    audio = read_audio(track.path)
    # 0.3 s of drift over the minute: caught up each time it reached 0.25 s.
    assert abs(track.start_time + len(audio) / 16_000 - (stamps[-1] + 0.1)) <= 0.25
    assert len(audio) > 600 * BLOCK


async def test_frames_stamped_late_now_and_then_add_silence_once(tmp_path: Path) -> None:
    # Stamps are the page's arrival times: every other frame reaches the main thread 30 ms
    # late. No audio is missing; the file may take the first lateness as silence, not each one
    # (frame to frame, each late frame looked like a 30 ms gap: 0.6 s of silence in 4 s).
    recorder = TrackRecorder(tmp_path)
    for i in range(40):
        await recorder.add(AudioFrame("a", 100.0 + 0.1 * i + (0.03 if i % 2 else 0.0), _tone()))
    [track] = await recorder.close()
    assert len(read_audio(track.path)) <= 40 * BLOCK + round(0.03 * 16_000)
