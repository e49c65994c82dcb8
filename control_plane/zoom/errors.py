"""Errors of talking to Zoom.

::

    ZoomError                   anything that went wrong with a Zoom call
    ├── ZoomAuthorizationError  Zoom refused a code, refresh token or access token (4xx)
    └── ZoomUnavailableError    Zoom unreachable, failing (5xx) or answering nonsense

The connection service turns these into the API's domain errors; handlers never see them.
"""

from __future__ import annotations


class ZoomError(Exception):
    """Base of every Zoom failure."""


class ZoomAuthorizationError(ZoomError):
    """Zoom answered 4xx: the credential presented is not (or no longer) valid.

    Attributes:
        status: The HTTP status Zoom answered.
    """

    def __init__(self, status: int) -> None:
        super().__init__(f"zoom refused the request with {status}")
        self.status = status


class ZoomUnavailableError(ZoomError):
    """Zoom could not be reached, failed, or answered without the expected fields."""
