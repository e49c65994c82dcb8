"""Options a bot could not serve are refused at the edge, once: 422 naming the field (issue 35).

Through the real app (SQLite and PostgreSQL): ``language`` against the codes the bundled models
transcribe, whether or not the bot transcribes; the capture combinations of
``agent.contracts.capture_options`` on creation and PATCH (a PATCH that turns a video recording
off is still accepted); ``default_avatar_url`` under the media URL rules; no ``voice`` beside
an ``audio_url``. The task/language
combinations an English-only model cannot serve go through the same edge check with such a
model configured.
"""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from agent.contracts.bot_config import BotSettings, Task, TranscriptionTier
from agent.contracts.whisper_models import WHISPER_LANGUAGES
from control_plane.bots.launch_checks import check_bot_options
from control_plane.errors import Validation
from control_plane.settings import Settings
from tests.api.test_bots import MEET, launch
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]

PNG_1X1 = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cf000000030101001805d8a70000000049454e44ae426082"
    )
).decode()


async def _post(client: Client, who: Caller, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = await client.post("/api/v1/bots", json={**MEET, **body}, headers=who.headers)
    result: dict[str, Any] = await response.json()
    return response.status, result


def _refused(status: int, problem: dict[str, Any], code: str, field: str) -> None:
    assert status == 422, problem
    assert problem["code"] == code, problem
    assert problem["errors"][0]["loc"] == ["body", field], problem


async def test_language_must_be_a_code_the_models_transcribe(client: Client, owner: Caller) -> None:
    for language in ("xx", "english", "EN", "yue", "en-US"):
        for transcribe in (True, False):  # a code is checked even when nothing transcribes
            status, problem = await _post(
                client, owner, {"language": language, "transcribe_enabled": transcribe}
            )
            _refused(status, problem, "language_not_supported", "language")
            assert "docs/api.md 2.3" in problem["detail"], problem
            assert "/api/v1/openapi.json" in problem["detail"], problem
    for language in ("en", "de", "haw", "jw"):
        status, body = await _post(client, owner, {"language": language})
        assert status == 201, body
        assert body["settings"]["language"] == language
    # The document lists the same codes the check accepts.
    document = await (await client.get("/api/v1/openapi.json")).json()
    schema = document["components"]["schemas"]["BotCreate"]["properties"]["language"]
    branch = next(option for option in schema["anyOf"] if option.get("type") == "string")
    assert branch["enum"] == list(WHISPER_LANGUAGES)


async def test_a_patch_checks_the_language_it_sets(client: Client, owner: Caller) -> None:
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    bot = await launch(client, owner, **MEET, scheduled_at=later)
    url = f"/api/v1/bots/{bot['bot_id']}"
    response = await client.patch(url, json={"language": "klingon"}, headers=owner.headers)
    _refused(response.status, await response.json(), "language_not_supported", "language")
    response = await client.patch(url, json={"language": "fr"}, headers=owner.headers)
    assert response.status == 200, await response.text()


def test_an_english_only_model_refuses_what_it_cannot_serve(tmp_path: Any) -> None:
    # An operator who pins the deferred pass to tiny.en: translation and other languages on the
    # deferred tier would fail in the agent, so the edge refuses them.
    settings = Settings(data_dir=tmp_path, deferred_transcription_model="tiny.en")
    deferred = TranscriptionTier.DEFERRED
    cases = [
        (BotSettings(transcription_tier=deferred, task=Task.TRANSLATE), "task_not_supported"),
        (BotSettings(transcription_tier=deferred, language="de"), "language_not_supported"),
    ]
    for bot, code in cases:
        with pytest.raises(Validation) as caught:
            check_bot_options(settings, bot, {"language", "task", "transcription_tier"})
        problem = caught.value.problem()
        assert (problem.status, problem.code) == (422, code)
        field = "task" if code == "task_not_supported" else "language"
        assert problem.errors is not None and problem.errors[0].loc == ["body", field]
    check_bot_options(
        settings, BotSettings(transcription_tier=deferred, language="en"), {"language"}
    )
    # Without transcription no model is loaded: only the code itself is checked.
    off = BotSettings(transcription_tier=deferred, language="de", transcribe_enabled=False)
    check_bot_options(settings, off, {"language"})


async def test_capture_combinations_the_bot_cannot_serve(client: Client, owner: Caller) -> None:
    refused: list[tuple[dict[str, Any], str]] = [
        ({"capture_modes": ["video"], "recording_enabled": True}, "capture_needs_audio"),
        (
            {"capture_modes": ["audio", "video"], "recording_enabled": False},
            "video_needs_recording",
        ),
        ({"capture_modes": ["video", "audio"]}, "video_needs_recording"),  # workspace: off
    ]
    for body, code in refused:
        status, problem = await _post(client, owner, body)
        _refused(status, problem, code, "capture_modes")
    status, problem = await _post(
        client,
        owner,
        {"capture_modes": ["audio", "video"], "recording_enabled": True, "recording_format": "mp3"},
    )
    _refused(status, problem, "format_has_no_video", "recording_format")
    for body in (
        {"capture_modes": ["audio", "video"], "recording_enabled": True},
        {
            "capture_modes": ["audio", "video"],
            "recording_enabled": True,
            "recording_format": "webm",
        },
        {"recording_enabled": True, "recording_format": "mp3"},
        {"capture_modes": ["audio"]},
    ):
        status, created = await _post(client, owner, body)
        assert status == 201, (body, created)


async def test_a_patch_is_held_to_the_capture_rules_it_touches(
    client: Client, owner: Caller
) -> None:
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    video = {"capture_modes": ["audio", "video"], "recording_enabled": True}
    bot = await launch(client, owner, **MEET, **video, scheduled_at=later)
    url = f"/api/v1/bots/{bot['bot_id']}"
    response = await client.patch(url, json={"recording_format": "mp3"}, headers=owner.headers)
    _refused(response.status, await response.json(), "format_has_no_video", "recording_format")
    # Turning the recording off is always allowed (it stops capture); the modes stay stored.
    response = await client.patch(url, json={"recording_enabled": False}, headers=owner.headers)
    assert response.status == 200, await response.text()
    response = await client.patch(url, json={"capture_modes": ["video"]}, headers=owner.headers)
    _refused(response.status, await response.json(), "capture_needs_audio", "capture_modes")


async def test_default_avatar_url_follows_the_media_url_rules(
    client: Client, owner: Caller
) -> None:
    for url in (
        "http://127.0.0.1/logo.png",  # plain http, loopback
        "https://10.1.2.3/logo.png",
        "https://[::ffff:192.168.0.1]/logo.png",
        "https://user:pw@93.184.215.14/logo.png",
    ):
        status, problem = await _post(client, owner, {"default_avatar_url": url})
        _refused(status, problem, "url_not_allowed", "default_avatar_url")
    for url in ("ftp://93.184.215.14/logo.png", "file:///etc/passwd", "logo.png", "", "https://"):
        status, problem = await _post(client, owner, {"default_avatar_url": url})
        _refused(status, problem, "validation_error", "default_avatar_url")
    for url in ("https://93.184.215.14/logo.png", f"data:image/png;base64,{PNG_1X1}"):
        status, body = await _post(client, owner, {"default_avatar_url": url})
        assert status == 201, body
        assert body["settings"]["default_avatar_url"] == url


async def test_a_voice_beside_an_audio_file_is_refused(client: Client, owner: Caller) -> None:
    # A file plays as it is: a voice with it would be accepted and ignored. The body is
    # checked before the bot is looked up, so any bot id shows it.
    url = f"/api/v1/bots/{uuid.uuid4()}/speak"
    body = {"audio_url": "https://93.184.215.14/a.wav", "voice": "joe"}
    response = await client.post(url, json=body, headers=owner.headers)
    assert response.status == 422
    problem = await response.json()
    assert problem["code"] == "validation_error"
    assert "voice applies to text only" in problem["errors"][0]["msg"]
    document = await (await client.get("/api/v1/openapi.json")).json()
    branches = document["components"]["schemas"]["SpeakRequest"]["oneOf"]
    audio = next(branch for branch in branches if branch["required"] == ["audio_url"])
    assert audio["properties"]["voice"] == {"type": "null"}
