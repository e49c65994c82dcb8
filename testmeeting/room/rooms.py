"""One meeting (:class:`Room`, composing state, media and playback) and a server's rooms."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testmeeting.errors import RoomExists, RoomNotFound
from testmeeting.platforms import Platform
from testmeeting.room.playback import Playback
from testmeeting.room.state import ChatMessage, PageLink, Participant, RoomState
from testmeeting.room.streams import PreparedUtterance, RoomMedia, prepare_audio
from testmeeting.room.tasks import RoomTasks
from testmeeting.room.timeline import Timeline, TimelineEvent
from testmeeting.scenario import Scenario, Utterance

log = logging.getLogger(__name__)


class Room:
    """One meeting. Create through :class:`Rooms`; all methods run on the event loop.

    The parts, each usable on its own: :attr:`state` (participants, lobby, chat, hands, the
    end), :attr:`media` (audio slots, speech out, uploads in) and :attr:`playback` (the
    scenario clock and the simulated participants). The methods below are the host's
    operations and the page protocol's entry points, each handed to the part that owns it.

    Args:
        scenario: The room's script.
        audio: Its utterances, prepared (see :func:`~testmeeting.room.streams.prepare_audio`).
        clock: UNIX epoch seconds; stamps the timeline.
        audio_search: Folders in which audio of ad-hoc utterances is looked up.
    """

    def __init__(
        self,
        scenario: Scenario,
        audio: dict[tuple[int, int], PreparedUtterance],
        clock: Callable[[], float] = time.time,
        audio_search: list[Path] | None = None,
    ) -> None:
        self.scenario = scenario
        self.created_at = clock()
        self._timeline = Timeline(clock)
        self._tasks = RoomTasks()
        self.state = RoomState(scenario, self._timeline, self._tasks, clock, self._entered)
        self.media = RoomMedia(self.state, len(scenario.participants), clock)
        self.playback = Playback(
            scenario, audio, list(audio_search or []), self.state, self.media, self._tasks, clock
        )

    async def _entered(self, participant: Participant) -> None:
        # Other pages hear a browser participant's microphone on a track of its own (Meet).
        await self.media.add_slot(participant.id)
        if self.scenario.clock == "first_admitted":
            self.playback.start_clock()

    @property
    def key(self) -> tuple[Platform, str]:
        """``(platform, meeting_id)``."""
        return self.scenario.platform, self.scenario.meeting_id

    @property
    def participants(self) -> dict[str, Participant]:
        """Every participant by id, in order of arrival."""
        return self.state.participants

    @property
    def chat(self) -> list[ChatMessage]:
        """Chat messages, oldest first."""
        return self.state.chat

    @property
    def ended(self) -> bool:
        """The meeting was ended."""
        return self.state.ended

    @property
    def t0(self) -> float | None:
        """UNIX epoch seconds at which the scenario clock started, or ``None``."""
        return self.playback.t0

    # ---- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        """Seat the participants present from the start and, if so scripted, start the clock."""
        await self.playback.start()

    async def close(self) -> None:
        """Cancel and await every task the room owns."""
        await self._tasks.close()

    # ---- host and page operations --------------------------------------------------------

    async def guest_join(
        self, link: PageLink, name: str, mic_on: bool, camera_on: bool
    ) -> Participant:
        """A page pressed its join button (see :meth:`RoomState.guest_join`)."""
        return await self.state.guest_join(
            link, name, mic_on, camera_on, self.media.audio_slot_ids()
        )

    async def admit(self, participant_id: str) -> None:
        """See :meth:`RoomState.admit`."""
        await self.state.admit(participant_id)

    async def deny(self, participant_id: str) -> None:
        """See :meth:`RoomState.deny`."""
        await self.state.deny(participant_id)

    async def remove(self, participant_id: str) -> None:
        """See :meth:`RoomState.remove`."""
        await self.state.remove(participant_id)

    async def leave(self, participant_id: str) -> None:
        """See :meth:`RoomState.leave`."""
        await self.state.leave(participant_id)

    def detach(self, participant_id: str) -> None:
        """See :meth:`RoomState.detach`."""
        self.state.detach(participant_id)

    async def end(self) -> None:
        """See :meth:`RoomState.end`."""
        await self.state.end()

    async def set_hand(self, participant_id: str, raised: bool) -> None:
        """See :meth:`RoomState.set_hand`."""
        await self.state.set_hand(participant_id, raised)

    async def set_device(self, participant_id: str, device: str, on: bool) -> None:
        """See :meth:`RoomState.set_device`."""
        await self.state.set_device(participant_id, device, on)

    async def send_chat(
        self, text: str, sender_id: str | None = None, sender_name: str | None = None
    ) -> ChatMessage:
        """See :meth:`RoomState.send_chat`."""
        return await self.state.send_chat(text, sender_id, sender_name)

    async def add_participant(
        self, name: str, mic_on: bool = True, camera_on: bool = False
    ) -> Participant:
        """See :meth:`Playback.add_participant`."""
        return await self.playback.add_participant(name, mic_on, camera_on)

    async def say(self, participant_id: str, utterance: Utterance) -> PreparedUtterance:
        """See :meth:`Playback.say`."""
        return await self.playback.say(participant_id, utterance)

    async def play(
        self, participant_id: str, prepared: PreparedUtterance, slot: str | None = None
    ) -> None:
        """See :meth:`RoomMedia.play`."""
        await self.media.play(participant_id, prepared, slot)

    def audio_slot_ids(self, for_participant: str | None = None) -> list[str]:
        """See :meth:`RoomMedia.audio_slot_ids`."""
        return self.media.audio_slot_ids(for_participant)

    def receive_audio(self, participant_id: str, t: float, pcm: bytes) -> None:
        """See :meth:`RoomMedia.receive_audio`."""
        self.media.receive_audio(participant_id, t, pcm)

    async def relay_audio(self, participant_id: str, pcm: bytes) -> None:
        """See :meth:`RoomMedia.relay_audio`."""
        await self.media.relay_audio(participant_id, pcm)

    def receive_frame(self, participant_id: str, kind: str, t: float, png: bytes) -> None:
        """See :meth:`RoomMedia.receive_frame`."""
        self.media.receive_frame(participant_id, kind, t, png)

    def receive_video_rate(
        self, participant_id: str, kind: str, frames: int, seconds: float
    ) -> None:
        """See :meth:`RoomMedia.receive_video_rate`."""
        self.media.receive_video_rate(participant_id, kind, frames, seconds)

    def received_video_rate(self, participant_id: str, kind: str) -> list[tuple[float, float]]:
        """See :meth:`RoomMedia.received_video_rate`."""
        return self.media.received_video_rate(participant_id, kind)

    def received_audio(self, participant_id: str) -> tuple[float, bytes]:
        """See :meth:`RoomMedia.received_audio`."""
        return self.media.received_audio(participant_id)

    def received_frames(self, participant_id: str, kind: str) -> list[tuple[float, bytes]]:
        """See :meth:`RoomMedia.received_frames`."""
        return self.media.received_frames(participant_id, kind)

    # ---- queries --------------------------------------------------------------------------

    def note_screen(self, screen: str) -> None:
        """Record that a page of this room shows ``screen`` (timeline ``page_screen``)."""
        self._timeline.record("page_screen", text=screen)

    def timeline(self) -> list[TimelineEvent]:
        """Everything that happened so far, in order."""
        return self._timeline.events()

    def find_by_name(self, name: str) -> Participant:
        """See :meth:`RoomState.find_by_name`."""
        return self.state.find_by_name(name)

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
