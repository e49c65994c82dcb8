"""Action detection over one window: the prompt to a :class:`.chat.ChatModel`, actions back.

The shapes (:class:`WindowLine`, :class:`DetectionRequest`, :class:`DetectedAction`,
:class:`Detection`) live in :mod:`.action_model` and are re-exported here; the prompt, the
answer schema and the grounding of owner and due in :mod:`.action_prompt`. The caller (the
detection worker) owns windowing, budgets, retries, deduplication and events.
"""

from __future__ import annotations

from collections.abc import Sequence

from control_plane.intelligence.action_model import (
    DetectedAction,
    Detection,
    DetectionRequest,
    WindowLine,
)
from control_plane.intelligence.action_prompt import (
    ANSWER_SCHEMA,
    SCHEMA_NAME,
    build_messages,
    parse_answer,
)
from control_plane.intelligence.chat import ChatMessage, ChatModel

__all__ = [
    "DetectedAction",
    "Detection",
    "DetectionRequest",
    "WindowLine",
    "detect_actions",
]


async def detect_actions(
    chat: ChatModel,
    request: DetectionRequest,
    *,
    max_tokens: int,
    model: str | None = None,
    messages: Sequence[ChatMessage] | None = None,
) -> Detection:
    """Ask ``chat`` for the actions of one window.

    Args:
        chat: The replica's model.
        request: The window, its context and the bot's instructions.
        max_tokens: Longest answer, in tokens.
        model: The model the bot's action prompt names; None for the provider's configured
            model (see :meth:`.chat.ChatModel.complete_json`).
        messages: ``build_messages(request)`` when the caller built them already (the worker
            budgets a window on them, then sends them on every try); None builds them here.

    Returns:
        The valid actions (each resting on segments of ``request.lines``, passing the checks
        of :mod:`.action_checks`, owner and due grounded), the tokens the call used, the
        answer items dropped with why, and the call's seconds.

    Raises:
        ChatUnavailable: A transient failure (timeout, connection, 429, 5xx); retry later.
        ChatAnswerInvalid: The answer is not a JSON object with an ``actions`` list.
        ChatError: Any other failure of the call (a ``model`` the provider does not serve).
    """
    answer = await chat.complete_json(
        build_messages(request) if messages is None else messages,
        ANSWER_SCHEMA,
        schema_name=SCHEMA_NAME,
        max_tokens=max_tokens,
        model=model,
    )
    actions, drops = parse_answer(answer.content, request)
    return Detection(
        actions=tuple(actions),
        prompt_tokens=answer.prompt_tokens,
        completion_tokens=answer.completion_tokens,
        drops=tuple(drops),
        seconds=answer.seconds,
    )
