"""A speaker's detected language stays put once detection is sure."""

from __future__ import annotations

import pytest

from agent.transcribe.languages import LanguageMemory

pytestmark = pytest.mark.unit


def test_confident_detection_locks_the_speaker() -> None:
    memory = LanguageMemory(lock_probability=0.8)
    assert memory.language_for("Ada") is None
    memory.observe("Ada", "de", 0.95)
    memory.observe("Ada", "nl", 0.99)  # later detections no longer matter
    assert memory.language_for("Ada") == "de"
    assert memory.language_for("Bob") is None


def test_unsure_detections_lock_by_majority_after_three() -> None:
    memory = LanguageMemory(lock_probability=0.8)
    memory.observe("Bob", "es", 0.5)
    memory.observe("Bob", "pt", 0.6)
    assert memory.language_for("Bob") is None
    memory.observe("Bob", "es", 0.55)
    assert memory.language_for("Bob") == "es"


def test_the_meetings_language_is_known_once_two_speakers_agree() -> None:
    memory = LanguageMemory(lock_probability=0.8)
    memory.observe("Ada", "en", 0.95)
    assert memory.prior() is None
    memory.observe("Bob", "en", 0.9)
    assert memory.prior() == "en"
    memory.observe("Lucía", "es", 0.97)
    assert memory.prior() is None
