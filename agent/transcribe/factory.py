"""Build the transcriber a bot's settings ask for, or none at all.

``transcribe_enabled=false`` returns None before anything is imported or loaded: no whisper, no
ONNX runtime, no model files touched.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agent.contracts.bot_config import BotSettings, Task, TranscriptionTier
from agent.contracts.whisper_models import check_model_supports, realtime_models_for
from agent.process import heap
from agent.transcribe.base import Transcriber
from agent.transcribe.options import TranscribeOptions

if TYPE_CHECKING:
    from agent.transcribe.engine import WhisperEngine


async def load_engine(model: str, options: TranscribeOptions) -> WhisperEngine:
    """Resolve and load ``model`` in a worker thread; returns a ``WhisperEngine``."""
    # Imported on use: with transcription off, whisper is never loaded.
    from agent.transcribe.engine import WhisperEngine
    from agent.transcribe.models import resolve_model

    resolved = await asyncio.to_thread(resolve_model, model, options.models_dir)
    engine = await asyncio.to_thread(WhisperEngine.load, resolved, options.cpu_threads)
    # The load leaves the model file's converted buffers free but kept in the heap (about
    # 65 MB for tiny.en and base together; agent/process/heap.py).
    await asyncio.to_thread(heap.trim)
    return engine


async def open_transcriber(
    settings: BotSettings,
    options: TranscribeOptions,
    *,
    join_time: float | None = None,
    work_dir: Path,
    refine_after_meeting: bool = False,
    track_speakers: Mapping[str, str] | None = None,
    id_prefix: str | None = None,
) -> Transcriber | None:
    """Create the transcriber for one bot, started and ready for frames.

    Args:
        settings: The bot's settings (``transcribe_enabled``, ``language``, ``task``,
            ``transcription_tier``).
        options: Model and tier knobs from the agent's configuration.
        join_time: Epoch seconds the bot joined; now when None.
        work_dir: Where the deferred tier writes per-track WAVs.
        refine_after_meeting: Realtime tier also runs the deferred pass and replaces.
        track_speakers: Track id → participant name, when known.
        id_prefix: Segment id prefix (unique per meeting), e.g. the bot id.

    Returns:
        None when ``transcribe_enabled`` is false; otherwise a started transcriber.

    Raises:
        UnsupportedTranscriptionOptions: The model cannot serve the language/task.
        ModelUnavailable: The model cannot be found or assembled.
    """
    if not settings.transcribe_enabled:
        return None
    from agent.transcribe.deferred import DeferredTranscriber, RefiningTranscriber
    from agent.transcribe.realtime import RealtimeTranscriber
    from agent.transcribe.vad import SileroSession

    joined = time.time() if join_time is None else join_time
    language, task = settings.language, settings.task
    deferred_model = options.deferred_model_for(language, task is Task.TRANSLATE)
    prefix = id_prefix or None
    # The deferred tier of either kind, once its engine is loaded.
    deferred_tier = functools.partial(
        DeferredTranscriber,
        work_dir=work_dir,
        join_time=joined,
        language=language,
        task=task,
        options=options,
        track_speakers=track_speakers,
        id_prefix=prefix and f"{prefix}-df",
    )
    if settings.transcription_tier is TranscriptionTier.DEFERRED:
        check_model_supports(deferred_model, language, task)
        return deferred_tier(await load_engine(deferred_model, options))
    model, detector = realtime_models_for(options.model, language, task)
    check_model_supports(model, language, task)
    engine = await load_engine(model, options)
    # The detector is loaded now only when the deferred pass needs it anyway; otherwise in the
    # background, so the meeting's first words do not wait for it.
    eager = detector is not None and refine_after_meeting and deferred_model == detector
    multilingual = await load_engine(detector, options) if eager and detector else None
    vad = await asyncio.to_thread(SileroSession) if options.vad == "silero" else None
    realtime = RealtimeTranscriber(
        engine,
        join_time=joined,
        language=language,
        task=task,
        options=options,
        vad_session=vad,
        track_speakers=track_speakers,
        id_prefix=prefix and f"{prefix}-rt",
        multilingual=multilingual,
    )
    if detector is not None and multilingual is None:
        realtime.load_multilingual(functools.partial(load_engine, detector, options))
    if not refine_after_meeting:
        realtime.start()
        return realtime
    if deferred_model == model:
        deferred_engine = engine
    elif multilingual is not None and deferred_model == detector:
        deferred_engine = multilingual
    else:
        deferred_engine = await load_engine(deferred_model, options)
    refining = RefiningTranscriber(realtime, deferred_tier(deferred_engine))
    realtime.start()
    return refining
