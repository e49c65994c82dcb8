"""A secret agent setting for the launcher tests, and where it must never show up."""

from __future__ import annotations

import logging

SECRET = "sk-handed-over-3f9a1c7e5b"
"""The TTS key an operator declares (``MEETBOT_AGENT_TTS_API_KEY``)."""

HANDED = {
    "MEETBOT_AGENT_TTS_PROVIDER": "openai",
    "MEETBOT_AGENT_TTS_API_KEY": SECRET,
    "MEETBOT_AGENT_LOG_LEVEL": "DEBUG",
}
"""The control plane's ``fleet_agent_settings`` in these tests."""


def logged(records: list[logging.LogRecord]) -> str:
    """Every captured record with its extras, as text (what a log formatter could print)."""
    return "\n".join(f"{record.getMessage()} {record.__dict__!r}" for record in records)
