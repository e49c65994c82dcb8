"""The table from screens to exits (agent/meeting/watchdog.py), before and after admission."""

from __future__ import annotations

import pytest

from agent.contracts.status import BotStatus, StatusReason
from agent.meeting.watchdog import screen_exit
from agent.platforms.base import TERMINAL_STATES, MeetingState

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("state", "admitted", "status", "reason"),
    [
        (MeetingState.NOT_FOUND, False, BotStatus.FAILED, StatusReason.MEETING_NOT_FOUND),
        (MeetingState.LOGIN_REQUIRED, False, BotStatus.FAILED, StatusReason.LOGIN_REQUIRED),
        (
            MeetingState.CANT_JOIN,
            False,
            BotStatus.FAILED,
            StatusReason.JOIN_REFUSED_BY_PLATFORM,
        ),
        (MeetingState.DENIED, False, BotStatus.FAILED, StatusReason.ADMISSION_DENIED),
        # The platforms' 2026 bot walls, before admission and after (issue 33).
        (MeetingState.RTMS_REQUIRED, False, BotStatus.FAILED, StatusReason.ZOOM_REQUIRES_RTMS),
        (MeetingState.RTMS_REQUIRED, True, BotStatus.COMPLETED, StatusReason.ZOOM_REQUIRES_RTMS),
        (
            MeetingState.BOTS_BLOCKED,
            False,
            BotStatus.FAILED,
            StatusReason.BOTS_BLOCKED_BY_POLICY,
        ),
        (MeetingState.ENDED, True, BotStatus.COMPLETED, StatusReason.MEETING_ENDED),
        (MeetingState.REMOVED, True, BotStatus.COMPLETED, StatusReason.REMOVED_BY_HOST),
    ],
)
def test_screens_map_to_exits(
    state: MeetingState, admitted: bool, status: BotStatus, reason: StatusReason
) -> None:
    exit_ = screen_exit(state, admitted)
    assert exit_ is not None
    assert (exit_.status, exit_.reason) == (status, reason)


def test_every_terminal_screen_ends_the_bot_and_no_other_does() -> None:
    for state in MeetingState:
        for admitted in (False, True):
            ended = screen_exit(state, admitted) is not None
            # NO_ANSWER only matters in the lobby.
            expected = state in TERMINAL_STATES and not (
                admitted and state is MeetingState.NO_ANSWER
            )
            assert ended is expected, (state, admitted)
