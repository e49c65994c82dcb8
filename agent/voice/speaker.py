"""The bot speaking in the meeting: a queue of speeches played into its microphone.

:class:`Speaker` owns one background task that takes speeches from its queue in order. For
each it unmutes the microphone through the platform's own button (while the first sentence is
synthesised, so neither waits for the other), plays every piece into the in-page microphone as
soon as it is ready (``inject.js`` ``micPlay``: pieces are scheduled back to back on the page's
audio clock), waits until the last piece has played, and reports ``speak_started`` (first
piece queued) and ``speak_finished``. The microphone is muted again when the queue is empty.

:meth:`Speaker.interrupt` silences the microphone at once (every scheduled piece is stopped in
the page), drops the queue and cancels the speech in progress; each accepted speech gets
exactly one ``speak_finished``, with ``interrupted`` true when it was cut short or never began.

Events (stream only, docs/api.md 2.7): ``speak_started`` ``{speech_id, timestamp}``;
``speak_finished`` ``{speech_id, timestamp, interrupted, error}`` with ``error`` null, or one of
``synthesis_failed``, ``audio_unavailable``, ``microphone_unavailable`` and a ``detail``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from agent.voice.audio_file import AudioUnavailable, audio_pieces
from agent.voice.synthesis import Pcm, SpeechSynthesizer, SynthesisFailed
from meetbot_common.ssrf import TargetPolicy
from meetbot_common.tasks import cancel_and_wait

log = logging.getLogger(__name__)

# Slack added when sleeping until the queued speech should have played (seconds).
DRAIN_SLACK_S = 0.02

SpeechReport = Callable[[str, dict[str, Any]], Awaitable[None]]
"""Receives ``(event name, payload)`` of ``speak_started`` / ``speak_finished``."""


class Microphone(Protocol):
    """The bot's microphone: PCM in, the platform's mute button."""

    async def play(self, pcm: Pcm) -> float:
        """Queue ``pcm`` after what is queued; return the seconds queued from now."""
        ...

    async def queued(self) -> float:
        """Seconds still to play."""
        ...

    async def silence(self) -> None:
        """Stop everything queued at once."""
        ...

    async def switch(self, on: bool) -> None:
        """Unmute (``on``) or mute with the meeting's button."""
        ...


@dataclass(frozen=True, slots=True)
class Speech:
    """One accepted speak command: ``text`` (with ``voice``) or ``audio_url``."""

    speech_id: str
    text: str | None = None
    voice: str | None = None
    audio_url: str | None = None


class _Failed(Exception):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code


