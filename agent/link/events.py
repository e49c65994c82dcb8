"""Where the bot's events go: the link to the control plane, the SSE log, and an observer.

:class:`BotEvents` is the one place that turns a domain event into its link frame
(agent/contracts/link.py) and its SSE payload (docs/api.md 2.7), so the two never disagree.
Transcript partials go to the SSE stream only; final segments go to both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from agent.contracts.link import (
    AgentFrame,
    ArtifactEvent,
    ArtifactKind,
    ChatMessageEvent,
    CommandResult,
    MemoryReport,
    ParticipantsEvent,
    Segment,
    StatusEvent,
    TranscriptionReady,
    TranscriptSegmentEvent,
)
from agent.contracts.status import BotStatus
from agent.contracts.timestamps import format_utc
from agent.sse.log import EventLog

FrameSender = Callable[[AgentFrame], Awaitable[None]]
"""Queues a frame for the control plane (``LinkClient.send``)."""

Observer = Callable[[str, dict[str, Any]], None]
"""Sees every event by name and payload (the CLI prints them to the terminal as its output;
payloads hold transcript and chat text, so observers must not log them)."""


class BotEvents:
    """Fan-out of one bot's events.

    Args:
        stream: The SSE event log.
        link: Queues frames for the control plane; None when running without one.
        observer: Optional extra consumer (terminal output, tests).
    """

    def __init__(
        self,
        stream: EventLog,
        link: FrameSender | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.stream = stream
        self._link = link
        self._observer = observer
        self.chat_log: list[ChatMessageEvent] = []

    async def _to_link(self, frame: AgentFrame) -> None:
        if self._link is not None:
            await self._link(frame)

    async def _to_stream(self, name: str, payload: dict[str, Any]) -> None:
        if not self.stream.closed:
            await self.stream.append(name, payload)

    def _observe(self, name: str, payload: dict[str, Any]) -> None:
        if self._observer is not None:
            self._observer(name, payload)

    async def status(self, frame: StatusEvent) -> None:
        """A status change (already validated against the status table)."""
        payload: dict[str, Any] = {
            "status": frame.status.value,
            "status_reason": frame.status_reason,
            "timestamp": format_utc(frame.ts),
        }
        if frame.detail:
            # Words on the move when the bot has any (why a platform may hold it in the lobby,
            # why a join failed), for the client reading the stream.
            payload["detail"] = frame.detail
        self._observe("bot_status", payload)
        await self._to_link(frame)
        await self._to_stream("bot_status", payload)

    async def participants(
        self,
        names: list[str],
        joined: list[str],
        left: list[str],
        meeting_name: str | None = None,
    ) -> None:
        """Report that the participant list changed (names exclude the bot).

        ``meeting_name`` is the meeting's title when it was just read from the page.
        """
        frame = ParticipantsEvent(
            participants=names, joined=joined, left=left, meeting_name=meeting_name
        )
        payload = {"participants": names, "joined": joined, "left": left}
        self._observe("participant_update", payload)
        await self._to_link(frame)
        await self._to_stream("participant_update", payload)

    async def segment(self, segment: Segment) -> None:
        """A transcript segment; partials (``completed=False``) reach only the stream.

        A final with empty text retracts its partials (no speech after all): the stream gets
        it so clients drop the partial; the control plane has nothing to store.
        """
        payload = segment.model_dump(mode="json")
        self._observe("transcript_segment", payload)
        final = segment.completed and bool(segment.text.strip())
        if final:
            await self._to_link(TranscriptSegmentEvent(segment=segment))
        await self._to_stream("transcript_segment", payload)

    async def transcription_ready(self, frame: TranscriptionReady) -> None:
        """A tier finished the meeting's transcript (link only; the webhook comes from it)."""
        self._observe("transcription_ready", {"tier": frame.tier, "count": frame.segment_count})
        await self._to_link(frame)

    async def chat(self, message: ChatMessageEvent) -> None:
        """A chat message seen in the meeting (link only: the stream has no chat event)."""
        self.chat_log.append(message)
        self._observe("chat_message", message.model_dump(mode="json", exclude={"type"}))
        await self._to_link(message)

    async def artifact(self, frame: ArtifactEvent) -> None:
        """An uploaded artifact; a recording is also announced as ``recording_ready``."""
        captured = frame.captured_at.isoformat() if frame.captured_at is not None else None
        self._observe(
            "artifact",
            {
                "kind": frame.kind.value,
                "storage_key": frame.storage_key,
                "captured_at": captured,
                "duration_s": frame.duration_s,
            },
        )
        await self._to_link(frame)
        if frame.kind is ArtifactKind.RECORDING:
            await self._to_stream(
                "recording_ready",
                {
                    "recording_id": frame.artifact_id,
                    "format": frame.format,
                    "duration_s": frame.duration_s,
                },
            )

    async def action_announced(self, payload: dict[str, Any]) -> None:
        """``action_detected`` (stream only): an action the control plane detected and stored."""
        self._observe("action_detected", payload)
        await self._to_stream("action_detected", payload)

    async def speech(self, name: str, payload: dict[str, Any]) -> None:
        """``speak_started`` / ``speak_finished`` (stream only; agent/voice/speaker.py)."""
        self._observe(name, payload)
        await self._to_stream(name, payload)

    async def meeting_audio_missing(self, shown_speaking_s: float) -> None:
        """Others were shown speaking but no meeting audio reached the bot (stream only)."""
        payload = {
            "timestamp": format_utc(datetime.now(UTC)),
            "shown_speaking_s": round(shown_speaking_s, 1),
        }
        self._observe("meeting_audio_missing", payload)
        await self._to_stream("meeting_audio_missing", payload)

    async def avatar_unavailable(self, detail: str) -> None:
        """The bot's ``default_avatar_url`` could not be used at join (stream only).

        The camera shows the service logo instead; ``detail`` says why (refused, not fetched,
        not an image, over 5 MiB, not decodable).
        """
        payload = {"timestamp": format_utc(datetime.now(UTC)), "detail": detail}
        self._observe("avatar_unavailable", payload)
        await self._to_stream("avatar_unavailable", payload)

    def diagnostic(self, name: str, payload: dict[str, Any]) -> None:
        """A check of the bot's own machine (``sound_check``): the observer only.

        Not an API event: it goes neither over the link nor to the SSE stream; the log has it
        too.
        """
        self._observe(name, payload)

    async def memory(self, frame: MemoryReport) -> None:
        """The bot's process tree crossed a memory threshold (link only; agent/memory)."""
        self._observe("memory", frame.model_dump(mode="json", exclude={"type", "id", "ts"}))
        await self._to_link(frame)

    async def command_result(self, frame: CommandResult) -> None:
        """The outcome of a command from the control plane."""
        self._observe("command_result", {"ok": frame.ok, "error": frame.error})
        await self._to_link(frame)


def status_frame(status: BotStatus, reason: str | None, detail: str | None = None) -> StatusEvent:
    """Build a status frame (a helper for callers that hold no frame type imports)."""
    return StatusEvent(status=status, status_reason=reason, detail=detail)
