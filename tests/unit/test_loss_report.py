"""Losses are reported while they happen, not only at the end of the meeting."""

from __future__ import annotations

import logging

import pytest

from agent.capture.pcm import AudioCapture
from agent.process.logs import LossReport

pytestmark = pytest.mark.unit


def test_the_first_loss_warns_at_once_and_later_ones_at_most_every_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    report = LossReport(logging.getLogger("test.loss"), "lost things", every_s=3600.0)
    with caplog.at_level(logging.WARNING, logger="test.loss"):
        report.lost()
        report.lost(5)
    assert [(r.getMessage(), getattr(r, "dropped", None)) for r in caplog.records] == [
        ("lost things", 1)
    ]
    assert report.total == 6
    eager = LossReport(logging.getLogger("test.loss"), "lost things", every_s=0.0)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="test.loss"):
        eager.lost()
        eager.lost(2)
    assert [getattr(r, "dropped", None) for r in caplog.records] == [1, 3]


def test_a_capture_nobody_reads_warns_when_it_starts_dropping(
    caplog: pytest.LogCaptureFixture,
) -> None:
    capture = AudioCapture(queue_seconds=0.2, queue_tracks=1)  # two blocks
    with caplog.at_level(logging.WARNING, logger="agent.capture.pcm"):
        for n in range(5):
            capture.on_pcm("t", float(n * 100), "", 1600)
    assert capture.stats.dropped == 3
    warned = [r for r in caplog.records if "dropped" in r.getMessage()]
    assert len(warned) == 1 and getattr(warned[0], "dropped", None) == 1
