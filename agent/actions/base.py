"""The ``ActionDetector`` seam (DESIGN.md §4): one call, one window, typed actions back.

Implementations do the one call; the caller (:class:`agent.actions.windowing.ActionWindower`)
owns windowing, budgets, timeouts, retries, deduplication and metrics.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from agent.actions.model import Detection, DetectionRequest


@runtime_checkable
class ActionDetector(Protocol):
    """Finds action items, decisions, open questions and follow-ups in a window.

    Implementations: :class:`agent.actions.openai_provider.OpenAIActionDetector`,
    :class:`agent.actions.local_provider.LocalActionDetector`.
    """

    @property
    def name(self) -> str:
        """``provider/model`` for logs and benchmarks."""
        ...

    async def detect(self, request: DetectionRequest) -> Detection:
        """Analyse one window.

        Raises:
            DetectorUnavailable: A transient failure; the same request may succeed later.
            AnswerInvalid: The model's answer is not the JSON asked for.
            DetectorError: Any other failure of the call.
        """
        ...

    async def aclose(self) -> None:
        """Release the client or the model; no call may follow."""
        ...
