"""The room's media: audio from and to the pages.

Audio sources, the audio slots (remote tracks) pages hold, speech and microphone blocks out to the
pages, and what browser participants send in.

Audio slots: Google Meet gives every remote participant an audio track of their own, so each
page prepares one slot per possible speaker — ``sim-<index>`` per scripted simulated
participant, then the id of each participant who joined later (host API or browser). Binary
page messages (:func:`speech_message`): ``speech`` carries a simulated participant's
utterance, in parts of at most :data:`SPEECH_PART_BYTES` (:func:`speech_parts`), ``stream`` a
100 ms block of another browser participant's microphone.

All PCM is 16 kHz mono int16 little-endian.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from testmeeting import media
from testmeeting.conversation import voiced_span
from testmeeting.errors import MediaNotFound, ParticipantNotFound
from testmeeting.room.state import ParticipantState, RoomState
from testmeeting.scenario import Scenario, Utterance

MAX_FRAMES_KEPT = 60
"""Camera/screen PNG frames kept per participant and kind (the newest win)."""

FRAME_KINDS = ("camera", "screen")


@dataclass(frozen=True, slots=True)
class PreparedUtterance:
    """An utterance's audio, ready to send: 16 kHz mono int16 PCM."""

    pcm: bytes
    text: str | None
    file: str | None

    @property
    def duration(self) -> float:
        """Length in seconds."""
        return len(self.pcm) / 2 / media.SAMPLE_RATE


def prepare_utterance(utterance: Utterance, search: list[Path]) -> PreparedUtterance:
    """Decode or synthesise one utterance (blocking; use ``asyncio.to_thread``).

    Raises:
        ScenarioError: The file is missing or undecodable, or synthesis fails.
    """
    if utterance.file is not None:
        path = media.resolve_audio(utterance.file, search)
        text = utterance.text or media.reference_text(path)
        return PreparedUtterance(media.read_pcm(path), text, str(path))
    assert utterance.text is not None  # noqa: S101 -- the Utterance validator guarantees it
    return PreparedUtterance(media.synthesise(utterance.text), utterance.text, None)


def prepare_audio(
    scenario: Scenario, search: list[Path]
) -> dict[tuple[int, int], PreparedUtterance]:
    """Decode or synthesise every utterance of a scenario (blocking; use ``asyncio.to_thread``).

    Args:
        scenario: The scenario.
        search: Folders relative audio paths are looked up in, in order.

    Returns:
        ``{(participant index, utterance index): PreparedUtterance}``; utterances of the same
        file or text share one decoded copy, so a meeting of hours that reuses a corpus holds
        the corpus once.

    Raises:
        ScenarioError: A file is missing or undecodable, or synthesis fails.
    """
    decoded: dict[tuple[str | None, str | None], PreparedUtterance] = {}
    prepared: dict[tuple[int, int], PreparedUtterance] = {}
    for p_index, sim in enumerate(scenario.participants):
        for u_index, utterance in enumerate(sim.utterances):
            key = (utterance.file, utterance.text)
            if key not in decoded:
                decoded[key] = prepare_utterance(utterance, search)
            prepared[(p_index, u_index)] = decoded[key]
    return prepared


def speech_message(header: dict[str, Any], pcm: bytes) -> bytes:
    """Binary page message: uint32 LE header length, JSON header, int16 PCM."""
    encoded = json.dumps(header).encode()
    return struct.pack("<I", len(encoded)) + encoded + pcm


# An utterance goes to the pages in parts of at most this many PCM bytes (8 s of audio).
# Playwright's driver relays every WebSocket frame a bot's page receives to the bot's Python
# process (CDP Network.webSocketFrameReceived, then its own frameReceived event, base64 in
# JSON, whether or not anyone listens): the corpus's 232 s clip sent whole (7.4 MB) lifted a
# bot's driver by ~45 MB and its agent by ~25 MB for a few seconds, every time the corpus came
# round (issue 19's soak peaks). Real platforms send media over WebRTC, not WebSocket frames.
SPEECH_PART_BYTES = 256_000


