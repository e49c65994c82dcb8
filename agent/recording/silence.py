"""Is the meeting's sound really reaching the bot's sound device? The silence check.

On the bot's display runtime Chromium plays the meeting into the PulseAudio sink ``meeting``,
and a screen recording hears its monitor ``meeting.monitor``. If the sound goes elsewhere (a
wrong default sink, a muted sink, a browser that plays nothing) the recording is digital
silence, and nothing else notices: the transcriber hears the page's own capture, not the
device. :class:`SilenceCheck` compares the two from the admission on:

- the in-page capture (``heard``: voiced seconds of the meeting's tracks) tells when the meeting
  is playing sound;
- it reads ``meeting.monitor`` with ``parec`` (16 kHz mono, 100 ms blocks) and keeps the
  loudest sample since the page began to hear sound.

Verdicts (once per meeting):

- ``sound``: while the meeting played sound the monitor carried a non-zero sample — the device
  path works (a playing WebRTC track is seldom exact zeros even between words, so this comes
  within a block or two of the first sound);
- ``silent``: the page heard at least :data:`HEARD_S` seconds of sound since the check began
  and the monitor still carried only zeros :data:`GRACE_S` seconds later — the device path is
  broken; a recording of it would be silent;
- ``unchecked``: the meeting ended before either (nobody made a sound), or ``parec`` could not
  run.

The verdict goes to the log (``silent`` as a WARNING naming the monitor and how much the page
heard) and to the bot's observer as a ``sound_check`` event (``meetbot agent`` prints it; it
is not sent over the link or the SSE stream, whose events are the API's). It never stops the
bot.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agent.recording.screen import MONITOR, pulse_environment
from meetbot_common.tasks import cancel_and_wait

log = logging.getLogger(__name__)

RATE = 16_000
BLOCK_BYTES = RATE // 10 * 2
"""100 ms of 16-bit mono."""
HEARD_S = 2.0
"""Seconds of sound the page must hear before a silent monitor counts as broken."""
GRACE_S = 1.5
"""Allowance for the device's latency behind the page's capture."""
POLL_S = 0.25


@dataclass(frozen=True, slots=True)
class SoundVerdict:
    """The outcome of the silence check.

    Attributes:
        result: ``sound``, ``silent`` or ``unchecked``.
        monitor: The PulseAudio source listened to.
        heard_s: Seconds of sound the page's capture heard while checking.
        monitor_peak: Largest absolute sample of the monitor once the page heard sound (0 to
            32768).
        after_s: Seconds from the check's start to the verdict.
    """

    result: str
    monitor: str
    heard_s: float
    monitor_peak: int
    after_s: float

    def payload(self) -> dict[str, object]:
        """The ``sound_check`` event's payload."""
        return {
            "result": self.result,
            "monitor": self.monitor,
            "heard_s": round(self.heard_s, 1),
            "monitor_peak": self.monitor_peak,
            "after_s": round(self.after_s, 1),
        }


class SilenceCheck:
    """Watches the meeting sink's monitor against the page's capture (module docstring).

    Args:
        pulse_server: The bot's PulseAudio server.
        heard: Seconds of sound the page's capture heard so far (monotonic, all tracks).
        report: Gets the verdict once.
    """

    def __init__(
        self,
        pulse_server: str,
        heard: Callable[[], float],
        report: Callable[[SoundVerdict], object],
    ) -> None:
        self._server = pulse_server
        self._heard = heard
        self._report = report
        self._task: asyncio.Task[None] | None = None
        self._peak = 0
        # Set once the page hears sound: only then does the monitor's level count.
        self._hearing = False
        self._began = 0.0
        self._heard_at_start = 0.0
        self.verdict: SoundVerdict | None = None

    def start(self) -> None:
        """Begin checking (the bot was admitted); a second call does nothing."""
        if self._task is None:
            self._began = time.monotonic()
            self._heard_at_start = self._heard()
            self._task = asyncio.create_task(self._run(), name="silence-check")

    def _decide(self, result: str) -> None:
        if self.verdict is not None:
            return
        self.verdict = SoundVerdict(
            result,
            MONITOR,
            self._heard() - self._heard_at_start,
            self._peak,
            time.monotonic() - self._began,
        )
        extra = self.verdict.payload()
        if result == "silent":
            log.warning("meeting sound is digital silence on the sound device", extra=extra)
        else:
            log.info("sound check", extra=extra)
        self._report(self.verdict)

    async def _run(self) -> None:
        parec = shutil.which("parec")
        if parec is None:
            log.warning("sound check skipped", extra={"error": "parec is not installed"})
            self._decide("unchecked")
            return
        process = await asyncio.create_subprocess_exec(
            parec,
            f"--device={MONITOR}",
            "--format=s16le",
            f"--rate={RATE}",
            "--channels=1",
            "--latency-msec=100",
            "--raw",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=pulse_environment(self._server, os.environ),
        )
        reader = asyncio.create_task(self._read(process), name="silence-check-read")
        try:
            await self._watch(reader)
        finally:
            await cancel_and_wait(reader)
            if process.returncode is None:
                process.terminate()
            await process.wait()

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None  # noqa: S101 - created with a pipe
        while True:
            try:
                block = await process.stdout.readexactly(BLOCK_BYTES)
            except asyncio.IncompleteReadError:
                return
            if self._hearing:
                self._peak = max(self._peak, _peak(block))

    async def _watch(self, reader: asyncio.Task[None]) -> None:
        loud_since: float | None = None
        while True:
            heard = self._heard() - self._heard_at_start
            self._hearing = self._hearing or heard > 0
            if self._peak > 0:
                self._decide("sound")
                return
            if reader.done():
                log.warning("sound check stopped: parec ended", extra={"monitor": MONITOR})
                self._decide("unchecked")
                return
            if loud_since is None and heard >= HEARD_S:
                loud_since = time.monotonic()
            if loud_since is not None and time.monotonic() - loud_since >= GRACE_S:
                self._decide("silent")
                return
            await asyncio.sleep(POLL_S)

    async def stop(self) -> SoundVerdict | None:
        """Stop checking; ``unchecked`` if no verdict was reached. Returns the verdict."""
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait(task)
            self._decide("unchecked")
        return self.verdict


def _peak(block: bytes) -> int:
    """Largest absolute value of 16-bit little-endian samples."""
    samples = np.frombuffer(block, dtype="<i2").astype(np.int32)
    return int(np.abs(samples).max()) if samples.size else 0
