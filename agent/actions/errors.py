"""Errors of action detection. The windower retries :class:`DetectorUnavailable` only."""

from __future__ import annotations


class DetectorError(Exception):
    """A detector call failed and retrying the same request will not help."""


class DetectorUnavailable(DetectorError):
    """A transient failure (timeout, connection refused, HTTP 429 or 5xx): retry later."""


class AnswerInvalid(DetectorError):
    """The model answered, but not with the JSON shape asked for."""
