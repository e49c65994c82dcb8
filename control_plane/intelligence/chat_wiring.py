"""The replica's one :class:`~control_plane.intelligence.chat.ChatModel`, built from settings.

``MEETBOT_INTELLIGENCE_PROVIDER`` picks it: ``embedded`` (default) runs a packaged GGUF model in
this process (:class:`~.embedded_chat.EmbeddedChatModel`, loaded on first use, shared by every
meeting and batched in slots); ``openai`` calls an OpenAI-compatible chat-completions endpoint
(:class:`~.openai_chat.OpenAIChatModel`). :func:`chat_model_ctx` makes it when the application
starts, puts it at :data:`CHAT_MODEL` for the detection and summary workers (whose contexts
come after it), and closes it after they stopped. Building it opens no connection and loads
nothing: a replica whose meetings never enable actions makes no call, ever.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from control_plane.intelligence.chat import ChatModel
from control_plane.intelligence.embedded_chat import EmbeddedChatModel
from control_plane.intelligence.models import models_dir
from control_plane.intelligence.openai_chat import OpenAIChatModel
from control_plane.settings import SETTINGS, Settings

CHAT_MODEL = web.AppKey("chat_model", ChatModel)
"""The replica's language model (set while the application runs)."""


class ChatSettingsRefused(ValueError):
    """The ``MEETBOT_INTELLIGENCE_*`` settings name no usable model (the message says which)."""


def open_chat_model(settings: Settings) -> ChatModel:
    """The model ``settings`` ask for; nothing is loaded or connected yet.

    Raises:
        ChatSettingsRefused: ``openai`` with neither ``MEETBOT_INTELLIGENCE_BASE_URL`` nor
            ``MEETBOT_INTELLIGENCE_API_KEY`` (api.openai.com would refuse every call), or an
            empty ``MEETBOT_INTELLIGENCE_MODEL``.
    """
    if settings.intelligence_provider == "openai":
        api_key = settings.intelligence_api_key.get_secret_value()
        if not settings.intelligence_base_url and not api_key:
            raise ChatSettingsRefused(
                "MEETBOT_INTELLIGENCE_PROVIDER=openai needs MEETBOT_INTELLIGENCE_API_KEY "
                "(api.openai.com) or MEETBOT_INTELLIGENCE_BASE_URL (another endpoint)"
            )
        if not settings.intelligence_model:
            raise ChatSettingsRefused("MEETBOT_INTELLIGENCE_MODEL is empty")
        return OpenAIChatModel(
            base_url=settings.intelligence_base_url,
            api_key=api_key,
            model=settings.intelligence_model,
            connect_timeout=settings.intelligence_connect_timeout_seconds,
            request_timeout=settings.intelligence_request_timeout_seconds,
        )
    return EmbeddedChatModel(
        model=settings.intelligence_embedded_model,
        models_dir=models_dir(settings.data_dir),
        threads=settings.intelligence_embedded_threads,
        slots=settings.intelligence_embedded_slots,
        context_tokens=settings.intelligence_embedded_context_tokens,
    )


async def chat_model_ctx(app: web.Application) -> AsyncIterator[None]:
    """A ``cleanup_ctx``: :data:`CHAT_MODEL` while the application runs, closed at its end."""
    chat = open_chat_model(app[SETTINGS])
    app[CHAT_MODEL] = chat
    try:
        yield
    finally:
        await chat.aclose()
