"""The OpenAI chat-completions shapes both providers speak: what is sent and what comes back.

The ``openai`` provider sends them through the SDK, the ``embedded`` one hands the same dicts
to llama.cpp's in-process server; both read the answer's text and token counts the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from control_plane.intelligence.chat import ChatAnswer, ChatMessage
from control_plane.intelligence.json_answer import estimate_tokens, parse_json_object


def request_messages(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    """The request's ``messages``: one ``{role, content}`` dict per message, in order."""
    return [{"role": m.role, "content": m.content} for m in messages]


def schema_format(schema: Mapping[str, Any], schema_name: str) -> dict[str, Any]:
    """The ``response_format`` that constrains the answer to ``schema`` (strict ``json_schema``).

    Args:
        schema: JSON schema of the answer (copied, not referenced).
        schema_name: Its short ``[a-z_]+`` name (``json_schema.name``).
    """
    return {
        "type": "json_schema",
        "json_schema": {"name": schema_name, "strict": True, "schema": dict(schema)},
    }


def chat_answer(
    content: str,
    messages: Sequence[ChatMessage],
    seconds: float,
    *,
    prompt_tokens: int | None,
    completion_tokens: int | None,
) -> ChatAnswer:
    """The :class:`~.chat.ChatAnswer` of an answer's text and the server's token counts.

    Args:
        content: The assistant message's text.
        messages: What was sent (the prompt estimate's text when the server counted none).
        seconds: Wall-clock seconds of the call.
        prompt_tokens: The server's count; None for an estimate from ``messages``.
        completion_tokens: The server's count; None for an estimate from ``content``.

    Raises:
        ChatAnswerInvalid: ``content`` holds no JSON object.
    """
    payload = parse_json_object(content)
    if prompt_tokens is None:
        prompt_tokens = estimate_tokens("".join(m.content for m in messages))
    if completion_tokens is None:
        completion_tokens = estimate_tokens(content)
    return ChatAnswer(payload, prompt_tokens, completion_tokens, seconds)
