"""The rolling budget of calls and tokens, on a clock the test moves."""

from __future__ import annotations

import pytest

from agent.actions.budget import RollingBudget

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_calls_per_period() -> None:
    clock = Clock()
    budget = RollingBudget(calls=2, tokens=10_000, period=60, clock=clock)
    assert budget.wait_seconds(100) == 0
    budget.spend(100)
    clock.now += 10
    budget.spend(100)
    assert budget.wait_seconds(100) == pytest.approx(50)
    clock.now += 50
    assert budget.wait_seconds(100) == 0


def test_tokens_per_period_with_server_counts() -> None:
    clock = Clock()
    budget = RollingBudget(calls=10, tokens=1000, period=60, clock=clock)
    budget.spend(900)  # estimate
    budget.adjust_last(400)  # the server counted fewer
    clock.now += 5
    budget.spend(500)
    assert budget.wait_seconds(200) == pytest.approx(55)
    assert budget.wait_seconds(100) == 0


def test_oversized_call_runs_alone() -> None:
    clock = Clock()
    budget = RollingBudget(calls=10, tokens=1000, period=60, clock=clock)
    assert budget.wait_seconds(5000) == 0
    budget.spend(5000)
    clock.now += 1
    assert budget.wait_seconds(5000) == pytest.approx(59)
