"""Bot transcription options against the Whisper models the bots run (issue 5, item 1).

Bot creation and PATCH refuse options the configured model would silently get wrong (an
English-only model asked to translate or to transcribe another language) with 422, and every
launched bot is told which models to use, so the agent and the check agree.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.bot_config import BotConfig, BotSettings
from agent.contracts.whisper_models import (
    UnsupportedTranscriptionOptions,
    check_bot_transcription,
    check_language_code,
)
from control_plane.bots.config_builder import TransactionRun
from control_plane.db.models.bot import Meeting
from control_plane.errors import Validation
from control_plane.settings import Settings


def check_transcription(
    settings: Settings, bot: BotSettings, given: Collection[str] = ("language",)
) -> None:
    """Refuse ``bot``'s language/task when no model knows them or its model cannot serve them.

    A ``language`` the request sets (``given``) must be a code of
    ``agent.contracts.whisper_models.WHISPER_LANGUAGES``, whether or not the bot transcribes;
    the model check is skipped when ``transcribe_enabled`` is false (no model is loaded then).

    Raises:
        Validation: 422 with code ``task_not_supported``, ``language_not_supported`` or
            ``model_not_found`` (see ``agent.contracts.whisper_models.check_model_supports``);
            ``errors[0].loc`` is ``["body", "task"]`` or ``["body", "language"]``.
    """
    try:
        if "language" in given:
            check_language_code(bot.language)
        if not bot.transcribe_enabled:
            return
        check_bot_transcription(
            bot.language,
            bot.task,
            bot.transcription_tier.value,
            realtime_model=settings.transcription_model,
            deferred_model=settings.deferred_transcription_model or None,
        )
    except UnsupportedTranscriptionOptions as exc:
        field = "task" if exc.code == "task_not_supported" else "language"
        raise Validation.of_field(field, str(exc), code=exc.code) from exc


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
