"""The finals waiting for the decoder, oldest first, with their audio's memory bounded.

A decoder that keeps up holds one or two ended utterances here. One that falls behind (a bot VM
emulated without KVM decodes at a real-time factor of hundreds, issue 19) holds every voiced
second of the meeting since it fell behind: float32 at 16 kHz is 64 KB per second of speech,
230 MB per voiced hour. Past ``memory_s`` seconds of queued audio, the newest queued finals'
audio goes to a file (int16, lossless: the audio was int16 PCM scaled by 1/32768,
``agent.transcribe.ingest``) and is read back when it reaches the head of the queue. Nothing
is dropped: every final is still decoded, in order, and the tree stays as small as the setting.

The files live in a private temporary folder under ``directory`` (the agent's data folder on a
bot VM, whose disk is not RAM), removed by :meth:`FinalsBacklog.close`.
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
from collections import deque
from pathlib import Path

import numpy as np

from agent.capture.audio import SAMPLE_RATE
from agent.transcribe.metrics import TranscribeMetrics
from agent.transcribe.utterance import Utterance

log = logging.getLogger(__name__)

_PCM_SCALE = 32768.0


class FinalsBacklog:
    """A FIFO of ended utterances whose in-memory audio stays under ``memory_s`` seconds.

    Args:
        memory_s: Seconds of queued audio (all tracks) kept in memory; above it the newest
            queued ones are written to disk. The head is always in memory.
        metrics: Where ``backlog_s``, ``backlog_spilled_s`` and ``finals_spilled`` are kept.
        directory: Parent of the spill folder; None: the system's temporary folder.
    """

    def __init__(
        self, memory_s: float, metrics: TranscribeMetrics, directory: Path | None = None
    ) -> None:
        self._limit = round(memory_s * SAMPLE_RATE)
        self._metrics = metrics
        self._directory = directory
        self._queue: deque[Utterance] = deque()
        # id(utterance) → its audio's file and samples (its `ended.audio` is empty meanwhile)
        self._spilled: dict[int, tuple[Path, int]] = {}
        self._in_memory = 0  # samples of queued audio held in memory
        self._on_disk = 0  # …and in files
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._files = 0

    def __len__(self) -> int:
        return len(self._queue)

    def __bool__(self) -> bool:
        return bool(self._queue)

    def append(self, utt: Utterance) -> None:
        """Queue an ended utterance; spill the newest queued audio while over the limit."""
        assert utt.ended is not None  # noqa: S101 - only ended utterances are queued
        self._queue.append(utt)
        self._in_memory += len(utt.ended.audio)
        self._spill_over_limit()
        self._publish()

    def peek(self) -> Utterance | None:
        """The oldest queued utterance, its audio in memory; None when empty."""
        if not self._queue:
            return None
        head = self._queue[0]
        self._restore(head)
        return head

    def popleft(self) -> Utterance:
        """Remove and return the oldest queued utterance, its audio in memory.

        Raises:
            IndexError: The backlog is empty.
        """
        head = self.peek()
        if head is None:
            raise IndexError("the finals backlog is empty")
        self._queue.popleft()
        assert head.ended is not None  # noqa: S101 - only ended utterances are queued
        self._in_memory -= len(head.ended.audio)
        self._publish()
        return head

    def close(self) -> None:
        """Forget what is queued and remove the spill folder (idempotent)."""
        self._queue.clear()
        self._spilled.clear()
        self._in_memory = self._on_disk = 0
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
        self._publish()

    def _spill_over_limit(self) -> None:
        if self._in_memory <= self._limit:
            return
        # Newest first: they are decoded last, so they are read back last. The head stays.
        for utt in reversed(self._queue):
            if self._in_memory <= self._limit:
                break
            if utt is self._queue[0] or id(utt) in self._spilled:
                continue
            self._spill(utt)

    def _spill(self, utt: Utterance) -> None:
        ended = utt.ended
        assert ended is not None  # noqa: S101 - only ended utterances are queued
        if self._folder is None:
            if self._directory is not None:
                self._directory.mkdir(parents=True, exist_ok=True)
            self._folder = tempfile.TemporaryDirectory(
                prefix="meetbot-finals-", dir=self._directory
            )
            log.warning(
                "the decoder is behind: queued finals hold over %.0f s of audio; "
                "the newest go to disk until decoded (%s)",
                self._limit / SAMPLE_RATE,
                self._folder.name,
            )
        self._files += 1
        path = Path(self._folder.name) / f"{self._files}.npy"
        pcm = np.clip(np.rint(ended.audio * _PCM_SCALE), -32768, 32767).astype(np.int16)
        # A few hundred kB at most, written once per spilled utterance: quick enough in line.
        np.save(path, pcm, allow_pickle=False)
        utt.ended = dataclasses.replace(ended, audio=np.zeros(0, dtype=np.float32))
        self._spilled[id(utt)] = (path, len(pcm))
        self._in_memory -= len(pcm)
        self._on_disk += len(pcm)
        self._metrics.finals_spilled += 1

    def _restore(self, utt: Utterance) -> None:
        spilled = self._spilled.pop(id(utt), None)
        if spilled is None:
            return
        path, samples = spilled
        ended = utt.ended
        assert ended is not None  # noqa: S101 - only ended utterances are queued
        pcm = np.load(path, allow_pickle=False)
        path.unlink()
        utt.ended = dataclasses.replace(ended, audio=pcm.astype(np.float32) / _PCM_SCALE)
        self._in_memory += samples
        self._on_disk -= samples
        self._publish()

    def _publish(self) -> None:
        queued = self._in_memory + self._on_disk
        self._metrics.backlog_s = round(queued / SAMPLE_RATE, 3)
        self._metrics.backlog_spilled_s = round(self._on_disk / SAMPLE_RATE, 3)