def speech_parts(header: dict[str, Any], pcm: bytes) -> list[bytes]:
    """``speech`` messages carrying ``pcm`` in order, each ≤ :data:`SPEECH_PART_BYTES` of it.

    Every header is ``header`` plus ``part`` (0, 1, …) and ``parts`` (how many); the page
    plays the utterance once it holds them all (``header["clip"]`` tells utterances apart).
    """
    count = max(1, -(-len(pcm) // SPEECH_PART_BYTES))
    return [
        speech_message(
            {**header, "part": index, "parts": count},
            pcm[index * SPEECH_PART_BYTES : (index + 1) * SPEECH_PART_BYTES],
        )
        for index in range(count)
    ]


@dataclass(slots=True)
class ReceivedMedia:
    """What a browser participant sent: microphone PCM placed on its arrival clock, frames."""

    audio_start: float | None = None
    audio: bytearray = field(default_factory=bytearray)
    frames: dict[str, list[tuple[float, bytes]]] = field(
        default_factory=lambda: {kind: [] for kind in FRAME_KINDS}
    )
    rates: dict[str, list[tuple[float, float]]] = field(
        default_factory=lambda: {kind: [] for kind in FRAME_KINDS}
    )


class RoomMedia:
    """Audio slots, speech out and uploads in for one room; methods run on the event loop.

    Args:
        state: The room's participants and pages.
        scripted_slots: Number of scripted simulated participants (slots ``sim-0`` …).
        clock: UNIX epoch seconds.
    """

    def __init__(self, state: RoomState, scripted_slots: int, clock: Callable[[], float]) -> None:
        self._state = state
        self._clock = clock
        self._scripted = [f"sim-{index}" for index in range(scripted_slots)]
        # Slots beyond the script: host-API participants and admitted browser participants.
        self._extra: list[str] = []
        self._slot_of: dict[str, str] = {}  # participant id → scripted slot it speaks on
        self._received: dict[str, ReceivedMedia] = {}
        self._clips = 0  # utterances sent, numbering each one's parts

    # ---- audio slots -----------------------------------------------------------------

    def audio_slot_ids(self, for_participant: str | None = None) -> list[str]:
        """Audio slots (remote tracks on Google Meet) a page should hold.

        Scripted simulated participants as ``sim-<index>`` in script order, then participants added
        later and browser participants who entered the meeting, by participant id — except the
        page's own participant.
        """
        return self._scripted + [slot for slot in self._extra if slot != for_participant]

    def bind_scripted(self, participant_id: str, index: int) -> None:
        """A scripted simulated participant (script index ``index``) speaks on ``sim-<index>``."""
        self._slot_of[participant_id] = f"sim-{index}"

    async def add_slot(self, participant_id: str) -> None:
        """Give a participant a slot of their own and tell every page (no-op if they have one).

        Pages learn the new slot before anyone can hear the participant speak.
        """
        if participant_id in self._extra:
            return
        self._extra.append(participant_id)
        for pid in self._state.page_ids():
            slots = self.audio_slot_ids(pid)
            await self._state.send(pid, {"type": "audio_slots", "audio_slots": slots})

    # ---- out to the pages --------------------------------------------------------------

    async def play(
        self, participant_id: str, prepared: PreparedUtterance, slot: str | None = None
    ) -> None:
        """Send speech of a simulated participant to every page in the meeting now.

        Args:
            participant_id: The speaking (simulated) participant.
            prepared: The audio and its reference text.
            slot: Audio slot (remote track) it plays on; defaults to the participant's slot.

        Raises:
            ParticipantNotFound: No such participant.
        """
        participant = self._state.participant(participant_id)
        if slot is None:
            slot = self._slot_of.get(participant_id, participant_id)
        start = self._clock()
        self._state.record(
            "speech",
            participant,
            end=start + prepared.duration,
            text=prepared.text,
            file=prepared.file,
        )
        # Platforms light a speaker's indicator while their voice is heard, not through the
        # silence a recording starts and ends with: the page lights it over the voiced span.
        voiced = voiced_span(np.frombuffer(prepared.pcm, dtype="<i2"))
        self._clips += 1
        header = {
            "type": "speech",
            "participant_id": participant.id,
            "slot": slot,
            "sample_rate": media.SAMPLE_RATE,
            "voiced": [round(voiced[0], 3), round(voiced[1], 3)],
            "clip": self._clips,
        }
        messages = speech_parts(header, prepared.pcm)
        for _pid, link in self._state.meeting_pages():
            for message in messages:
                await link.send_bytes(message)

    async def relay_audio(self, participant_id: str, pcm: bytes) -> None:
        """Send a browser participant's microphone block to every other page in the meeting.

        This is what the platforms do; nothing is relayed from the lobby or with the microphone off.
        """
        participant = self._state.participants[participant_id]
        if participant.state is not ParticipantState.IN_MEETING or not participant.mic_on:
            return
        header = {
            "type": "stream",
            "participant_id": participant_id,
            "slot": participant_id,
            "sample_rate": media.SAMPLE_RATE,
        }
        message = speech_message(header, pcm[: len(pcm) - len(pcm) % 2])
        for pid, link in self._state.meeting_pages():
            if pid != participant_id:
                await link.send_bytes(message)

    # ---- in from the pages -------------------------------------------------------------

    def receive_audio(self, participant_id: str, t: float, pcm: bytes) -> None:
        """Store microphone PCM captured at epoch ``t``; gaps (muted mic) become silence."""
        received = self._received_by(participant_id)
        if received.audio_start is None:
            received.audio_start = t
        offset = round((t - received.audio_start) * media.SAMPLE_RATE) * 2
        if offset > len(received.audio) + media.SAMPLE_RATE // 5:
            # More than 100 ms behind the capture clock: the page sent nothing for a while.
            received.audio.extend(bytes(offset - len(received.audio)))
        received.audio.extend(pcm[: len(pcm) - len(pcm) % 2])

    def receive_frame(self, participant_id: str, kind: str, t: float, png: bytes) -> None:
        """Store a camera or screen frame (PNG) captured at epoch ``t``."""
        frames = self._received_by(participant_id).frames[kind]
        frames.append((t, png))
        del frames[:-MAX_FRAMES_KEPT]

    def receive_video_rate(
        self, participant_id: str, kind: str, frames: int, seconds: float
    ) -> None:
        """Store the frame rate (frames per second) a page reported for its ``kind`` stream."""
        rates = self._received_by(participant_id).rates[kind]
        rates.append((self._clock(), frames / seconds))
        del rates[:-MAX_FRAMES_KEPT]

    def received_video_rate(self, participant_id: str, kind: str) -> list[tuple[float, float]]:
        """``[(epoch, frames per second), ...]`` of a camera or screen stream, one a second.

        The newest 60; each is the rate at which the page presented that stream's frames over
        the second before ``epoch``.

        Raises:
            ParticipantNotFound: No such browser participant.
            MediaNotFound: ``kind`` is not camera/screen.
        """
        if kind not in FRAME_KINDS:
            raise MediaNotFound(f"unknown frame kind {kind!r}")
        received = self._received_from(participant_id)
        return list(received.rates[kind]) if received is not None else []

    def received_audio(self, participant_id: str) -> tuple[float, bytes]:
        """``(epoch of the first sample, 16 kHz mono int16 PCM)`` a browser participant sent.

        Raises:
            ParticipantNotFound: No such browser participant.
            MediaNotFound: Nothing was received.
        """
        received = self._received_from(participant_id)
        if received is None or received.audio_start is None:
            raise MediaNotFound(f"no audio received from {participant_id}")
        return received.audio_start, bytes(received.audio)

    def received_frames(self, participant_id: str, kind: str) -> list[tuple[float, bytes]]:
        """Camera or screen frames ``[(epoch, png), ...]`` (oldest first, at most 60).

        Raises:
            ParticipantNotFound: No such browser participant.
            MediaNotFound: ``kind`` is not camera/screen.
        """
        if kind not in FRAME_KINDS:
            raise MediaNotFound(f"unknown frame kind {kind!r}")
        received = self._received_from(participant_id)
        return list(received.frames[kind]) if received is not None else []

    def _received_by(self, participant_id: str) -> ReceivedMedia:
        """The store an upload of a (joined) browser participant goes into."""
        received = self._received.get(participant_id)
        if received is None:
            received = self._received[participant_id] = ReceivedMedia()
        return received

    def _received_from(self, participant_id: str) -> ReceivedMedia | None:
        """What a browser participant sent so far (``None``: nothing yet).

        Raises:
            ParticipantNotFound: No such browser participant.
        """
        participant = self._state.participants.get(participant_id)
        if participant is None or participant.simulated:
            raise ParticipantNotFound(f"no browser participant {participant_id}")
        return self._received.get(participant_id)
