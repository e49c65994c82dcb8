"""Bot transcription options against the Whisper models the bots run (issue 5, item 1).

Bot creation and PATCH refuse options the configured model would silently get wrong (an
English-only model asked to translate or to transcribe another language) with 422, and every
launched bot is told which models to use, so the agent and the check agree.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.bot_config import BotConfig, BotSettings
from agent.contracts.whisper_models import (
    UnsupportedTranscriptionOptions,
    check_bot_transcription,
)
from control_plane.bots.config_builder import TransactionRun
from control_plane.db.models.bot import Meeting
from control_plane.errors import ErrorItem, Validation
from control_plane.settings import Settings


def check_transcription(settings: Settings, bot: BotSettings) -> None:
    """Refuse ``bot``'s language/task when its tier's model cannot serve them.

    Nothing is checked when ``transcribe_enabled`` is false (no model is loaded then).

    Raises:
        Validation: 422 with code ``task_not_supported``, ``language_not_supported`` or
            ``model_not_found`` (see ``agent.contracts.whisper_models.check_model_supports``).
    """
    if not bot.transcribe_enabled:
        return
    try:
        check_bot_transcription(
            bot.language,
            bot.task,
            bot.transcription_tier.value,
            realtime_model=settings.transcription_model,
            deferred_model=settings.deferred_transcription_model or None,
        )
    except UnsupportedTranscriptionOptions as exc:
        field = "task" if exc.code == "task_not_supported" else "language"
        raise Validation(
            str(exc),
            status=422,
            code=exc.code,
            errors=[ErrorItem(loc=["body", field], msg=str(exc), type=exc.code)],
        ) from exc


def transcription_step(settings: Settings) -> TransactionRun:
    """The ``transcription_models`` config step: the configured models and the refine flag."""

    async def step(session: AsyncSession, meeting: Meeting, config: BotConfig) -> BotConfig:
        del session, meeting  # the settings alone decide
        return config.model_copy(
            update={
                "transcription_model": settings.transcription_model,
                "deferred_transcription_model": settings.deferred_transcription_model or None,
                "refine_after_meeting": settings.refine_after_meeting,
            }
        )

    return step
