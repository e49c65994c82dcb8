"""testmeeting: a local meeting simulator with Google Meet, Zoom and Teams skins.

Public surface (see ``testmeeting/README.md`` for the skins, the scenario format and the host
API)::

    from testmeeting import TestMeetingServer, Scenario, parse_scenario, browser_args

    async with TestMeetingServer(scenario=scenario, port=0, speech_dir=speech) as server:
        server.https_port            # platform hosts (HTTPS, self-signed certificate)
        server.http_url              # host API base, "http://127.0.0.1:<http_port>"
        server.browser_args()        # ["--host-resolver-rules=MAP meet.google.com …:<p>, …",
                                     #  "--ignore-certificate-errors"]
        server.meeting_url("google_meet", "abc-defg-hij")   # "https://meet.google.com/abc-defg-hij"
        server.local_url("zoom", "81234567890")             # same page over plain HTTP
        room = server.room("google_meet", "abc-defg-hij")   # testmeeting.room.Room
        await room.admit(pid); await room.remove(pid); await room.end()
        room.timeline()              # [TimelineEvent(type, t, end, participant_id, name, text, …)]
        room.received_audio(pid)     # (epoch of first sample, 16 kHz mono int16 PCM)
        room.received_frames(pid, "camera")  # [(epoch, png bytes), …]

``browser_args(https_port)`` is the same flag list for a server running elsewhere (e.g. the
``meetbot test-meeting`` process).
"""

from testmeeting.platforms import Platform, browser_args
from testmeeting.room import Participant, ParticipantState, Room, TimelineEvent
from testmeeting.scenario import Scenario, load_scenario, parse_scenario
from testmeeting.server import TestMeetingServer

__all__ = [
    "Participant",
    "ParticipantState",
    "Platform",
    "Room",
    "Scenario",
    "TestMeetingServer",
    "TimelineEvent",
    "browser_args",
    "load_scenario",
    "parse_scenario",
]
