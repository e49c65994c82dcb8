"""The ``openai`` provider: any OpenAI-compatible ``/v1/chat/completions`` endpoint.

Asks for a JSON-schema-constrained answer (``response_format: json_schema``). A server that
rejects that field with HTTP 400 is asked again at once with ``json_object``, then with no
``response_format`` at all (the prompt still demands JSON); the mode that worked is kept for
the provider's life. Answers are validated by :func:`agent.actions.prompt.parse_answer`.

The SDK's own retries are off (``max_retries=0``): the windower owns retries and backoff.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import openai

from agent.actions.errors import DetectorError, DetectorUnavailable
from agent.actions.model import Detection, DetectionRequest
from agent.actions.prompt import build_messages, estimate_tokens, parse_answer, response_format

log = logging.getLogger(__name__)

FormatMode = Literal["json_schema", "json_object", "plain"]
_FALLBACK: dict[FormatMode, FormatMode] = {"json_schema": "json_object", "json_object": "plain"}


class OpenAIActionDetector:
    """Detector over an OpenAI-compatible HTTP API.

    Args:
        base_url: API base including ``/v1`` (``http://127.0.0.1:8080/v1``); empty for the
            SDK default.
        api_key: Bearer key (servers without auth accept any non-empty string).
        model: Model name sent with each request.
        max_output_tokens: ``max_tokens`` of each request.
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
        max_output_tokens: int = 384,
        connect_timeout: float = 5.0,
        request_timeout: float = 120.0,
        mode: FormatMode = "json_schema",
    ) -> None:
        self._model = model
        self._max_tokens = max_output_tokens
        self._mode: FormatMode = mode
        self._client = openai.AsyncOpenAI(
            base_url=base_url or None,
            api_key=api_key or "unused",
            timeout=openai.Timeout(request_timeout, connect=connect_timeout),
            max_retries=0,
        )

    @property
    def name(self) -> str:
        """``openai/{model}``."""
        return f"openai/{self._model}"

    @property
    def mode(self) -> FormatMode:
        """The ``response_format`` mode in use (``json_schema``, ``json_object`` or ``plain``)."""
        return self._mode

    async def detect(self, request: DetectionRequest) -> Detection:
        """One chat-completions call for ``request`` (see :class:`ActionDetector`)."""
        messages = build_messages(request)
        while True:
            try:
                completion = await self._create(messages)
                break
            except openai.BadRequestError as exc:
                fallback = _FALLBACK.get(self._mode)
                if fallback is None:
                    raise DetectorError(f"request rejected: {exc.message}") from exc
                log.info(
                    "llm server rejected response_format, falling back",
                    extra={"mode": self._mode, "fallback": fallback, "status": exc.status_code},
                )
                self._mode = fallback
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                raise DetectorUnavailable(f"{type(exc).__name__}: {exc}") from exc
            except (openai.RateLimitError, openai.InternalServerError) as exc:
                raise DetectorUnavailable(f"HTTP {exc.status_code}: {exc.message}") from exc
            except openai.APIStatusError as exc:
                if exc.status_code >= 500:
                    raise DetectorUnavailable(f"HTTP {exc.status_code}: {exc.message}") from exc
                raise DetectorError(f"HTTP {exc.status_code}: {exc.message}") from exc
        if not completion.choices:
            raise DetectorError("answer has no choices")
        content = completion.choices[0].message.content or ""
        actions, dropped = parse_answer(content, request)
        usage = completion.usage
        prompt_tokens = (
            usage.prompt_tokens
            if usage
            else estimate_tokens("".join(m["content"] for m in messages))
        )
        completion_tokens = usage.completion_tokens if usage else estimate_tokens(content)
        return Detection(tuple(actions), prompt_tokens, completion_tokens, dropped)

    async def _create(self, messages: list[dict[str, str]]) -> Any:
        extra: dict[str, Any] = {}
        if self._mode != "plain":
            extra["response_format"] = response_format(self._mode)
        return await self._client.chat.completions.create(
            model=self._model,
            messages=messages,  # type: ignore[arg-type]  # plain dicts of the documented shape
            temperature=0,
            max_tokens=self._max_tokens,
            **extra,
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()
