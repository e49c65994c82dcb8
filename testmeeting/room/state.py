"""The room as the host sees it: participants, the lobby, chat, hands, devices, the end.

:class:`RoomState` holds who is where and tells each page what concerns it (page messages
``joined``, ``lobby``, ``admitted``, ``denied``, ``no_answer``, ``removed``, ``ended``,
``participants``, ``chat``, ``chat_history``; see ``testmeeting.pagelink``). It knows nothing of
audio: whoever composes it learns of each participant entering the meeting through
``on_enter``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from testmeeting.errors import InvalidState, ParticipantNotFound
from testmeeting.room.tasks import RoomTasks
from testmeeting.room.timeline import Timeline
from testmeeting.scenario import Scenario


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


_PRESENT = (ParticipantState.IN_MEETING, ParticipantState.LOBBY)


class RoomState:
    """Participants, lobby, chat and the end of one meeting; all methods run on the event loop.

    Args:
        scenario: The room's script (``lobby`` and ``admission`` are read here).
        timeline: Where every change is recorded.
        tasks: Owner of the pending lobby decisions.
        clock: UNIX epoch seconds.
        on_enter: Awaited when a browser participant enters the meeting (joined without a
            lobby, or admitted), after their page was told ``admitted`` and before the others
            see the new participant list.
    """

    def __init__(
        self,
        scenario: Scenario,
        timeline: Timeline,
        tasks: RoomTasks,
        clock: Callable[[], float],
        on_enter: Callable[[Participant], Awaitable[None]],
    ) -> None:
        self.scenario = scenario
        self.participants: dict[str, Participant] = {}
        self.chat: list[ChatMessage] = []
        self.ended = False
        self._timeline = timeline
        self._tasks = tasks
        self._clock = clock
        self._on_enter = on_enter
        self._ids = itertools.count(1)
        self._chat_ids = itertools.count(1)
        self._links: dict[str, PageLink] = {}

    # ---- participants ------------------------------------------------------------------

    def new_participant(self, name: str, simulated: bool, state: ParticipantState) -> Participant:
        """Create a participant with the next id (``p1``, ``p2``, …); nobody is told yet."""
        participant = Participant(
            id=f"p{next(self._ids)}", name=name, simulated=simulated, state=state
        )
        self.participants[participant.id] = participant
        return participant

    def participant(self, participant_id: str) -> Participant:
        """The participant.

        Raises:
            ParticipantNotFound: No such participant.
        """
        participant = self.participants.get(participant_id)
        if participant is None:
            raise ParticipantNotFound(f"no participant {participant_id}")
        return participant

    def in_state(self, participant_id: str, state: ParticipantState) -> Participant:
        """The participant, who must be in ``state``.

        Raises:
            ParticipantNotFound: No such participant.
            InvalidState: They are somewhere else.
        """
        participant = self.participant(participant_id)
        if participant.state is not state:
            raise InvalidState(
                f"participant {participant_id} is {participant.state.value}, not {state.value}"
            )
        return participant

    def find_by_name(self, name: str) -> Participant:
        """The most recent participant with that display name.

        Raises:
            ParticipantNotFound: Nobody has that name.
        """
        for participant in reversed(list(self.participants.values())):
            if participant.name == name:
                return participant
        raise ParticipantNotFound(f"no participant named {name!r}")

    def record(self, kind: str, participant: Participant | None = None, **fields: Any) -> None:
        """Append a timeline event, naming ``participant`` if given."""
        if participant is not None:
            fields.setdefault("participant_id", participant.id)
            fields.setdefault("name", participant.name)
        self._timeline.record(kind, **fields)

    # ---- pages -------------------------------------------------------------------------

    def page_ids(self) -> list[str]:
        """Participants with a page attached (in any state)."""
        return list(self._links)

    def meeting_pages(self) -> Iterator[tuple[str, PageLink]]:
        """``(participant id, link)`` of each page whose participant is in the meeting.

        The pages are those attached when iteration starts; each one's state is checked as
        it is reached, so a sender awaiting between pages sees changes made meanwhile.
        """
        for pid, link in list(self._links.items()):
            if self.participants[pid].state is ParticipantState.IN_MEETING:
                yield pid, link

    async def send(self, participant_id: str, message: dict[str, Any]) -> None:
        """Send a JSON message to a participant's page, if they have one."""
        link = self._links.get(participant_id)
        if link is not None:
            await link.send_json(message)

    async def broadcast_participants(self) -> None:
        """Tell every page in the meeting who is in the meeting."""
        visible = [
            p.public() for p in self.participants.values() if p.state is ParticipantState.IN_MEETING
        ]
        for pid, _link in self.meeting_pages():
            await self.send(pid, {"type": "participants", "participants": visible})

    def detach(self, participant_id: str) -> None:
        """Forget a page link (its WebSocket closed)."""
        self._links.pop(participant_id, None)

    # ---- lobby and admission -----------------------------------------------------------

    async def guest_join(
        self, link: PageLink, name: str, mic_on: bool, camera_on: bool, audio_slots: list[str]
    ) -> Participant:
        """A page pressed its join button.

        Sends the page ``joined`` (its id and ``audio_slots``), then ``lobby`` or ``admitted``
        — or ``ended`` if the meeting is over. In the lobby, the scenario's admission
        decision is scheduled.
        """
        participant = self.new_participant(name, simulated=False, state=ParticipantState.LOBBY)
        participant.mic_on, participant.camera_on = mic_on, camera_on
        self._links[participant.id] = link
        await link.send_json(
            {"type": "joined", "participant_id": participant.id, "audio_slots": audio_slots}
        )
        if self.ended:
            await link.send_json({"type": "ended"})
            return participant
        if self.scenario.waits_in_lobby:
            self.record("lobby_entered", participant)
            await link.send_json({"type": "lobby"})
            self._schedule_admission(participant.id)
        else:
            await self._enter(participant)
        return participant

    def _schedule_admission(self, participant_id: str) -> None:
        admission = self.scenario.admission
        if admission.decision == "admit":
            self._tasks.spawn(
                self._decide_later(participant_id, admission.after_s, self.admit), "admit"
            )
        elif admission.decision == "deny":
            self._tasks.spawn(
                self._decide_later(participant_id, admission.after_s, self.deny), "deny"
            )
        elif admission.no_answer_after_s is not None:
            self._tasks.spawn(
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
        participant = self.in_state(participant_id, ParticipantState.LOBBY)
        await self._enter(participant, admitted=True)

    async def _enter(self, participant: Participant, admitted: bool = False) -> None:
        participant.state = ParticipantState.IN_MEETING
        participant.joined_at = self._clock()
        self.record("admitted" if admitted else "joined", participant)
        await self.send(participant.id, {"type": "admitted", "participant_id": participant.id})
        await self._on_enter(participant)
        await self.broadcast_participants()
        await self.send(
            participant.id, {"type": "chat_history", "messages": [m.public() for m in self.chat]}
        )

    async def deny(self, participant_id: str) -> None:
        """The host denies a participant waiting in the lobby.

        Raises:
            ParticipantNotFound: No such participant.
            InvalidState: They are not in the lobby.
        """
        participant = self.in_state(participant_id, ParticipantState.LOBBY)
        participant.state = ParticipantState.DENIED
        self.record("denied", participant)
        await self.send(participant_id, {"type": "denied"})

    async def _no_answer(self, participant_id: str) -> None:
        participant = self.in_state(participant_id, ParticipantState.LOBBY)
        participant.state = ParticipantState.NO_ANSWER
        self.record("no_answer", participant)
        await self.send(participant_id, {"type": "no_answer"})

    # ---- leaving and the end -----------------------------------------------------------

    async def remove(self, participant_id: str) -> None:
        """The host removes a participant from the meeting (or the lobby).

        Raises:
            ParticipantNotFound: No such participant.
            InvalidState: They are neither in the meeting nor in the lobby.
        """
        participant = self.participant(participant_id)
        if participant.state not in _PRESENT:
            raise InvalidState(f"participant {participant_id} is {participant.state.value}")
        participant.state = ParticipantState.REMOVED
        participant.hand_raised = False
        self.record("removed", participant)
        await self.send(participant_id, {"type": "removed"})
        await self.broadcast_participants()

    async def leave(self, participant_id: str) -> None:
        """A participant leaves. Idempotent.

        They pressed leave, their page went away, or the host API says a simulated one leaves.

        Raises:
            ParticipantNotFound: No such participant.
        """
        participant = self.participant(participant_id)
        if participant.state not in _PRESENT:
            return
        participant.state = ParticipantState.LEFT
        participant.hand_raised = False
        self.record("left", participant)
        await self.broadcast_participants()

    async def end(self) -> None:
        """The host ends the meeting for everyone; scripted actions still pending are dropped."""
        if self.ended:
            return
        self.ended = True
        self.record("meeting_ended")
        self._tasks.cancel_others()
        for participant in self.participants.values():
            if participant.state in _PRESENT:
                participant.state = ParticipantState.LEFT
                participant.hand_raised = False
                await self.send(participant.id, {"type": "ended"})

    # ---- hands, devices, chat ----------------------------------------------------------

    async def set_hand(self, participant_id: str, raised: bool) -> None:
        """Raise or lower a participant's hand.

        Raises:
            ParticipantNotFound: No such participant.
            InvalidState: They are not in the meeting.
        """
        participant = self.in_state(participant_id, ParticipantState.IN_MEETING)
        if participant.hand_raised == raised:
            return
        participant.hand_raised = raised
        self.record("hand_raised" if raised else "hand_lowered", participant)
        await self.broadcast_participants()

    async def set_device(self, participant_id: str, device: str, on: bool) -> None:
        """Record a participant's microphone/camera/screen switching on or off.

        Args:
            participant_id: Whose device.
            device: ``mic``, ``camera`` or ``screen``.
            on: Its new state.

        Raises:
            ParticipantNotFound: No such participant.
        """
        participant = self.participant(participant_id)
        attribute = {"mic": "mic_on", "camera": "camera_on", "screen": "screen_on"}[device]
        if getattr(participant, attribute) == on:
            return
        setattr(participant, attribute, on)
        self.record(device, participant, value=on)
        if participant.state is ParticipantState.IN_MEETING:
            await self.broadcast_participants()

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
            sender = self.in_state(sender_id, ParticipantState.IN_MEETING).name
        else:
            sender = sender_name or "Host"
        message = ChatMessage(f"msg-{next(self._chat_ids)}", sender_id, sender, text, self._clock())
        self.chat.append(message)
        self.record("chat", self.participants.get(sender_id or ""), text=text, name=sender)
        for pid, _link in self.meeting_pages():
            await self.send(pid, {"type": "chat", "message": message.public()})
        return message
