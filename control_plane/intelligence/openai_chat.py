"""The ``openai`` provider: any OpenAI-compatible ``/v1/chat/completions`` endpoint.

OpenAI, Azure OpenAI, vLLM, Ollama and llama.cpp's server all take the same request through
the ``openai`` SDK. The answer is asked for as ``response_format: json_schema`` (constrained
decoding where the server supports it). A server that rejects that field with HTTP 400 is asked
again at once with ``json_object``, then with no ``response_format`` at all (the caller's
prompt still asks for JSON); the mode that worked is kept for the provider's life.

The SDK's own retries are off (``max_retries=0``): the callers own retries and backoff.
Moved from the agent's ``agent/actions/openai_provider.py`` (issue 34).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import openai

from control_plane.intelligence.chat import (
    ChatAnswer,
    ChatError,
    ChatMessage,
    ChatUnavailable,
)
from control_plane.intelligence.completions import chat_answer, request_messages, schema_format

log = logging.getLogger(__name__)

FormatMode = Literal["json_schema", "json_object", "plain"]
_FALLBACK: dict[FormatMode, FormatMode] = {"json_schema": "json_object", "json_object": "plain"}


def response_format(
    mode: Literal["json_schema", "json_object"], schema: Mapping[str, Any], schema_name: str
) -> dict[str, Any]:
    """The ``response_format`` request field for ``mode`` (OpenAI's chat-completions shape)."""
    if mode == "json_schema":
        return schema_format(schema, schema_name)
    return {"type": "json_object"}


class OpenAIChatModel:
    """A :class:`~control_plane.intelligence.chat.ChatModel` over an OpenAI-compatible API.

    Args:
        base_url: API base including ``/v1`` (``http://127.0.0.1:8080/v1``); empty for the
            SDK default (api.openai.com).
        api_key: Bearer key (servers without auth accept any non-empty string).
        model: Model name sent with each request that names none (``complete_json``'s
            ``model``; an OpenAI-compatible server may serve several models).
        connect_timeout: Seconds to connect.
        request_timeout: Seconds for the whole call.
        mode: First ``response_format`` tried (tests start lower to prove the fallbacks).
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        connect_timeout: float = 5.0,
        request_timeout: float = 120.0,
        mode: FormatMode = "json_schema",
    ) -> None:
        self._model = model
        self._mode: FormatMode = mode
        self._client = openai.AsyncOpenAI(
            base_url=base_url or None,
            api_key=api_key or "unused",
            timeout=openai.Timeout(request_timeout, connect=connect_timeout),
            max_retries=0,
        )
        self._closed = False

    @property
    def name(self) -> str:
        """``openai/{model}``."""
        return f"openai/{self._model}"

    @property
    def mode(self) -> FormatMode:
        """The ``response_format`` mode in use (``json_schema``, ``json_object`` or ``plain``)."""
        return self._mode

    async def complete_json(
        self,
        messages: Sequence[ChatMessage],
        schema: Mapping[str, Any],
        *,
        schema_name: str,
        max_tokens: int,
        model: str | None = None,
    ) -> ChatAnswer:
        """One chat-completions call (see :meth:`ChatModel.complete_json`).

        ``model`` is sent as the request's ``model`` (None: the configured one); the server
        decides whether it serves it (an unknown model is its HTTP 404, a :class:`ChatError`).

        Raises:
            ChatUnavailable: Timeout, connection failure, HTTP 429 or 5xx.
            ChatAnswerInvalid: The answer holds no JSON object.
            ChatError: HTTP 400 in every mode, any other 4xx, no choices in the answer, or the
                provider is closed.
        """
        if self._closed:
            raise ChatError("openai chat model is closed")
        body = request_messages(messages)
        started = time.monotonic()
        while True:
            try:
                completion = await self._create(
                    body, schema, schema_name, max_tokens, model or self._model
                )
                break
            except openai.BadRequestError as exc:
                fallback = _FALLBACK.get(self._mode)
                if fallback is None:
                    raise ChatError(f"request rejected: {exc.message}") from exc
                log.info(
                    "llm server rejected response_format, falling back",
                    extra={"mode": self._mode, "fallback": fallback, "status": exc.status_code},
                )
                self._mode = fallback
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                raise ChatUnavailable(f"{type(exc).__name__}: {exc}") from exc
            except (openai.RateLimitError, openai.InternalServerError) as exc:
                raise ChatUnavailable(f"HTTP {exc.status_code}: {exc.message}") from exc
            except openai.APIStatusError as exc:
                if exc.status_code >= 500:
                    raise ChatUnavailable(f"HTTP {exc.status_code}: {exc.message}") from exc
                raise ChatError(f"HTTP {exc.status_code}: {exc.message}") from exc
        seconds = time.monotonic() - started
        if not completion.choices:
            raise ChatError("answer has no choices")
        usage = completion.usage
        return chat_answer(
            completion.choices[0].message.content or "",
            messages,
            seconds,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
        )

    async def _create(
        self,
        messages: list[dict[str, str]],
        schema: Mapping[str, Any],
        schema_name: str,
        max_tokens: int,
        model: str,
    ) -> Any:
        extra: dict[str, Any] = {}
        if self._mode != "plain":
            extra["response_format"] = response_format(self._mode, schema, schema_name)
        return await self._client.chat.completions.create(
            model=model,
            messages=messages,  # type: ignore[arg-type]  # plain dicts of the documented shape
            temperature=0,
            max_tokens=max_tokens,
            **extra,
        )

    async def aclose(self) -> None:
        """Close the HTTP client; later calls raise :class:`ChatError`."""
        self._closed = True
        await self._client.close()
