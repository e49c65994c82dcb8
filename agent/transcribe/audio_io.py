"""Per-track audio on disk for the deferred pass: writing frames, reading files back.

:class:`TrackRecorder` writes each track's frames into its own 16 kHz mono 16-bit WAV, filling
gaps between frames with silence so a file's sample index stays a clock (``start_time`` +
index / 16000). Digital silence (frames of zeros: a track nobody speaks on, which the page
sends as a count of zeros) is not written as such: a track's file starts at its first sound,
and zeros between sounds come back as the gap they leave, so the audio read back is the same.
A meeting page can hold a track per possible speaker (the testmeeting's Meet skin held 42 in
a 2-hour soak, 5 of them with any sound in a recording piece): each was a WAV as long as the
piece, 42 WAVs and about 800 MB on disk per 10-minute piece, all decoded and mixed by the
piece's ffmpeg (issue 19). :func:`read_audio` reads such a WAV directly and anything else (the
meeting recording: mp4, webm, mp3…) through ffmpeg.
"""

from __future__ import annotations

import asyncio
import re
import wave
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from agent.capture.audio import SAMPLE_RATE, AudioFrame
from meetbot_common.pcm import read_pcm

_FLUSH_SAMPLES = 10 * SAMPLE_RATE
# Longer gaps are not filled sample by sample (a muted hour would be 115 MB of zeros); the
# track's file is closed and a new one starts.
_MAX_GAP_S = 120.0
# A file whose samples fall this far behind its frames' stamps gets the difference as silence,
# so its sample index stays on the stamps' clock even when the page's audio clock drifts: at
# once after a gap between two frames; otherwise before the next quiet frame (peak under
# ``_QUIET_PEAK``, -40 dBFS: a pause, where added silence is not heard), or anyway once it is
# ``_FILL_ANYWAY_S`` behind.
_FILL_AFTER_S = 0.02
_FILL_ANYWAY_S = 0.25
_QUIET_PEAK = 328


@dataclass(frozen=True, slots=True)
class TrackAudio:
    """Audio of one track (or of the mixed recording) for the deferred pass.

    Attributes:
        track_id: Track id as the frames carried it (``"mix"`` for a recording).
        start_time: Epoch seconds of the first sample.
        path: A WAV (16 kHz mono 16-bit) or any file ffmpeg reads.
        speaker: Participant name when the track is one person's.
    """

    track_id: str
    start_time: float
    path: Path
    speaker: str | None = None


@dataclass(slots=True)
class _OpenTrack:
    audio: TrackAudio
    writer: wave.Wave_write
    expected_next: float
    pending: list[npt.NDArray[np.int16]] = field(default_factory=list)
    pending_samples: int = 0
    samples: int = 0  # written or pending: the file's clock is start_time + samples / rate


def _safe_name(track_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", track_id)[:80] or "track"


class TrackRecorder:
    """Writes frames to one WAV per track (and per long gap) under ``directory``.

    Not thread-safe; used from the event loop, with file writes pushed to a worker thread.
    """

    def __init__(self, directory: Path) -> None:
        self._dir = directory
        self._open: dict[str, _OpenTrack] = {}
        self._done: list[TrackAudio] = []
        self._files = 0

    def _start(self, frame: AudioFrame) -> _OpenTrack:
        self._dir.mkdir(parents=True, exist_ok=True)
        self._files += 1
        path = self._dir / f"{self._files:04d}-{_safe_name(frame.track_id)}.wav"
        writer = wave.open(str(path), "wb")
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(SAMPLE_RATE)
        audio = TrackAudio(frame.track_id, frame.start_time, path, frame.speaker)
        track = _OpenTrack(audio, writer, frame.start_time)
        self._open[frame.track_id] = track
        return track

    async def add(self, frame: AudioFrame) -> None:
        """Append a frame to its track's file (gaps become silence).

        A frame of digital silence is not written: it starts no file, and when the track sounds
        again within ``_MAX_GAP_S`` its zeros come back as the gap.
        """
        if not frame.pcm.any():
            return
        track = self._open.get(frame.track_id)
        if track is not None:
            if frame.start_time - track.expected_next > _MAX_GAP_S:
                await self._close_track(track)
                track = None
            else:
                # Against the file's own clock, not the last frame's end: a page whose audio
                # clock runs slow (~0.1 s a minute on PulseAudio as on the bot VM, issue 19)
                # leaves no gap between two frames, yet its file falls seconds behind in an hour.
                # And frame to frame, every frame that reached the page's main thread late
                # looked like a gap: silence that was never missing, added again each time.
                # A drift is caught up in a pause, not as a click inside a word.
                behind = frame.start_time - (track.audio.start_time + track.samples / SAMPLE_RATE)
                if behind > _FILL_AFTER_S and (
                    frame.start_time - track.expected_next > _FILL_AFTER_S
                    or behind > _FILL_ANYWAY_S
                    or -_QUIET_PEAK < frame.pcm.min() <= frame.pcm.max() < _QUIET_PEAK
                ):
                    self._append(track, np.zeros(round(behind * SAMPLE_RATE), dtype=np.int16))
        if track is None:
            track = self._start(frame)
        self._append(track, frame.pcm)
        track.expected_next = frame.end_time
        if track.pending_samples >= _FLUSH_SAMPLES:
            await self._flush(track)

    @staticmethod
    def _append(track: _OpenTrack, pcm: npt.NDArray[np.int16]) -> None:
        track.pending.append(pcm)
        track.pending_samples += len(pcm)
        track.samples += len(pcm)

    async def _flush(self, track: _OpenTrack) -> None:
        if not track.pending:
            return
        data = np.concatenate(track.pending).astype("<i2").tobytes()
        track.pending, track.pending_samples = [], 0
        await asyncio.to_thread(track.writer.writeframes, data)

    async def _close_track(self, track: _OpenTrack) -> None:
        await self._flush(track)
        await asyncio.to_thread(track.writer.close)
        self._open.pop(track.audio.track_id, None)
        self._done.append(track.audio)

    async def close(self) -> list[TrackAudio]:
        """Finish every file; returns all of them in the order they were started."""
        for track in list(self._open.values()):
            await self._close_track(track)
        return sorted(self._done, key=lambda t: t.path.name)


def read_audio(path: Path) -> npt.NDArray[np.int16]:
    """Read a file as 16 kHz mono int16 samples. Blocking.

    A 16 kHz mono 16-bit WAV is read directly; anything else is decoded by ``ffmpeg``
    (:func:`meetbot_common.pcm.read_pcm`).

    Raises:
        FileNotFoundError: ``path`` does not exist, or ffmpeg is not installed.
        PcmDecodeError: ffmpeg failed to decode the file (a ``RuntimeError``).
    """
    return np.frombuffer(read_pcm(path, rate=SAMPLE_RATE), dtype="<i2").astype(np.int16)
