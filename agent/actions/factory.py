"""Build the detector a bot's settings ask for, or none at all.

``enable_actions=false`` returns None before anything is imported, loaded or connected: no
language-model call can follow (issue 15 "the rule").
"""

from __future__ import annotations

import asyncio

from agent.actions.base import ActionDetector
from agent.actions.local_models import LOCAL_MODELS, resolve_local_model
from agent.actions.local_provider import LocalActionDetector
from agent.actions.openai_provider import OpenAIActionDetector
from agent.actions.settings import ActionSettings
from agent.contracts.bot_config import ActionPrompt, BotSettings


async def open_detector(
    bot: BotSettings, settings: ActionSettings, prompt: ActionPrompt | None = None
) -> ActionDetector | None:
    """The detector for one bot, or None when ``bot.enable_actions`` is false.

    Args:
        bot: The bot's options; only ``enable_actions`` is read.
        settings: The agent host's action settings (provider, endpoint, local model).
        prompt: The bot's resolved prompt; its ``model`` overrides ``settings.llm_model``
            for the ``openai`` provider.

    Raises:
        DetectorError: The local model's package is missing or the model does not load.
    """
    if not bot.enable_actions:
        return None
    if settings.provider == "openai":
        return OpenAIActionDetector(
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key.get_secret_value(),
            model=(prompt.model if prompt and prompt.model else settings.llm_model),
            max_output_tokens=settings.max_output_tokens,
            connect_timeout=settings.llm_connect_timeout_seconds,
            request_timeout=settings.llm_request_timeout_seconds,
        )
    path = await asyncio.to_thread(resolve_local_model, settings.local_model, settings.models_dir)
    return await LocalActionDetector.load(
        path,
        model_name=settings.local_model if settings.local_model in LOCAL_MODELS else path.stem,
        threads=settings.local_threads,
        context_tokens=settings.local_context_tokens,
        max_output_tokens=settings.max_output_tokens,
    )
