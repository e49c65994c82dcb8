"""Errors of the meeting simulator.

::

    TestMeetingError                 base; carries an HTTP status and a snake_case code
    ├── ScenarioError                a scenario file or body is invalid (400)
    ├── RoomNotFound                 no room with that (platform, meeting id) (404)
    ├── RoomExists                   a room with that key already exists (409)
    ├── ParticipantNotFound          no such participant in the room (404)
    ├── InvalidState                 the action does not fit the participant's state (409)
    └── MediaNotFound                nothing received of that kind from that participant (404)

The host API's error middleware turns each into RFC 9457 problem details
(``{type, title, status, detail, code}``), the shape of the product API's errors.
"""

from __future__ import annotations


class TestMeetingError(Exception):
    """Base of every simulator error.

    Attributes:
        status: HTTP status the host API answers with.
        code: Machine-readable snake_case code.
    """

    __test__ = False  # not a pytest test class despite the name
    status = 400
    code = "bad_request"


class ScenarioError(TestMeetingError):
    """A scenario is malformed or names a file that cannot be read."""

    code = "invalid_scenario"


class RoomNotFound(TestMeetingError):
    """No room is keyed by the given platform and meeting id."""

    status = 404
    code = "room_not_found"


class RoomExists(TestMeetingError):
    """A room with the same platform and meeting id already exists."""

    status = 409
    code = "room_exists"


class ParticipantNotFound(TestMeetingError):
    """The room has no participant with the given id."""

    status = 404
    code = "participant_not_found"


class InvalidState(TestMeetingError):
    """The action does not fit the participant's or the room's current state."""

    status = 409
    code = "invalid_state"


class MediaNotFound(TestMeetingError):
    """Nothing of the requested kind was received from the participant."""

    status = 404
    code = "media_not_found"
