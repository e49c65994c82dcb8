"""Settings of the simulator process: one frozen object (``MEETBOT_TESTMEETING_*``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class TestMeetingSettings(BaseSettings):
    """Where the simulator listens and where it finds speech.

    Attributes:
        host: Listen address (loopback by default; the certificate covers 127.0.0.1).
        https_port: Port of the platform hosts (0 picks a free one).
        http_port: Port of the host API and the ``/p/<host>/…`` manual paths (0 picks one).
        speech_dir: Real-speech folder (``MEETBOT_SPEECH_DIR``) searched for scenario audio.
    """

    __test__ = False  # not a pytest test class despite the name
    model_config = SettingsConfigDict(
        env_prefix="MEETBOT_TESTMEETING_", frozen=True, extra="ignore"
    )

    host: str = "127.0.0.1"
    https_port: int = Field(default=8443, ge=0, le=65535)
    http_port: int = Field(default=8088, ge=0, le=65535)
    speech_dir: Path | None = Field(
        default=None, validation_alias=AliasChoices("MEETBOT_SPEECH_DIR", "speech_dir")
    )