class Speaker:
    """Plays speeches one after another into the bot's microphone (see the module docstring).

    Args:
        synthesizer: Text to speech.
        microphone: Where the speech goes.
        report: Receives the ``speak_started`` / ``speak_finished`` events.
        now: The event timestamp (ISO 8601 UTC text).
        media_policy: Which ``audio_url`` s may be fetched (the agent's media SSRF rules;
            default: https to global addresses only).
    """

    def __init__(
        self,
        synthesizer: SpeechSynthesizer,
        microphone: Microphone,
        report: SpeechReport,
        now: Callable[[], str],
        media_policy: TargetPolicy | None = None,
    ) -> None:
        self._synthesizer = synthesizer
        self._media_policy = media_policy or TargetPolicy()
        self._microphone = microphone
        self._report = report
        self._now = now
        self._queue: asyncio.Queue[Speech] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._warm: asyncio.Task[None] | None = None
        self._current: asyncio.Task[None] | None = None
        self._unmuted = False

    def warm_up(self) -> None:
        """Load the voice in the background (owned; awaited by :meth:`close`)."""
        if self._warm is None:
            self._warm = asyncio.create_task(self._warm_up(), name="voice-warm-up")

    async def _warm_up(self) -> None:
        try:
            await self._synthesizer.warm_up()
        except SynthesisFailed as exc:
            log.warning("voice not loaded", extra={"error": str(exc)})

    def release_voice(self) -> bool:
        """Drop the loaded voice when nothing is being said or queued (memory relief).

        The next speech loads it again (agent/memory).

        Returns:
            Whether a voice was dropped.
        """
        warming = self._warm is not None and not self._warm.done()
        if self._current is not None or not self._queue.empty() or warming:
            return False
        return self._synthesizer.release()

    def check_voice(self, voice: str | None) -> None:
        """Refuse a voice the synthesizer lacks (raises ``VoiceNotAvailable``)."""
        self._synthesizer.check_voice(voice)

    def say(self, speech: Speech) -> int:
        """Queue ``speech`` after what is queued; return how many speeches are ahead of it."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="speaker")
        ahead = self._queue.qsize() + (1 if self._current is not None else 0)
        self._queue.put_nowait(speech)
        return ahead

    async def interrupt(self) -> int:
        """Silence the microphone now, drop the queue, cut the speech in progress short.

        Returns:
            How many speeches were stopped or dropped.
        """
        began = time.monotonic()
        await self._silence()
        log.info("speech silenced", extra={"s": round(time.monotonic() - began, 3)})
        dropped: list[Speech] = []
        while not self._queue.empty():
            dropped.append(self._queue.get_nowait())
        current = self._current
        if current is not None and not current.done():
            current.cancel()
            await asyncio.wait({current})
        for speech in dropped:
            await self._finished(speech, interrupted=True)
        return len(dropped) + (1 if current is not None else 0)

    async def close(self) -> None:
        """Stop speaking, mute, and end the background tasks."""
        await self.interrupt()
        for task in (self._task, self._warm):
            if task is not None and not task.done():
                await cancel_and_wait(task)
        await self._switch(False)

    # ---- the queue ----------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            speech = await self._queue.get()
            self._current = asyncio.create_task(self._speak(speech), name="speech")
            # wait() returns when the speech ends, cancelled or not; cancelling _run cancels it.
            try:
                await asyncio.wait({self._current})
            except asyncio.CancelledError:
                self._current.cancel()
                raise
            finally:
                self._current = None
            if self._queue.empty():
                await self._switch(False)

    async def _speak(self, speech: Speech) -> None:
        started = False
        began = time.monotonic()
        unmute = asyncio.create_task(self._switch(True), name="unmute")
        try:
            async for pcm in self._pieces(speech):
                ready = time.monotonic()
                await unmute
                if not self._unmuted:
                    raise _Failed("microphone_unavailable", "the microphone could not be unmuted")
                await self._microphone.play(pcm)
                if not started:
                    started = True
                    log.info(
                        "speech started",
                        extra={
                            "first_piece_s": round(ready - began, 3),
                            "playing_s": round(time.monotonic() - began, 3),
                        },
                    )
                    await self._report(
                        "speak_started", {"speech_id": speech.speech_id, "timestamp": self._now()}
                    )
            await self._played()
        except asyncio.CancelledError:
            unmute.cancel()
            await self._silence()  # a piece queued after interrupt() silenced the page
            await self._finished(speech, interrupted=True)
            raise
        except _Failed as exc:
            await self._finished(speech, error=exc.code, detail=str(exc))
        except Exception as exc:  # a page gone mid-speech: report, keep the queue alive
            log.warning("speech failed", extra={"error": type(exc).__name__})
            await self._finished(speech, error="microphone_unavailable", detail=str(exc))
        else:
            await self._finished(speech)
        finally:
            await cancel_and_wait(unmute, Exception)

    async def _played(self) -> None:
        """Return once the page played everything queued (its audio clock is the only signal)."""
        while True:
            left = await self._microphone.queued()
            if left <= 0:
                return
            # Sleep until the queue should be done, then ask again (the page's clock rules).
            await asyncio.sleep(left + DRAIN_SLACK_S)

    async def _pieces(self, speech: Speech) -> AsyncIterator[Pcm]:
        if speech.audio_url is not None:
            try:
                pieces = await audio_pieces(speech.audio_url, self._media_policy)
            except AudioUnavailable as exc:
                raise _Failed("audio_unavailable", str(exc)) from exc
            for pcm in pieces:
                yield pcm
            return
        try:
            async for pcm in self._synthesizer.stream(speech.text or "", speech.voice):
                yield pcm
        except SynthesisFailed as exc:
            raise _Failed("synthesis_failed", str(exc)) from exc

    # ---- the microphone -----------------------------------------------------------------

    async def _silence(self) -> None:
        with contextlib.suppress(Exception):
            await self._microphone.silence()

    async def _switch(self, on: bool) -> None:
        if self._unmuted == on:
            return
        began = time.monotonic()
        try:
            await self._microphone.switch(on)
        except Exception as exc:  # reported through the speech (unmute) or logged (mute)
            log.warning("microphone not switched", extra={"on": on, "error": str(exc)})
            return
        self._unmuted = on
        log.info("microphone switched", extra={"on": on, "s": round(time.monotonic() - began, 3)})

    async def _finished(
        self,
        speech: Speech,
        *,
        interrupted: bool = False,
        error: str | None = None,
        detail: str | None = None,
    ) -> None:
        payload: dict[str, Any] = {
            "speech_id": speech.speech_id,
            "timestamp": self._now(),
            "interrupted": interrupted,
            "error": error,
        }
        if detail is not None:
            payload["detail"] = detail
        await self._report("speak_finished", payload)
