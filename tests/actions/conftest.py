"""The real local model, loaded once per test session (packaged GGUF, no download)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.actions.local_models import resolve_local_model
from agent.actions.local_provider import LocalActionDetector
from agent.actions.settings import ActionSettings


@pytest.fixture(scope="session")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalActionDetector]:
    """The default packaged model (joined into a session temp dir), 1 thread, short answers."""
    settings = ActionSettings()
    path = resolve_local_model(settings.local_model, tmp_path_factory.mktemp("models"))
    detector = LocalActionDetector.open_blocking(
        path,
        model_name=settings.local_model,
        threads=1,
        context_tokens=2048,
        max_output_tokens=160,
    )
    yield detector
