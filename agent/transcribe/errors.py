"""Errors of the transcription package.

```
TranscribeError
├── ModelUnavailable            the model cannot be found or assembled
│   └── ModelIntegrityError     joined bytes do not match the pinned sha256
├── TranscriberClosed           frames fed after close()
└── TranscriberFailed           a task of the transcriber died; it transcribes nothing more
UnsupportedTranscriptionOptions (agent.contracts.whisper_models, a ValueError)
```
"""

from __future__ import annotations

from agent.contracts.whisper_models import UnsupportedTranscriptionOptions


class TranscribeError(Exception):
    """Base of every error raised by ``agent.transcribe``."""


class ModelUnavailable(TranscribeError):
    """The model is neither a registry name nor a usable directory, or a part is missing."""


class ModelIntegrityError(ModelUnavailable):
    """A model assembled from parts does not have the pinned size or sha256."""


class TranscriberClosed(TranscribeError):
    """A frame or activity arrived after :meth:`close` began."""


class TranscriberFailed(TranscribeError):
    """One of the transcriber's own tasks ended with an error (the cause is chained).

    The transcriber takes no more frames; the caller replaces it or gives up, and says so.
    """


__all__ = [
    "ModelIntegrityError",
    "ModelUnavailable",
    "TranscribeError",
    "TranscriberClosed",
    "TranscriberFailed",
    "UnsupportedTranscriptionOptions",
]
