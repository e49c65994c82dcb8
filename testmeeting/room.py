"""A meeting room: its participants, the host's behaviour, the script and the ground truth.

A :class:`Room` is keyed by ``(platform, meeting_id)``. Browser participants reach it through
a :class:`PageLink` (the page's WebSocket, see ``testmeeting.pagelink``); simulated
participants follow the room's :class:`~testmeeting.scenario.Scenario`. Every change is
appended to the timeline (UNIX epoch seconds, ``time.time()`` clock, the same clock the
agent stamps audio with).

The room owns one task per scripted action and per pending lobby decision; :meth:`Room.close`
cancels and awaits them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from testmeeting import media
from testmeeting.errors import (
    InvalidState,
    MediaNotFound,
    ParticipantNotFound,
    RoomExists,
    RoomNotFound,
)
from testmeeting.platforms import Platform
from testmeeting.scenario import Scenario, SimulatedParticipant, Utterance

log = logging.getLogger(__name__)

MAX_FRAMES_KEPT = 60
"""Camera/screen PNG frames kept per participant and kind (the newest win)."""

FRAME_KINDS = ("camera", "screen")


class ParticipantState(StrEnum):
    """Where a participant is."""

    LOBBY = "lobby"
    IN_MEETING = "in_meeting"
    LEFT = "left"
    REMOVED = "removed"
    DENIED = "denied"
    NO_ANSWER = "no_answer"


class PageLink(Protocol):
    """The simulator's end of one browser page's WebSocket."""

    async def send_json(self, message: dict[str, Any]) -> None:
        """Send one JSON message; a closed page is ignored."""

    async def send_bytes(self, data: bytes) -> None:
        """Send one binary message; a closed page is ignored."""


class TimelineEvent(BaseModel):
    """One ground-truth fact.

    Attributes:
        type: ``room_created``, ``clock_started``, ``joined``, ``lobby_entered``, ``admitted``,
            ``denied``, ``no_answer``, ``left``, ``removed``, ``speech``, ``chat``,
            ``hand_raised``, ``hand_lowered``, ``mic``, ``camera``, ``screen``,
            ``meeting_ended``.
        t: UNIX epoch seconds when it happened (for ``speech``: when the audio was sent to
            the pages).
        end: For ``speech``: ``t`` plus the clip's duration.
        participant_id: Who it concerns.
        name: Their display name.
        text: Reference text of speech, chat text.
        file: Audio file of speech, if any.
        value: New state of ``mic``/``camera``/``screen``.
    """

    model_config = ConfigDict(frozen=True)

    type: str
    t: float
    end: float | None = None
    participant_id: str | None = None
    name: str | None = None
    text: str | None = None
    file: str | None = None
    value: bool | None = None


@dataclass(slots=True)
class Participant:
    """A participant as the host sees them."""

    id: str
    name: str
    simulated: bool
    state: ParticipantState
    mic_on: bool = True
    camera_on: bool = False
    screen_on: bool = False
    hand_raised: bool = False
    joined_at: float | None = None

    def public(self) -> dict[str, Any]:
        """JSON shape used by the host API and the pages."""
        return {
            "id": self.id,
            "name": self.name,
            "simulated": self.simulated,
            "state": self.state.value,
            "mic_on": self.mic_on,
            "camera_on": self.camera_on,
            "screen_on": self.screen_on,
            "hand_raised": self.hand_raised,
            "joined_at": self.joined_at,
        }


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


@dataclass(slots=True)
class ReceivedMedia:
    """What a browser participant sent: microphone PCM placed on its arrival clock, frames."""

    audio_start: float | None = None
    audio: bytearray = field(default_factory=bytearray)
    frames: dict[str, list[tuple[float, bytes]]] = field(
        default_factory=lambda: {kind: [] for kind in FRAME_KINDS}
    )


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """A chat message in the room."""

    id: str
    sender_id: str | None
    sender: str
    text: str
    t: float

    def public(self) -> dict[str, Any]:
        """JSON shape used by the host API and the pages."""
        return {
            "id": self.id,
            "sender_id": self.sender_id,
            "sender": self.sender,
            "text": self.text,
            "t": self.t,
        }


def speech_message(header: dict[str, Any], pcm: bytes) -> bytes:
    """Binary page message: uint32 LE header length, JSON header, int16 PCM."""
    encoded = json.dumps(header).encode()
    return struct.pack("<I", len(encoded)) + encoded + pcm


class Room:
    """One meeting. Create through :class:`Rooms`; all methods run on the event loop."""

    def __init__(
        self,
        scenario: Scenario,
        audio: dict[tuple[int, int], PreparedUtterance],
        clock: Callable[[], float] = time.time,
        audio_search: list[Path] | None = None,
    ) -> None:
        self.scenario = scenario
        self._audio = audio
        self._audio_search = list(audio_search or [])
        # Audio slots beyond the script: host-API participants and admitted browser participants.
        self._extra_slots: list[str] = []
        self._clock = clock
        self._ids = itertools.count(1)
        self._chat_ids = itertools.count(1)
        self.participants: dict[str, Participant] = {}
        self._links: dict[str, PageLink] = {}
        self._received: dict[str, ReceivedMedia] = {}
        self._simulated: dict[int, str] = {}  # scenario index → participant id
        self.chat: list[ChatMessage] = []
        self._timeline: list[TimelineEvent] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.t0: float | None = None
        self.ended = False
        self.created_at = clock()

    @property
    def key(self) -> tuple[Platform, str]:
        """``(platform, meeting_id)``."""
        return self.scenario.platform, self.scenario.meeting_id

    # ---- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        """Seat the participants present from the start and, if so scripted, start the clock."""
        self._record("room_created")
        for index, sim in enumerate(self.scenario.participants):
            if sim.join_at <= 0:
                await self._join_simulated(index, sim)
        if self.scenario.clock == "room_created":
            self._start_clock()

    async def close(self) -> None:
        """Cancel and await every task the room owns."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

    def _spawn(self, coro: Awaitable[None], name: str) -> None:
        async def run() -> None:
            await coro

        task = asyncio.get_running_loop().create_task(run(), name=f"testmeeting:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error(
                "room task failed", exc_info=task.exception(), extra={"task": task.get_name()}
            )

    def _at(self, seconds: float, action: Callable[[], Awaitable[None]], name: str) -> None:
        """Run ``action`` at scenario time ``seconds``."""
        assert self.t0 is not None  # noqa: S101 -- only called once the clock runs
        due = self.t0 + seconds

        async def later() -> None:
            await asyncio.sleep(max(0.0, due - self._clock()))
            if not self.ended:
                await action()

        self._spawn(later(), name)

    def _start_clock(self) -> None:
        if self.t0 is not None:
            return
        self.t0 = self._clock()
        self._record("clock_started")
        for index, sim in enumerate(self.scenario.participants):
            self._script_participant(index, sim)
        for removal in self.scenario.removals:
            self._at(removal.at, partial(self._scripted_removal, removal.name), "removal")
        if self.scenario.end_at is not None:
            self._at(self.scenario.end_at, self.end, "end")

    def _script_participant(self, index: int, sim: SimulatedParticipant) -> None:
        if sim.join_at > 0:
            self._at(sim.join_at, partial(self._join_simulated, index, sim), "join")
        if sim.leave_at is not None:
            self._at(sim.leave_at, partial(self._leave_simulated, index), "leave")
        for u_index, utterance in enumerate(sim.utterances):
            self._at(utterance.at, partial(self._speak, index, u_index, utterance), "speech")
        for line in sim.chat:
            self._at(line.at, partial(self._simulated_chat, index, line.text), "chat")
        for hand in sim.hands:
            self._at(hand.at, partial(self._simulated_hand, index, True), "hand")
            if hand.lower_at is not None:
                self._at(hand.lower_at, partial(self._simulated_hand, index, False), "hand")

    # ---- simulated participants ------------------------------------------------------

    async def _join_simulated(self, index: int, sim: SimulatedParticipant) -> None:
        participant = self._new_participant(
            sim.name, simulated=True, state=ParticipantState.IN_MEETING
        )
        participant.mic_on, participant.camera_on = sim.mic_on, sim.camera_on
        participant.joined_at = self._clock()
        self._simulated[index] = participant.id
        self._record("joined", participant)
        await self._broadcast_participants()

    async def _leave_simulated(self, index: int) -> None:
        participant = self._sim(index)
        if participant is not None and participant.state is ParticipantState.IN_MEETING:
            participant.state = ParticipantState.LEFT
            self._record("left", participant)
            await self._broadcast_participants()

    def _sim(self, index: int) -> Participant | None:
        pid = self._simulated.get(index)
        return self.participants.get(pid) if pid else None

    def audio_slot_ids(self, for_participant: str | None = None) -> list[str]:
        """Audio slots (remote tracks on Google Meet) a page should hold: scripted simulated
        participants as ``sim-<index>`` in script order, then participants added later and
        browser participants who entered the meeting, by participant id — except the page's
        own participant."""
        scripted = [f"sim-{index}" for index in range(len(self.scenario.participants))]
        return scripted + [slot for slot in self._extra_slots if slot != for_participant]

    async def _announce_slots(self) -> None:
        for pid in list(self._links):
            slots = self.audio_slot_ids(pid)
            await self._send(pid, {"type": "audio_slots", "audio_slots": slots})

    async def add_participant(
        self, name: str, mic_on: bool = True, camera_on: bool = False
    ) -> Participant:
        """A simulated participant joins now (not from the script).

        Pages are told the new audio slot before anyone can hear them speak.
        """
        participant = self._new_participant(name, simulated=True, state=ParticipantState.IN_MEETING)
        participant.mic_on, participant.camera_on = mic_on, camera_on
        participant.joined_at = self._clock()
        self._extra_slots.append(participant.id)
        self._record("joined", participant)
        await self._announce_slots()
        await self._broadcast_participants()
        return participant

    async def say(self, participant_id: str, utterance: Utterance) -> PreparedUtterance:
        """A simulated participant speaks ``utterance`` now (its ``at`` is ignored).

        Raises:
            ParticipantNotFound: No such participant.
            InvalidState: They are not a simulated participant in the meeting.
            ScenarioError: The audio cannot be read or synthesised.
        """
        participant = self._in_state(participant_id, ParticipantState.IN_MEETING)
        if not participant.simulated:
            raise InvalidState(f"participant {participant_id} is a browser participant")
        prepared = await asyncio.to_thread(prepare_utterance, utterance, self._audio_search)
        await self.play(participant_id, prepared)
        return prepared

    async def _speak(self, index: int, u_index: int, utterance: Utterance) -> None:
        participant = self._sim(index)
        if participant is None or participant.state is not ParticipantState.IN_MEETING:
            log.warning(
                "scripted speech skipped: speaker not in the meeting", extra={"slot": index}
            )
            return
        prepared = self._audio[(index, u_index)]
        await self.play(participant.id, prepared, slot=f"sim-{index}")

    async def play(
        self, participant_id: str, prepared: PreparedUtterance, slot: str | None = None
    ) -> None:
        """Send speech of a simulated participant to every page in the meeting now.

        Args:
            participant_id: The speaking (simulated) participant.
            prepared: The audio and its reference text.
            slot: Audio slot (remote track) it plays on; defaults to the participant's slot.
        """
        participant = self._participant(participant_id)
        if slot is None:
            index = next((i for i, pid in self._simulated.items() if pid == participant_id), None)
            slot = f"sim-{index}" if index is not None else participant_id
        start = self._clock()
        self._record(
            "speech",
            participant,
            end=start + prepared.duration,
            text=prepared.text,
            file=prepared.file,
        )
        header = {
            "type": "speech",
            "participant_id": participant.id,
            "slot": slot,
            "sample_rate": media.SAMPLE_RATE,
        }
        message = speech_message(header, prepared.pcm)
        for pid, link in list(self._links.items()):
            if self.participants[pid].state is ParticipantState.IN_MEETING:
                await link.send_bytes(message)

    async def _simulated_chat(self, index: int, text: str) -> None:
        participant = self._sim(index)
        if participant is not None and participant.state is ParticipantState.IN_MEETING:
            await self.send_chat(text, sender_id=participant.id)

    async def _simulated_hand(self, index: int, raised: bool) -> None:
        participant = self._sim(index)
        if participant is not None and participant.state is ParticipantState.IN_MEETING:
            await self.set_hand(participant.id, raised)

    async def _scripted_removal(self, name: str | None) -> None:
        target = next(
            (
                p
                for p in self.participants.values()
                if p.state is ParticipantState.IN_MEETING
                and (p.name == name if name else not p.simulated)
            ),
            None,
        )
        if target is None:
            log.warning("scripted removal found nobody to remove")
            return
        await self.remove(target.id)

    # ---- browser participants --------------------------------------------------------

    async def guest_join(
        self, link: PageLink, name: str, mic_on: bool, camera_on: bool
    ) -> Participant:
        """A page pressed its join button.

        Sends the page ``joined`` (its id and the audio slots to prepare), then ``lobby`` or
        ``admitted`` — or ``ended`` if the meeting is over.
        """
        participant = self._new_participant(name, simulated=False, state=ParticipantState.LOBBY)
        participant.mic_on, participant.camera_on = mic_on, camera_on
        self._links[participant.id] = link
        self._received[participant.id] = ReceivedMedia()
        await link.send_json(
            {
                "type": "joined",
                "participant_id": participant.id,
                "audio_slots": self.audio_slot_ids(participant.id),
            }
        )
        if self.ended:
            await link.send_json({"type": "ended"})
            return participant
        if self.scenario.lobby:
            self._record("lobby_entered", participant)
            await link.send_json({"type": "lobby"})
            self._schedule_admission(participant.id)
        else:
            await self._enter(participant)
        return participant

    def _schedule_admission(self, participant_id: str) -> None:
        admission = self.scenario.admission
        if admission.decision == "admit":
            self._spawn(self._decide_later(participant_id, admission.after_s, self.admit), "admit")
        elif admission.decision == "deny":
            self._spawn(self._decide_later(participant_id, admission.after_s, self.deny), "deny")
        elif admission.no_answer_after_s is not None:
            self._spawn(
                self._decide_later(participant_id, admission.no_answer_after_s, self._no_answer),
                "no_answer",
            )

    async def _decide_later(
        self, participant_id: str, delay: float, decide: Callable[[str], Awaitable[None]]
    ) -> None:
        await asyncio.sleep(delay)
        if self.participants[participant_id].state is ParticipantState.LOBBY and not self.ended:
            await decide(participant_id)

    async def admit(self, participant_id: str) -> None:
        """The host admits a participant waiting in the lobby.

        Raises:
            ParticipantNotFound: No such participant.
            InvalidState: They are not in the lobby.
        """
        participant = self._in_state(participant_id, ParticipantState.LOBBY)
        await self._enter(participant, admitted=True)

    async def _enter(self, participant: Participant, admitted: bool = False) -> None:
        participant.state = ParticipantState.IN_MEETING
        participant.joined_at = self._clock()
        self._record("admitted" if admitted else "joined", participant)
        await self._send(participant.id, {"type": "admitted", "participant_id": participant.id})
        if participant.id not in self._extra_slots:
            # Other pages hear this participant's microphone on a track of its own (Meet).
            self._extra_slots.append(participant.id)
            await self._announce_slots()
        if self.scenario.clock == "first_admitted":
            self._start_clock()
        await self._broadcast_participants()
        await self._send(
            participant.id, {"type": "chat_history", "messages": [m.public() for m in self.chat]}
        )

    async def deny(self, participant_id: str) -> None:
        """The host denies a participant waiting in the lobby.

        Raises:
            ParticipantNotFound: No such participant.
            InvalidState: They are not in the lobby.
        """
        participant = self._in_state(participant_id, ParticipantState.LOBBY)
        participant.state = ParticipantState.DENIED
        self._record("denied", participant)
        await self._send(participant_id, {"type": "denied"})

    async def _no_answer(self, participant_id: str) -> None:
        participant = self._in_state(participant_id, ParticipantState.LOBBY)
        participant.state = ParticipantState.NO_ANSWER
        self._record("no_answer", participant)
        await self._send(participant_id, {"type": "no_answer"})

    async def remove(self, participant_id: str) -> None:
        """The host removes a participant from the meeting (or the lobby).

        Raises:
            ParticipantNotFound: No such participant.
            InvalidState: They are neither in the meeting nor in the lobby.
        """
        participant = self._participant(participant_id)
        if participant.state not in (ParticipantState.IN_MEETING, ParticipantState.LOBBY):
            raise InvalidState(f"participant {participant_id} is {participant.state.value}")
        participant.state = ParticipantState.REMOVED
        participant.hand_raised = False
        self._record("removed", participant)
        await self._send(participant_id, {"type": "removed"})
        await self._broadcast_participants()

    async def leave(self, participant_id: str) -> None:
        """A participant leaves (pressed leave, their page went away, or the host API says a
        simulated one leaves). Idempotent.

        Raises:
            ParticipantNotFound: No such participant.
        """
        participant = self._participant(participant_id)
        if participant.state not in (ParticipantState.IN_MEETING, ParticipantState.LOBBY):
            return
        participant.state = ParticipantState.LEFT
        participant.hand_raised = False
        self._record("left", participant)
        await self._broadcast_participants()

    def detach(self, participant_id: str) -> None:
        """Forget a page link (its WebSocket closed)."""
        self._links.pop(participant_id, None)

    async def end(self) -> None:
        """The host ends the meeting for everyone; scripted actions still pending are dropped."""
        if self.ended:
            return
        self.ended = True
        self._record("meeting_ended")
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()
        for participant in self.participants.values():
            if participant.state in (ParticipantState.IN_MEETING, ParticipantState.LOBBY):
                participant.state = ParticipantState.LEFT
                participant.hand_raised = False
                await self._send(participant.id, {"type": "ended"})

    async def set_hand(self, participant_id: str, raised: bool) -> None:
        """Raise or lower a participant's hand.

        Raises:
            ParticipantNotFound: No such participant.
            InvalidState: They are not in the meeting.
        """
        participant = self._in_state(participant_id, ParticipantState.IN_MEETING)
        if participant.hand_raised == raised:
            return
        participant.hand_raised = raised
        self._record("hand_raised" if raised else "hand_lowered", participant)
        await self._broadcast_participants()

    async def set_device(self, participant_id: str, device: str, on: bool) -> None:
        """Record a participant's microphone/camera/screen switching on or off."""
        participant = self._participant(participant_id)
        attribute = {"mic": "mic_on", "camera": "camera_on", "screen": "screen_on"}[device]
        if getattr(participant, attribute) == on:
            return
        setattr(participant, attribute, on)
        self._record(device, participant, value=on)
        if participant.state is ParticipantState.IN_MEETING:
            await self._broadcast_participants()

    async def send_chat(
        self, text: str, sender_id: str | None = None, sender_name: str | None = None
    ) -> ChatMessage:
        """Post a chat message to everyone in the meeting.

        Args:
            text: Message text.
            sender_id: Participant sending it; they must be in the meeting.
            sender_name: Display name when there is no ``sender_id`` (default ``"Host"``).

        Raises:
            ParticipantNotFound: ``sender_id`` is unknown.
            InvalidState: The sender is not in the meeting.
        """
        if sender_id is not None:
            sender = self._in_state(sender_id, ParticipantState.IN_MEETING).name
        else:
            sender = sender_name or "Host"
        message = ChatMessage(f"msg-{next(self._chat_ids)}", sender_id, sender, text, self._clock())
        self.chat.append(message)
        self._record("chat", self.participants.get(sender_id or ""), text=text, name=sender)
        for pid in list(self._links):
            if self.participants[pid].state is ParticipantState.IN_MEETING:
                await self._send(pid, {"type": "chat", "message": message.public()})
        return message

    # ---- media from the pages ---------------------------------------------------------

    def receive_audio(self, participant_id: str, t: float, pcm: bytes) -> None:
        """Store microphone PCM captured at epoch ``t``; gaps (muted mic) become silence."""
        received = self._received[participant_id]
        if received.audio_start is None:
            received.audio_start = t
        offset = round((t - received.audio_start) * media.SAMPLE_RATE) * 2
        if offset > len(received.audio) + media.SAMPLE_RATE // 5:
            # More than 100 ms behind the capture clock: the page sent nothing for a while.
            received.audio.extend(bytes(offset - len(received.audio)))
        received.audio.extend(pcm[: len(pcm) - len(pcm) % 2])

    async def relay_audio(self, participant_id: str, pcm: bytes) -> None:
        """Send a browser participant's microphone block to every other page in the meeting,
        as the platforms do; nothing is relayed from the lobby or with the microphone off."""
        participant = self.participants[participant_id]
        if participant.state is not ParticipantState.IN_MEETING or not participant.mic_on:
            return
        header = {
            "type": "stream",
            "participant_id": participant_id,
            "slot": participant_id,
            "sample_rate": media.SAMPLE_RATE,
        }
        message = speech_message(header, pcm[: len(pcm) - len(pcm) % 2])
        for pid, link in list(self._links.items()):
            if (
                pid != participant_id
                and self.participants[pid].state is ParticipantState.IN_MEETING
            ):
                await link.send_bytes(message)

    def receive_frame(self, participant_id: str, kind: str, t: float, png: bytes) -> None:
        """Store a camera or screen frame (PNG) captured at epoch ``t``."""
        frames = self._received[participant_id].frames[kind]
        frames.append((t, png))
        del frames[:-MAX_FRAMES_KEPT]

    def received_audio(self, participant_id: str) -> tuple[float, bytes]:
        """``(epoch of the first sample, 16 kHz mono int16 PCM)`` a browser participant sent.

        Raises:
            ParticipantNotFound: No such browser participant.
            MediaNotFound: Nothing was received.
        """
        received = self._received_of(participant_id)
        if received.audio_start is None:
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
        return list(self._received_of(participant_id).frames[kind])

    def _received_of(self, participant_id: str) -> ReceivedMedia:
        received = self._received.get(participant_id)
        if received is None:
            raise ParticipantNotFound(f"no browser participant {participant_id}")
        return received

    # ---- queries --------------------------------------------------------------------------

    def timeline(self) -> list[TimelineEvent]:
        """Everything that happened so far, in order."""
        return list(self._timeline)

    def summary(self) -> dict[str, Any]:
        """JSON shape of the room for the host API."""
        return {
            "platform": self.scenario.platform.value,
            "meeting_id": self.scenario.meeting_id,
            "title": self.scenario.title,
            "lobby": self.scenario.lobby,
            "ended": self.ended,
            "created_at": self.created_at,
            "clock_started_at": self.t0,
            "participants": [p.public() for p in self.participants.values()],
        }

    def find_by_name(self, name: str) -> Participant:
        """The most recent participant with that display name.

        Raises:
            ParticipantNotFound: Nobody has that name.
        """
        for participant in reversed(list(self.participants.values())):
            if participant.name == name:
                return participant
        raise ParticipantNotFound(f"no participant named {name!r}")

    # ---- helpers ---------------------------------------------------------------------------

    def _new_participant(self, name: str, simulated: bool, state: ParticipantState) -> Participant:
        participant = Participant(
            id=f"p{next(self._ids)}", name=name, simulated=simulated, state=state
        )
        self.participants[participant.id] = participant
        return participant

    def _participant(self, participant_id: str) -> Participant:
        participant = self.participants.get(participant_id)
        if participant is None:
            raise ParticipantNotFound(f"no participant {participant_id}")
        return participant

    def _in_state(self, participant_id: str, state: ParticipantState) -> Participant:
        participant = self._participant(participant_id)
        if participant.state is not state:
            raise InvalidState(
                f"participant {participant_id} is {participant.state.value}, not {state.value}"
            )
        return participant

    def _record(self, kind: str, participant: Participant | None = None, **fields: Any) -> None:
        if participant is not None:
            fields.setdefault("participant_id", participant.id)
            fields.setdefault("name", participant.name)
        self._timeline.append(TimelineEvent(type=kind, t=self._clock(), **fields))

    async def _send(self, participant_id: str, message: dict[str, Any]) -> None:
        link = self._links.get(participant_id)
        if link is not None:
            await link.send_json(message)

    async def _broadcast_participants(self) -> None:
        visible = [
            p.public() for p in self.participants.values() if p.state is ParticipantState.IN_MEETING
        ]
        for pid in list(self._links):
            if self.participants[pid].state is ParticipantState.IN_MEETING:
                await self._send(pid, {"type": "participants", "participants": visible})


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
        ``{(participant index, utterance index): PreparedUtterance}``.

    Raises:
        ScenarioError: A file is missing or undecodable, or synthesis fails.
    """
    return {
        (p_index, u_index): prepare_utterance(utterance, search)
        for p_index, sim in enumerate(scenario.participants)
        for u_index, utterance in enumerate(sim.utterances)
    }


class Rooms:
    """Every room of one server, keyed by ``(platform, meeting_id)``.

    Args:
        audio_search: Folders in which scenario audio paths are looked up.
    """

    def __init__(self, audio_search: list[Path]) -> None:
        self._rooms: dict[tuple[Platform, str], Room] = {}
        self._audio_search = audio_search

    async def create(self, scenario: Scenario, base_dir: Path | None = None) -> Room:
        """Prepare a scenario's audio and open its room.

        Args:
            scenario: The room's script.
            base_dir: Folder of the scenario file, searched first for audio.

        Raises:
            RoomExists: The key is taken.
            ScenarioError: Audio cannot be prepared.
        """
        key = (scenario.platform, scenario.meeting_id)
        if key in self._rooms:
            raise RoomExists(f"room {key[0].value}/{key[1]} exists")
        search = ([base_dir] if base_dir else []) + self._audio_search
        audio = await asyncio.to_thread(prepare_audio, scenario, search)
        if key in self._rooms:
            raise RoomExists(f"room {key[0].value}/{key[1]} exists")
        room = Room(scenario, audio, audio_search=search)
        self._rooms[key] = room
        await room.start()
        log.info("room created", extra={"platform": key[0].value, "meeting_id": key[1]})
        return room

    def find(self, platform: Platform, meeting_id: str) -> Room | None:
        """The room, or ``None``."""
        return self._rooms.get((platform, meeting_id))

    def get(self, platform: Platform, meeting_id: str) -> Room:
        """The room.

        Raises:
            RoomNotFound: There is none.
        """
        room = self.find(platform, meeting_id)
        if room is None:
            raise RoomNotFound(f"no room {platform.value}/{meeting_id}")
        return room

    def all(self) -> list[Room]:
        """Every room, oldest first."""
        return list(self._rooms.values())

    async def delete(self, platform: Platform, meeting_id: str) -> None:
        """End and forget a room.

        Raises:
            RoomNotFound: There is none.
        """
        room = self.get(platform, meeting_id)
        await room.end()
        await room.close()
        del self._rooms[(platform, meeting_id)]

    async def close(self) -> None:
        """Close every room (cancels their tasks)."""
        for room in list(self._rooms.values()):
            with contextlib.suppress(Exception):
                await room.close()
        self._rooms.clear()
