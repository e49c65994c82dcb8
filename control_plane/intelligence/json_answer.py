"""Turning a model's answer text into the JSON object a :class:`.chat.ChatModel` returns.

Shared by the providers. Servers that constrain decoding answer bare JSON; the others may fence
it (```json … ```) or wrap it in prose, so the outermost ``{…}`` is taken when the whole text
does not parse.
"""

from __future__ import annotations

import json
import re
from typing import Any

from control_plane.intelligence.chat import ChatAnswerInvalid

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise
        return json.loads(text[start : end + 1])


def parse_json_object(content: str) -> dict[str, Any]:
    """The JSON object in ``content``.

    Args:
        content: The assistant message as the server sent it.

    Returns:
        The decoded object.

    Raises:
        ChatAnswerInvalid: No JSON in the text, or JSON that is not an object.
    """
    text = _FENCE.sub("", content.strip())
    try:
        payload = _loads(text)
    except json.JSONDecodeError as exc:
        raise ChatAnswerInvalid(f"answer is not JSON: {content[:120]!r}") from exc
    if not isinstance(payload, dict):
        raise ChatAnswerInvalid(f"answer is JSON but not an object: {content[:120]!r}")
    return payload


def estimate_tokens(text: str) -> int:
    """Rough token count (4 characters a token) for when a server reports none."""
    return max(1, len(text) // 4)
