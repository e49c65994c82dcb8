"""The embedded default with the real packaged model: windows of two meetings at once, in the
two slots of one model.

The model is small and the CPU shared, so windows are two lines and answers short; the
assertions are about the contract (the schema's JSON, actions resting on the window's own
segments, tokens counted, the packaged model joined and checked), not about what a 0.5B model
understood.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from control_plane.intelligence.detection import (
    DetectedAction,
    DetectionRequest,
    WindowLine,
    detect_actions,
)
from control_plane.intelligence.embedded_chat import EmbeddedChatModel
from control_plane.intelligence.models import DEFAULT_MODEL

pytestmark = [pytest.mark.model, pytest.mark.slow]


def _window(meeting: str, decided: str, promised: str) -> DetectionRequest:
    return DetectionRequest(
        lines=(
            WindowLine(f"{meeting}-1", "Dana", None, 0.0, 3.0, decided),
            WindowLine(f"{meeting}-2", "Eli", None, 3.5, 6.0, promised),
        )
    )


LAUNCH = _window("m1", "so we decided to launch on March 3rd", "I'll send the launch email")
HIRING = _window("m2", "we agreed to hire two engineers", "I'll post the job ad by Friday")


def _rests_on(actions: tuple[DetectedAction, ...], request: DetectionRequest) -> bool:
    return all(set(a.segment_ids) <= {line.segment_id for line in request.lines} for a in actions)


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedChatModel]:
    """The default packaged model, joined into a temporary models folder; two slots."""
    directory = Path(tmp_path_factory.mktemp("models")).resolve()
    model = EmbeddedChatModel(
        model=DEFAULT_MODEL, models_dir=directory, threads=1, slots=2, context_tokens=1024
    )
    yield model
    asyncio.run(model.aclose())


async def test_windows_of_two_meetings_share_one_model(embedded: EmbeddedChatModel) -> None:
    launch, hiring = await asyncio.gather(
        detect_actions(embedded, LAUNCH, max_tokens=160),
        detect_actions(embedded, HIRING, max_tokens=160),
    )
    assert embedded.name == f"embedded/{DEFAULT_MODEL}"
    for detection, request in ((launch, LAUNCH), (hiring, HIRING)):
        assert detection.prompt_tokens > 50 and detection.completion_tokens > 0
        assert detection.seconds > 0
        assert _rests_on(detection.actions, request)
    # Joined once, checked, kept for the next start.
    joined = list(embedded._models_dir.iterdir())
    assert sorted(p.suffix for p in joined) == [".gguf", ".stamp"]
