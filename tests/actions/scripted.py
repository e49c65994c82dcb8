"""An in-memory ``ActionDetector`` for windowing tests (DESIGN.md §4: real, not a mock).

It answers each request with what a script returns for it, keyword rules by default: a line
containing "I'll" becomes an action item owned by its speaker, "we decided" a decision, a line
ending in "?" a question. It records every request and the most calls ever in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from agent.actions.model import DetectedAction, Detection, DetectionRequest
from agent.contracts.link import ActionType


def keyword_actions(request: DetectionRequest) -> Detection:
    """Actions by keyword rules over the window's lines."""
    actions: list[DetectedAction] = []
    for line in request.lines:
        text = line.text.strip()
        if "I'll" in text:
            kind, owner = ActionType.ACTION_ITEM, line.speaker
        elif "we decided" in text.lower():
            kind, owner = ActionType.DECISION, None
        elif text.endswith("?"):
            kind, owner = ActionType.QUESTION, None
        else:
            continue
        actions.append(
            DetectedAction(action_type=kind, text=text, owner=owner, segment_ids=(line.segment_id,))
        )
    return Detection(tuple(actions), prompt_tokens=50, completion_tokens=20)


class ScriptedDetector:
    """Answers with ``script(request)``; a script may raise to simulate a failing model.

    Args:
        script: Request → detection (or raises ``DetectorError``).
        delay: Seconds each call takes.
    """

    def __init__(
        self,
        script: Callable[[DetectionRequest], Detection] = keyword_actions,
        delay: float = 0.0,
    ) -> None:
        self.script = script
        self.delay = delay
        self.requests: list[DetectionRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.closed = False

    @property
    def name(self) -> str:
        return "scripted/keywords"

    async def detect(self, request: DetectionRequest) -> Detection:
        self.requests.append(request)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            return self.script(request)
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        self.closed = True
