"""Which model serves which language/task, decided without loading whisper."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent.contracts.bot_config import Task
from agent.contracts.whisper_models import (
    UnsupportedTranscriptionOptions,
    check_bot_transcription,
    check_model_supports,
    is_multilingual,
    realtime_models_for,
)
from tests.plugins.paths import REPO_ROOT

pytestmark = pytest.mark.unit


def test_registry_models_know_their_languages() -> None:
    assert is_multilingual("base")
    assert not is_multilingual("tiny.en")


@pytest.mark.parametrize(
    ("language", "task", "code"),
    [
        ("es", Task.TRANSCRIBE, "language_not_supported"),
        ("de", "transcribe", "language_not_supported"),
        (None, Task.TRANSLATE, "task_not_supported"),
        ("en", "translate", "task_not_supported"),
    ],
)
def test_english_only_model_refuses(language: str | None, task: Task | str, code: str) -> None:
    with pytest.raises(UnsupportedTranscriptionOptions) as caught:
        check_model_supports("tiny.en", language, task)
    assert caught.value.code == code
    assert "English-only" in str(caught.value)


@pytest.mark.parametrize("language", [None, "en", "EN"])
def test_english_only_model_accepts_english(language: str | None) -> None:
    check_model_supports("tiny.en", language, Task.TRANSCRIBE)


@pytest.mark.parametrize(("language", "task"), [("es", "translate"), (None, "transcribe")])
def test_multilingual_model_accepts_everything(language: str | None, task: str) -> None:
    check_model_supports("base", language, task)


def test_unknown_model_is_refused() -> None:
    with pytest.raises(UnsupportedTranscriptionOptions) as caught:
        check_model_supports("large-v9", None, "transcribe")
    assert caught.value.code == "model_not_found"


def test_local_directory_is_judged_by_its_vocabulary(tmp_path: Path) -> None:
    english = tmp_path / "en"
    english.mkdir()
    (english / "vocabulary.txt").write_text("\n".join(f"t{i}" for i in range(51_864)))
    multi = tmp_path / "multi"
    multi.mkdir()
    (multi / "vocabulary.json").write_text("[" + ",".join(f'"t{i}"' for i in range(51_865)) + "]")
    assert not is_multilingual(str(english))
    assert is_multilingual(str(multi))
    with pytest.raises(UnsupportedTranscriptionOptions):
        check_model_supports(str(english), "fr", "transcribe")


@pytest.mark.parametrize(
    ("language", "task", "models"),
    [
        ("en", "transcribe", ("tiny.en", None)),
        (None, "transcribe", ("tiny.en", "base")),
        ("es", "transcribe", ("base", None)),
        ("en", "translate", ("base", None)),
    ],
)
def test_realtime_tier_adds_the_multilingual_model_where_needed(
    language: str | None, task: str, models: tuple[str, str | None]
) -> None:
    assert realtime_models_for("tiny.en", language, task) == models
    assert realtime_models_for("base", language, task) == ("base", None)


def test_checking_models_and_disabled_transcription_load_no_whisper() -> None:
    script = (
        "import asyncio, sys, pathlib\n"
        "from agent.contracts.whisper_models import check_model_supports\n"
        "from agent.contracts.bot_config import BotSettings\n"
        "from agent.transcribe.factory import open_transcriber\n"
        "from agent.transcribe.options import TranscribeOptions\n"
        "check_model_supports('tiny.en', 'en', 'transcribe')\n"
        "t = asyncio.run(open_transcriber(BotSettings(transcribe_enabled=False),"
        " TranscribeOptions(), work_dir=pathlib.Path('.')))\n"
        "assert t is None\n"
        "heavy = ('faster_whisper', 'ctranslate2', 'onnxruntime')\n"
        "loaded = [m for m in heavy if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter and a fixed script
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_bot_check_follows_the_tier() -> None:
    # Both tiers bring the bundled multilingual model where tiny.en cannot serve the bot.
    check_bot_transcription("es", "transcribe", "deferred", realtime_model="tiny.en")
    check_bot_transcription("en", "transcribe", "realtime", realtime_model="tiny.en")
    check_bot_transcription("es", "transcribe", "realtime", realtime_model="tiny.en")
    check_bot_transcription(None, "translate", "realtime", realtime_model="tiny.en")
    with pytest.raises(UnsupportedTranscriptionOptions):
        check_bot_transcription(
            "es", "translate", "deferred", realtime_model="tiny.en", deferred_model="tiny.en"
        )
    check_bot_transcription("es", "translate", "realtime", realtime_model="base")
