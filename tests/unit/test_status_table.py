"""The status table of docs/architecture.md §3 as the contracts encode it."""

from __future__ import annotations

import pytest

from agent.contracts.status import FINAL_STATUSES, BotStatus, can_transition

pytestmark = pytest.mark.unit


def test_final_statuses_are_exactly_completed_failed_cancelled() -> None:
    assert {BotStatus.COMPLETED, BotStatus.FAILED, BotStatus.CANCELLED} == FINAL_STATUSES


@pytest.mark.parametrize(
    ("current", "target", "legal"),
    [
        ("scheduled", "requested", True),
        ("scheduled", "cancelled", True),
        ("scheduled", "active", False),
        ("requested", "joining", True),
        ("joining", "awaiting_admission", True),
        ("awaiting_admission", "active", True),
        ("active", "awaiting_admission", False),
        ("active", "completed", False),
        ("stopping", "completed", True),
        ("completed", "failed", False),
        ("cancelled", "requested", False),
    ],
)
def test_moves(current: str, target: str, legal: bool) -> None:
    assert can_transition(BotStatus(current), BotStatus(target)) is legal
