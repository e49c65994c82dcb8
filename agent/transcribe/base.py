"""The ``Transcriber`` seam (docs/architecture.md §4): what the agent's capture wiring talks to."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from agent.audio import AudioFrame, SpeakerActivity
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
