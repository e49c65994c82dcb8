"""A meeting room: its participants, the host's behaviour, the script and the ground truth.

A :class:`Room` is keyed by ``(platform, meeting_id)``. Browser participants reach it through
a :class:`PageLink` (the page's WebSocket, see ``testmeeting.pagelink``); simulated
participants follow the room's :class:`~testmeeting.scenario.Scenario`. Every change is
appended to the timeline (UNIX epoch seconds, ``time.time()`` clock, the same clock the
agent stamps audio with).

Modules, each depending only on those above it:

- ``timeline``: :class:`TimelineEvent` and the append-only :class:`Timeline`.
- ``tasks``: :class:`RoomTasks`, the tasks a room owns; :meth:`Room.close` cancels and awaits
  them all.
- ``state``: :class:`RoomState` — participants, lobby and admission, chat, hands, devices,
  the end (the host-facing model and the page messages about it).
- ``streams``: :class:`RoomMedia` — audio sources (:func:`prepare_audio`), audio slots
  (remote tracks), speech and microphone blocks out to the pages, and the microphone PCM,
  camera and screen frames browser participants (the bot) send in.
- ``playback``: :class:`Playback` — the scenario clock and the simulated participants'
  scripted joins, speech, chat, hands, leaves, removals and end.
- ``rooms``: :class:`Room` (the three parts composed; the host's operations) and
  :class:`Rooms` (a server's rooms).
"""

from testmeeting.room.playback import Playback
from testmeeting.room.rooms import Room, Rooms
from testmeeting.room.state import (
    ChatMessage,
    PageLink,
    Participant,
    ParticipantState,
    RoomState,
)
from testmeeting.room.streams import (
    FRAME_KINDS,
    MAX_FRAMES_KEPT,
    SPEECH_PART_BYTES,
    PreparedUtterance,
    ReceivedMedia,
    RoomMedia,
    prepare_audio,
    prepare_utterance,
    speech_message,
)
from testmeeting.room.tasks import RoomTasks
from testmeeting.room.timeline import Timeline, TimelineEvent

__all__ = [
    "FRAME_KINDS",
    "MAX_FRAMES_KEPT",
    "SPEECH_PART_BYTES",
    "ChatMessage",
    "PageLink",
    "Participant",
    "ParticipantState",
    "Playback",
    "PreparedUtterance",
    "ReceivedMedia",
    "Room",
    "RoomMedia",
    "RoomState",
    "RoomTasks",
    "Rooms",
    "Timeline",
    "TimelineEvent",
    "prepare_audio",
    "prepare_utterance",
    "speech_message",
]
