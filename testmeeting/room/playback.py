"""Scenario playback: the simulated participants and the room's clock.

Before the clock starts, :meth:`Playback.start` seats the simulated participants present from
the start. When it starts (at room creation or when the first browser participant is admitted,
as the scenario says), every scripted action — a simulated participant joining, speaking,
chatting, raising a hand, leaving; a removal; the end — becomes one task sleeping until its
scenario time (seconds after the clock started). The host API adds simulated participants and
makes them speak through the same class.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

from testmeeting.errors import InvalidState
from testmeeting.room.state import Participant, ParticipantState, RoomState
from testmeeting.room.streams import PreparedUtterance, RoomMedia, prepare_utterance
from testmeeting.room.tasks import RoomTasks
from testmeeting.scenario import Scenario, SimulatedParticipant, Utterance

log = logging.getLogger(__name__)


class Playback:
    """Plays one room's scenario; all methods run on the event loop.

    Args:
        scenario: The script.
        audio: Every scripted utterance, prepared:
            ``{(participant index, utterance index): PreparedUtterance}``.
        audio_search: Folders in which audio of ad-hoc utterances (:meth:`say`) is looked up.
        state: The room's participants.
        media: Where speech is played.
        tasks: Owner of the scripted actions.
        clock: UNIX epoch seconds.
    """

    def __init__(
        self,
        scenario: Scenario,
        audio: dict[tuple[int, int], PreparedUtterance],
        audio_search: list[Path],
        state: RoomState,
        media: RoomMedia,
        tasks: RoomTasks,
        clock: Callable[[], float],
    ) -> None:
        self.t0: float | None = None
        """UNIX epoch seconds at which the scenario clock started, or ``None``."""
        self._scenario = scenario
        self._audio = audio
        self._audio_search = audio_search
        self._state = state
        self._media = media
        self._tasks = tasks
        self._clock = clock
        self._simulated: dict[int, str] = {}  # scenario index → participant id

    async def start(self) -> None:
        """Seat the participants present from the start and, if so scripted, start the clock."""
        self._state.record("room_created")
        for index, sim in enumerate(self._scenario.participants):
            if sim.join_at <= 0:
                await self._join_simulated(index, sim)
        if self._scenario.clock == "room_created":
            self.start_clock()

    def start_clock(self) -> None:
        """Start the scenario clock and schedule every scripted action (no-op once running)."""
        if self.t0 is not None:
            return
        self.t0 = self._clock()
        self._state.record("clock_started")
        for index, sim in enumerate(self._scenario.participants):
            self._script_participant(index, sim)
        for removal in self._scenario.removals:
            self._at(removal.at, partial(self._scripted_removal, removal.name), "removal")
        if self._scenario.end_at is not None:
            self._at(self._scenario.end_at, self._state.end, "end")

    def _at(self, seconds: float, action: Callable[[], Awaitable[None]], name: str) -> None:
        """Run ``action`` at scenario time ``seconds``, unless the meeting ended by then."""
        assert self.t0 is not None  # noqa: S101 -- only called once the clock runs
        due = self.t0 + seconds

        async def later() -> None:
            await asyncio.sleep(max(0.0, due - self._clock()))
            if not self._state.ended:
                await action()

        self._tasks.spawn(later(), name)

    def _script_participant(self, index: int, sim: SimulatedParticipant) -> None:
        if sim.join_at > 0:
            self._at(sim.join_at, partial(self._join_simulated, index, sim), "join")
        if sim.leave_at is not None:
            self._at(sim.leave_at, partial(self._leave_simulated, index), "leave")
        for u_index, utterance in enumerate(sim.utterances):
            self._at(utterance.at, partial(self._speak, index, u_index), "speech")
        for line in sim.chat:
            self._at(line.at, partial(self._simulated_chat, index, line.text), "chat")
        for hand in sim.hands:
            self._at(hand.at, partial(self._simulated_hand, index, True), "hand")
            if hand.lower_at is not None:
                self._at(hand.lower_at, partial(self._simulated_hand, index, False), "hand")
        for share in sim.screens:
            self._at(share.at, partial(self._simulated_screen, index, True), "screen")
            if share.stop_at is not None:
                self._at(share.stop_at, partial(self._simulated_screen, index, False), "screen")

    # ---- scripted participants -------------------------------------------------------

    async def _join_simulated(self, index: int, sim: SimulatedParticipant) -> None:
        participant = self._state.new_participant(
            sim.name, simulated=True, state=ParticipantState.IN_MEETING
        )
        participant.mic_on, participant.camera_on = sim.mic_on, sim.camera_on
        participant.joined_at = self._clock()
        self._simulated[index] = participant.id
        self._media.bind_scripted(participant.id, index)
        self._state.record("joined", participant)
        await self._state.broadcast_participants()

    async def _leave_simulated(self, index: int) -> None:
        participant = self._present(index)
        if participant is not None:
            participant.state = ParticipantState.LEFT
            self._state.record("left", participant)
            await self._state.broadcast_participants()

    def _present(self, index: int) -> Participant | None:
        """Scripted participant ``index`` if they are in the meeting."""
        pid = self._simulated.get(index)
        participant = self._state.participants.get(pid) if pid else None
        if participant is None or participant.state is not ParticipantState.IN_MEETING:
            return None
        return participant

    async def _speak(self, index: int, u_index: int) -> None:
        participant = self._present(index)
        if participant is None:
            log.warning(
                "scripted speech skipped: speaker not in the meeting", extra={"slot": index}
            )
            return
        await self._media.play(participant.id, self._audio[(index, u_index)], slot=f"sim-{index}")

    async def _simulated_chat(self, index: int, text: str) -> None:
        participant = self._present(index)
        if participant is not None:
            await self._state.send_chat(text, sender_id=participant.id)

    async def _simulated_hand(self, index: int, raised: bool) -> None:
        participant = self._present(index)
        if participant is not None:
            await self._state.set_hand(participant.id, raised)

    async def _simulated_screen(self, index: int, on: bool) -> None:
        participant = self._present(index)
        if participant is not None:
            await self._state.set_device(participant.id, "screen", on)

    async def _scripted_removal(self, name: str | None) -> None:
        target = next(
            (
                p
                for p in self._state.participants.values()
                if p.state is ParticipantState.IN_MEETING
                and (p.name == name if name else not p.simulated)
            ),
            None,
        )
        if target is None:
            log.warning("scripted removal found nobody to remove")
            return
        await self._state.remove(target.id)

    # ---- ad-hoc participants (host API) ------------------------------------------------

    async def add_participant(
        self, name: str, mic_on: bool = True, camera_on: bool = False
    ) -> Participant:
        """A simulated participant joins now (not from the script).

        Pages are told the new audio slot before anyone can hear them speak.
        """
        participant = self._state.new_participant(
            name, simulated=True, state=ParticipantState.IN_MEETING
        )
        participant.mic_on, participant.camera_on = mic_on, camera_on
        participant.joined_at = self._clock()
        self._state.record("joined", participant)
        await self._media.add_slot(participant.id)
        await self._state.broadcast_participants()
        return participant

    async def say(self, participant_id: str, utterance: Utterance) -> PreparedUtterance:
        """A simulated participant speaks ``utterance`` now (its ``at`` is ignored).

        Raises:
            ParticipantNotFound: No such participant.
            InvalidState: They are not a simulated participant in the meeting.
            ScenarioError: The audio cannot be read or synthesised.
        """
        participant = self._state.in_state(participant_id, ParticipantState.IN_MEETING)
        if not participant.simulated:
            raise InvalidState(f"participant {participant_id} is a browser participant")
        prepared = await asyncio.to_thread(prepare_utterance, utterance, self._audio_search)
        await self._media.play(participant_id, prepared)
        return prepared
