"""Request and response models of a bot's live routes (docs/api.md Part 1, 2.5 and 2.7)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent.contracts.link import MAX_CHAT_CHARS, MAX_URL_CHARS
from control_plane.timestamps import UtcDateTime

MEDIA_URL_PATTERN = r"^(https?://[^/?#\u0000]+|data:image/)[^\u0000]*$"
"""An image URL the bot fetches: ``http(s)://`` with a host, or ``data:image/``; no NUL (the
document states both rules the server checks, docs/api.md 2.1)."""


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class _In(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Subscription(_Out):
    """Where and how to open the bot's event stream (docs/api.md 2.7).

    Open ``url`` as an SSE stream with ``Authorization: Bearer <token>``; the token is an EdDSA
    JWT (``sub`` = bot id, ``aud`` = ``bot-stream``) that stops working at ``expires_at``.
    """

    url: str
    token: str
    expires_at: UtcDateTime


class Participants(_Out):
    """The bot's current participant names (empty before it joined)."""

    bot_id: uuid.UUID
    participants: list[str]


class Screenshot(_Out):
    """A PNG of the bot's current view; ``url`` is presigned until ``expires_at`` (1 hour).

    ``width``/``height`` are pixels; ``captured_at`` is when the agent took it.
    """

    url: str
    expires_at: UtcDateTime
    captured_at: UtcDateTime
    width: int
    height: int


class CommandAccepted(_Out):
    """A live command was carried out by the bot's agent."""

    bot_id: uuid.UUID
    command: str


class AvatarSet(_In):
    """Camera image to show: a URL the bot's browser can load (``http(s)://`` or ``data:``)."""

    image_url: str = Field(min_length=1, max_length=MAX_URL_CHARS, pattern=MEDIA_URL_PATTERN)


class ChatSend(_In):
    """A chat message for the meeting, sent as the bot (1 to 4096 characters)."""

    text: str = Field(min_length=1, max_length=MAX_CHAT_CHARS)


class ChatMessageOut(_Out):
    """One chat message seen in the meeting; ``from_bot`` marks the bot's own."""

    id: str
    sender: str
    text: str
    timestamp: UtcDateTime
    from_bot: bool


class ChatMessages(_Out):
    """Chat messages of the meeting, oldest first."""

    messages: list[ChatMessageOut]


def _exactly_one(given: str, others: tuple[str, ...], title: str) -> dict[str, Any]:
    """A ``oneOf`` branch: ``given`` is a string, each of ``others`` absent or null."""
    properties: dict[str, Any] = {given: {"type": "string"}}
    properties.update({other: {"type": "null"} for other in others})
    return {"title": title, "required": [given], "properties": properties}


class SpeakRequest(_In):
    """Speech for the bot: ``text`` (with an optional ``voice``) or an ``audio_url``.

    ``interrupt`` true stops what the bot is saying (and drops its queue) first; false (the
    default) queues this speech after it.
    """

    # The schema states the validator's rules (issue 18): exactly one of text and audio_url;
    # voice only with text (a file plays as it is, issue 35: no option accepted and ignored).
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                _exactly_one("text", ("audio_url",), "Text to speak"),
                _exactly_one("audio_url", ("text", "voice"), "Audio to play"),
            ]
        }
    )

    text: str | None = Field(default=None, min_length=1, max_length=MAX_CHAT_CHARS)
    voice: str | None = Field(default=None, max_length=100)
    audio_url: str | None = Field(default=None, max_length=MAX_URL_CHARS)
    interrupt: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> SpeakRequest:
        if (self.text is None) == (self.audio_url is None):
            raise ValueError("give exactly one of text or audio_url")
        if self.audio_url is not None and self.voice is not None:
            raise ValueError("voice applies to text only: an audio_url plays as it is")
        return self


class SpeechAccepted(_Out):
    """202 to a speak request: the bot queued the speech ``speech_id``.

    Its ``speak_started`` and ``speak_finished`` stream events carry the same ``speech_id``;
    ``ahead`` counts the speeches the bot says before it.
    """

    bot_id: uuid.UUID
    command: str
    speech_id: str
    ahead: int


_SCREEN_SOURCES = ("url", "image_url", "video_url")


class ScreenRequest(_In):
    """What to share: a page ``url``, an ``image_url`` or a ``video_url`` (exactly one)."""

    # The schema states the validator's rule (issue 18): exactly one of the three.
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                _exactly_one(name, tuple(o for o in _SCREEN_SOURCES if o != name), title)
                for name, title in zip(
                    _SCREEN_SOURCES, ("A page", "An image", "A video"), strict=True
                )
            ]
        }
    )

    url: str | None = Field(default=None, min_length=1, max_length=MAX_URL_CHARS)
    image_url: str | None = Field(default=None, min_length=1, max_length=MAX_URL_CHARS)
    video_url: str | None = Field(default=None, min_length=1, max_length=MAX_URL_CHARS)

    @model_validator(mode="after")
    def _one_source(self) -> ScreenRequest:
        sources = (self.url, self.image_url, self.video_url)
        given = [value for value in sources if value is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of url, image_url or video_url")
        return self
