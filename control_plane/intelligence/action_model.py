"""Shapes that travel through action detection: window lines in, detected actions out.

Moved from the agent (issue 34): detection now runs in the control plane over stored final
segments. :mod:`.detection` re-exports these names; import them from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from agent.contracts.link import ActionType


@dataclass(frozen=True, slots=True)
class WindowLine:
    """One final transcript segment as the model sees it.

    Attributes:
        segment_id: The segment's stable id (``Segment.id``).
        speaker: Speaker name as the meeting shows it, or None when unknown.
        speaker_id: Platform participant id when known, else None.
        start: Seconds from when the bot joined.
        end: Seconds from when the bot joined.
        text: What was said.
    """

    segment_id: str
    speaker: str | None
    speaker_id: str | None
    start: float
    end: float
    text: str


@dataclass(frozen=True, slots=True)
class DetectionRequest:
    """One call's worth of transcript.

    Attributes:
        lines: The window to analyse; actions may only rest on these segments.
        context: The previous window, shown to the model for reference only.
        instructions: The bot's prompt (``ActionPrompt.instructions``); None uses the
            system default of :mod:`.action_prompt`.
    """

    lines: tuple[WindowLine, ...]
    context: tuple[WindowLine, ...] = ()
    instructions: str | None = None


class DetectedAction(BaseModel):
    """An action the model found in a window.

    Attributes:
        action_type: ``action_item``, ``decision``, ``question`` or ``follow_up``.
        text: The action in a short sentence (1-500 characters).
        owner: Who takes it, when the transcript says so (at most 100 characters).
        due: When it is due, as said (``"Friday"``, ``"end of month"``), when said.
        segment_ids: Ids of the window's segments the action rests on (never empty).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    action_type: ActionType
    text: str = Field(min_length=1, max_length=500)
    owner: str | None = Field(default=None, max_length=100)
    due: str | None = Field(default=None, max_length=100)
    segment_ids: tuple[str, ...] = Field(min_length=1)


DropReason = Literal[
    "malformed", "no_line", "asked", "unasked", "too_short", "ungrounded", "uncommitted"
]
"""Why an answer item is not an action (the ``reason`` of ``…_items_dropped_total``)."""

DROP_REASONS: tuple[DropReason, ...] = get_args(DropReason)


@dataclass(frozen=True, slots=True)
class ItemDrop:
    """One answer item that did not become an action.

    Attributes:
        reason: Why (:data:`DropReason`, see :mod:`.action_checks`).
        text: Its text as the model wrote it, at most 100 characters ("" when it had none).
    """

    reason: DropReason
    text: str


@dataclass(frozen=True, slots=True)
class Detection:
    """What one detection call returned.

    Attributes:
        actions: Valid actions, in the model's order (not yet deduplicated).
        prompt_tokens: Tokens the request used (server count, else an estimate).
        completion_tokens: Tokens the answer used (server count, else an estimate).
        drops: Items of the answer that did not become actions, each with why
            (:mod:`.action_checks`), in the answer's order.
        seconds: Wall-clock seconds of the call, queueing in the provider included.
    """

    actions: tuple[DetectedAction, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    drops: tuple[ItemDrop, ...] = ()
    seconds: float = 0.0

    @property
    def dropped(self) -> int:
        """How many items of the answer were dropped."""
        return len(self.drops)

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens
