"""Errors of ``meetbot demo``.

::

    DemoError                 something the demo started or called failed; the message says what
     └── ApiError             the control plane answered a request with an error status
"""

from __future__ import annotations


class DemoError(Exception):
    """A step of the demo failed; ``str(exc)`` is the message shown to the user."""


class ApiError(DemoError):
    """The control plane answered ``status`` with a problem+json ``code``.

    Args:
        method: HTTP method of the request.
        path: Path of the request.
        status: HTTP status of the answer.
        code: The error body's ``code`` (empty when the body was not problem+json).
        detail: The error body's ``detail`` (or the start of the body).
    """

    def __init__(self, method: str, path: str, status: int, code: str, detail: str) -> None:
        super().__init__(f"{method} {path} answered {status} {code}: {detail}".strip())
        self.status = status
        self.code = code
