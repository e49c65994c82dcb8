"""Building the transcriber a bot's settings ask for."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent.contracts.bot_config import BotSettings, Task, TranscriptionTier
from agent.contracts.whisper_models import UnsupportedTranscriptionOptions
from agent.transcribe.deferred import DeferredTranscriber, RefiningTranscriber
from agent.transcribe.factory import open_transcriber
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.realtime import RealtimeTranscriber

pytestmark = [pytest.mark.model, pytest.mark.slow]


async def test_each_tier_gets_its_transcriber(tmp_path: Path, models_dir: Path) -> None:
    options = TranscribeOptions(models_dir=models_dir, deferred_model="tiny.en")
    realtime = await open_transcriber(BotSettings(), options, work_dir=tmp_path, id_prefix="b1")
    assert isinstance(realtime, RealtimeTranscriber)
    await realtime.close()
    assert [s async for s in realtime.segments()] == []

    deferred = await open_transcriber(
        BotSettings(transcription_tier=TranscriptionTier.DEFERRED), options, work_dir=tmp_path
    )
    assert isinstance(deferred, DeferredTranscriber)
    await deferred.close()

    refining = await open_transcriber(
        BotSettings(), options, work_dir=tmp_path, refine_after_meeting=True
    )
    assert isinstance(refining, RefiningTranscriber)
    await refining.close()


async def test_translation_on_an_english_only_model_runs_on_the_bundled_multilingual_one(
    tmp_path: Path, models_dir: Path
) -> None:
    # Issue 12: what the bundled models can do is never refused.
    options = TranscribeOptions(models_dir=models_dir)
    realtime = await open_transcriber(BotSettings(task=Task.TRANSLATE), options, work_dir=tmp_path)
    assert isinstance(realtime, RealtimeTranscriber)
    await realtime.close()
    with pytest.raises(UnsupportedTranscriptionOptions) as caught:
        await open_transcriber(
            BotSettings(), TranscribeOptions(model="no-such-model"), work_dir=tmp_path
        )
    assert caught.value.code == "model_not_found"


async def test_no_language_brings_the_multilingual_model_without_making_the_meeting_wait(
    tmp_path: Path, models_dir: Path
) -> None:
    options = TranscribeOptions(models_dir=models_dir)
    realtime = await open_transcriber(BotSettings(), options, work_dir=tmp_path)
    assert isinstance(realtime, RealtimeTranscriber)
    for _ in range(600):
        if realtime.detects_languages:
            break
        await asyncio.sleep(0.1)
    assert realtime.detects_languages
    await realtime.close()
    english = await open_transcriber(BotSettings(language="en"), options, work_dir=tmp_path)
    assert isinstance(english, RealtimeTranscriber) and not english.detects_languages
    await english.close()
