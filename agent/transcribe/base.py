"""The ``Transcriber`` seam (docs/architecture.md §4): what the agent's capture wiring talks to.

:class:`TranscriberContext` is the ``async with`` its implementations share, and
:func:`until_end` the reading of their output queue.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from agent.capture.audio import AudioFrame, SpeakerActivity
from agent.contracts.link import Segment
from agent.transcribe.metrics import TranscribeMetrics


@runtime_checkable
class Transcriber(Protocol):
    """Turns a meeting's audio frames into transcript segments.

    Implementations: :class:`agent.transcribe.realtime.RealtimeTranscriber` (segments while
    the meeting runs), :class:`agent.transcribe.deferred.DeferredTranscriber` (segments after
    it), :class:`agent.transcribe.deferred.RefiningTranscriber` (both, the second replacing
    the first).
    """

    @property
    def metrics(self) -> TranscribeMetrics:
        """Counters of this transcriber (see :class:`TranscribeMetrics`)."""
        ...

    async def feed(self, frame: AudioFrame) -> None:
        """Accept one frame; may wait (backpressure) but never drops audio."""
        ...

    def speaker_activity(self, activity: SpeakerActivity) -> None:
        """Accept one active-speaker change."""
        ...

    def segments(self) -> AsyncIterator[Segment]:
        """Segments as they are produced; ends after :meth:`close` finished."""
        ...

    async def close(self) -> None:
        """Flush pending utterances and finish; :meth:`segments` ends afterwards."""
        ...

    async def abort(self) -> None:
        """Stop at once, cancelling and awaiting internal tasks."""
        ...


class TranscriberContext(ABC):
    """A transcriber used as ``async with``: started on entry, finished on exit.

    Leaving the block normally runs :meth:`close` (the last utterances are flushed and
    transcribed); leaving it with an exception runs :meth:`abort` (nothing more is
    transcribed) and the exception goes on.
    """

    def start(self) -> None:  # noqa: B027 -- a hook: a tier without tasks has nothing to start
        """Start what runs while frames come in (idempotent); nothing to start by default."""

    @abstractmethod
    async def close(self) -> None:
        """Flush pending utterances and finish."""

    @abstractmethod
    async def abort(self) -> None:
        """Stop at once, cancelling and awaiting internal tasks."""

    async def __aenter__(self) -> Self:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            await self.close()
        else:
            await self.abort()


async def until_end(queue: asyncio.Queue[Segment | None]) -> AsyncIterator[Segment]:
    """The segments put in ``queue``, up to the ``None`` a transcriber puts there last."""
    while True:
        segment = await queue.get()
        if segment is None:
            return
        yield segment
