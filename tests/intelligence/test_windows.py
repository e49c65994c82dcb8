"""The window rules over stored segments, the workspace budget and the repeat check (pure)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from control_plane.intelligence.budget import RollingBudget, WorkspaceBudgets
from control_plane.intelligence.dedupe import is_repeat, normalise_text
from control_plane.intelligence.detection import WindowLine
from control_plane.intelligence.windows import StoredLine, Window, action_id, next_window

pytestmark = pytest.mark.unit


def stored(
    row: int, start: float, end: float, text: str = "words", *, done: bool = True
) -> StoredLine:
    line = WindowLine(f"s{row}", "Alice", None, start, end, text)
    return StoredLine(row, done, line)


def window(rows: list[StoredLine], *, final: bool = False, quiet: bool = False) -> Window | None:
    return next_window(rows, pause=4.0, max_speech=30.0, final=final, quiet=quiet)


def test_a_gap_as_long_as_the_pause_closes_the_window_before_it() -> None:
    found = window([stored(1, 0, 2), stored(2, 3, 5), stored(3, 9, 10)])
    assert found is not None
    assert ([line.segment_id for line in found.lines], found.last_row) == (["s1", "s2"], 2)
    assert found.closed_by == "pause"


def test_thirty_seconds_of_speech_close_it_with_the_segment_that_reaches_them() -> None:
    rows = [stored(i + 1, i * 10.5, i * 10.5 + 10) for i in range(4)]
    found = window(rows)
    assert found is not None
    assert (found.last_row, found.closed_by) == (3, "speech")


def test_an_open_window_waits_until_quiet_or_final() -> None:
    rows = [stored(1, 0, 2), stored(2, 3, 5)]
    assert window(rows) is None
    assert window([]) is None
    quiet = window(rows, quiet=True)
    final = window(rows, final=True)
    assert quiet is not None and final is not None
    assert (quiet.closed_by, final.closed_by, final.last_row) == ("quiet", "final", 2)


def test_an_unfinished_segment_holds_the_cursor_until_the_meeting_is_final() -> None:
    rows = [stored(1, 0, 2), stored(2, 3, 5, done=False), stored(3, 5.5, 7)]
    assert window(rows, quiet=True) is None
    final = window(rows, final=True)
    assert final is not None
    assert ([line.segment_id for line in final.lines], final.last_row) == (["s1", "s3"], 3)


def test_rows_without_text_move_the_cursor_without_a_call() -> None:
    found = window([stored(1, 0, 2, "  "), stored(2, 3, 4, "", done=False)])
    assert found == Window((), 1, "skip")


def test_lines_go_to_the_model_in_meeting_time_order() -> None:
    found = window([stored(1, 5, 6), stored(2, 2, 4)], final=True)
    assert found is not None
    assert [line.segment_id for line in found.lines] == ["s2", "s1"]


def test_a_window_ends_when_its_latest_speech_ended() -> None:
    at = datetime(2030, 1, 1, tzinfo=UTC)
    rows = [
        StoredLine(1, True, stored(1, 0, 2).line, at + timedelta(seconds=2)),
        StoredLine(2, True, stored(2, 1, 5).line, at + timedelta(seconds=5)),
        StoredLine(3, True, stored(3, 2, 3).line, None),
    ]
    found = window(rows, final=True)
    assert found is not None
    assert found.ended_at == at + timedelta(seconds=5)


def test_action_ids_are_stable_for_a_window_and_differ_between_windows() -> None:
    one = Window((stored(1, 0, 1).line, stored(2, 1, 2).line), 2, "final")
    other = Window((stored(3, 5, 6).line,), 3, "final")
    assert action_id(7, one, 0) == action_id(7, one, 0)
    assert len({action_id(7, one, 0), action_id(7, one, 1), action_id(7, other, 0)}) == 3
    assert action_id(8, one, 0) != action_id(7, one, 0)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_budget_limits_calls_and_tokens_in_a_rolling_minute() -> None:
    clock = Clock()
    budget = RollingBudget(calls=2, tokens=1000, clock=clock)
    assert budget.wait_seconds(400) == 0
    budget.spend(400)
    clock.now = 10.0
    entry = budget.spend(400)
    assert budget.wait_seconds(100) == pytest.approx(50.0)  # two calls: the first must expire
    RollingBudget.settle(entry, 100)
    clock.now = 61.0
    assert budget.wait_seconds(900) == 0  # the first expired; 100 + 900 fit
    budget.spend(900)
    assert budget.wait_seconds(100) == pytest.approx(9.0)  # the call of 10 s must expire
    assert budget.wait_seconds(200) == pytest.approx(60.0)  # 900 + 200 fit only alone


def test_an_oversized_call_waits_for_an_empty_budget_but_is_never_refused() -> None:
    clock = Clock()
    budget = RollingBudget(calls=5, tokens=100, clock=clock)
    budget.spend(50)
    assert budget.wait_seconds(500) == pytest.approx(60.0)
    clock.now = 60.0
    assert budget.wait_seconds(500) == 0


def test_each_workspace_has_its_own_budget() -> None:
    budgets = WorkspaceBudgets(1, 1000)
    first, second = uuid.uuid4(), uuid.uuid4()
    budgets.of(first).spend(10)
    assert budgets.of(first).wait_seconds(10) > 0
    assert budgets.of(second).wait_seconds(10) == 0
    assert budgets.of(first) is budgets.of(first)


def test_a_repeat_is_the_same_type_with_a_text_at_least_that_alike() -> None:
    seen = [("action_item", normalise_text("Bob will send the report by Friday."))]
    assert is_repeat("action_item", "bob will send the report by friday", seen, 0.8)
    assert not is_repeat("decision", "Bob will send the report by Friday", seen, 0.8)
    assert not is_repeat("action_item", "Carol books the venue", seen, 0.8)
    assert normalise_text("  Café, déjà-vu!  ") == "cafe deja vu"
