"""Receives the page's 100 ms PCM blocks and turns them into ``AudioFrame``s.

The page side is ``agent/browser/inject.js``: it calls the exposed binding
``__meetbotPcm(blocks)`` with a list of ``[track_id, start_epoch_ms, base64_int16, samples]``
100 ms blocks of the remote audio tracks (16 kHz mono int16 little-endian; an empty string
stands for ``samples`` zeros, i.e. digital silence) — every block made since its previous
call, at most two calls waiting for the agent at a time — and ``__meetbotTrack(track_id,
event, origin)`` when a track is added or ends. Frames go to :attr:`AudioCapture.frames` for
the transcriber, and to every callable in :attr:`AudioCapture.taps` (the recorder);
per-track levels are kept so tests and logs can tell speech was heard.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from agent.capture.audio import SAMPLE_RATE, AudioFrame
from agent.process.logs import LossReport

log = logging.getLogger(__name__)

MAX_BLOCK_SAMPLES = SAMPLE_RATE
"""Largest block accepted from the page (one second; the page sends 100 ms)."""

VOICED_DBFS = -45.0
"""A block whose RMS is above this level (dB relative to full scale) counts as sound."""


def rms_dbfs(pcm: np.ndarray) -> float:
    """RMS level of int16 samples in dBFS (``-inf`` for digital silence)."""
    if pcm.size == 0:
        return -math.inf
    rms = float(np.sqrt(np.mean(np.square(pcm.astype(np.float64) / 32768.0))))
    return 20.0 * math.log10(rms) if rms > 0 else -math.inf


@dataclass(slots=True)
class TrackLevel:
    """What one remote track delivered so far.

    Attributes:
        track_id: The WebRTC track id.
        origin: ``rtc`` (a peer connection's track event) or ``element`` (a media element).
        frames: Blocks received.
        seconds: Audio seconds received.
        voiced_seconds: Seconds in blocks above :data:`VOICED_DBFS`.
        peak_dbfs: Loudest block RMS seen, dBFS.
        ended: Whether the track ended.
    """

    track_id: str
    origin: str = "unknown"
    frames: int = 0
    seconds: float = 0.0
    voiced_seconds: float = 0.0
    peak_dbfs: float = -math.inf
    ended: bool = False


@dataclass(slots=True)
class CaptureStats:
    """Totals over all tracks.

    ``dropped`` counts frames lost because nobody consumed them, ``rejected`` malformed blocks,
    ``batches`` the page's ``__meetbotPcm`` calls.
    """

    tracks: dict[str, TrackLevel] = field(default_factory=dict)
    dropped: int = 0
    rejected: int = 0
    batches: int = 0

    @property
    def voiced_seconds(self) -> float:
        """Seconds of sound over all tracks."""
        return sum(level.voiced_seconds for level in self.tracks.values())


class AudioCapture:
    """The Python end of the page's capture bindings.

    Args:
        queue_seconds: Audio kept for a slow consumer, in seconds of ``queue_tracks`` tracks
            (100 ms frames); older frames are dropped (and counted) beyond it.
        queue_tracks: How many tracks' worth of ``queue_seconds`` the queue holds. The page
            sends every block that waited for a slow agent in one call (up to a minute of
            every track, ``MAX_PENDING_MS`` in inject.js), all put here at once, so the queue
            must hold a minute of every track or that call loses its oldest audio.
    """

    def __init__(self, queue_seconds: float = 120.0, queue_tracks: int = 8) -> None:
        self.frames: asyncio.Queue[AudioFrame] = asyncio.Queue(
            maxsize=max(1, int(queue_seconds * 10 * queue_tracks))
        )
        self.stats = CaptureStats()
        self._losses = LossReport(log, "capture dropped audio frames nobody read in time")
        # Extra consumers of every frame (the recorder); each must return at once.
        self.taps: list[Callable[[AudioFrame], None]] = []

    def on_pcm_batch(self, blocks: object) -> None:
        """Binding target of ``__meetbotPcm``: each ``[track, start_ms, base64, samples]``.

        A batch that is not a list counts as one rejected block, a malformed entry as one.
        """
        self.stats.batches += 1
        if not isinstance(blocks, list):
            self.stats.rejected += 1
            return
        for block in blocks:
            if not isinstance(block, list) or len(block) != 4:
                self.stats.rejected += 1
                continue
            track_id, start_ms, data, samples = block
            numbers = isinstance(start_ms, int | float) and isinstance(samples, int | float)
            if not numbers or not isinstance(data, str):
                self.stats.rejected += 1
                continue
            self.on_pcm(str(track_id), float(start_ms), data, int(samples))

    def on_pcm(self, track_id: str, start_epoch_ms: float, data: str, samples: int = 0) -> None:
        """One block of a ``__meetbotPcm`` batch: decode, measure and queue it."""
        if not data:
            if not 0 < int(samples) <= MAX_BLOCK_SAMPLES:
                self.stats.rejected += 1
                return
            pcm = np.zeros(int(samples), dtype=np.int16)
        else:
            try:
                raw = base64.b64decode(data, validate=True)
            except (binascii.Error, TypeError):
                self.stats.rejected += 1
                return
            if len(raw) % 2 or len(raw) > 2 * MAX_BLOCK_SAMPLES:
                self.stats.rejected += 1
                return
            pcm = np.frombuffer(raw, dtype="<i2").astype(np.int16)
        start = float(start_epoch_ms) / 1000.0
        frame = AudioFrame(track_id=str(track_id), start_time=start, pcm=pcm)
        level = self.stats.tracks.get(frame.track_id)
        if level is None:
            level = self.stats.tracks[frame.track_id] = TrackLevel(frame.track_id)
        duration = len(pcm) / SAMPLE_RATE
        db = rms_dbfs(pcm)
        level.frames += 1
        level.seconds += duration
        if db > VOICED_DBFS:
            level.voiced_seconds += duration
        level.peak_dbfs = max(level.peak_dbfs, db)
        for tap in self.taps:
            tap(frame)
        if self.frames.full():
            self.frames.get_nowait()
            self.stats.dropped += 1
            self._losses.lost()
        self.frames.put_nowait(frame)

    def on_track(self, track_id: str, event: str, origin: str) -> None:
        """Binding target of ``__meetbotTrack``: a remote track was added, ended or failed."""
        level = self.stats.tracks.get(str(track_id))
        if level is None:
            level = self.stats.tracks[str(track_id)] = TrackLevel(str(track_id))
        level.origin = str(origin)
        if event == "ended":
            level.ended = True
        log.info("remote audio track", extra={"event": str(event), "origin": str(origin)})
