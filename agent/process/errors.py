"""Errors of the agent.

::

    AgentError
    ├── CapabilityNotSupported      the platform lacks a feature (capability_not_supported)
    ├── CommandError                a command cannot run now (answer: its ``code``)
    ├── BrowserError                the page did not behave (element missing, page crashed)
    └── MeetingExit                 the bot is out of the meeting; ``status``/``reason`` say how
        ├── JoinFailed              could not get in (not found, denied, timeout, join_error)
        └── MeetingLeft             was in and is now out (removed, ended, alone, stopped)
"""

from __future__ import annotations

from agent.contracts.link import CommandErrorCode
from agent.contracts.status import BotStatus, StatusReason


class AgentError(Exception):
    """Base of every agent error."""


class CapabilityNotSupported(AgentError):
    """The platform adapter lacks ``capability`` (docs/architecture.md §4: never do nothing)."""

    code = CommandErrorCode.CAPABILITY_NOT_SUPPORTED

    def __init__(self, platform: str, capability: str) -> None:
        super().__init__(f"{platform} does not support {capability}")
        self.platform = platform
        self.capability = capability


class CommandError(AgentError):
    """A command was refused.

    ``code`` (and ``field``, when one argument or setting is the cause) go back over the link in the
    command's result.
    """

    def __init__(self, code: CommandErrorCode, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.field = field


class BrowserError(AgentError):
    """The meeting page did not offer what the adapter needs (an element never appeared)."""


class MeetingExit(AgentError):
    """The bot is leaving or left the meeting: the final ``status`` and its ``reason``."""

    status: BotStatus = BotStatus.COMPLETED

    def __init__(self, reason: StatusReason | str, detail: str | None = None) -> None:
        super().__init__(detail or str(reason))
        self.reason = str(reason)
        self.detail = detail


class JoinFailed(MeetingExit):
    """The bot never got in: ``failed``, e.g. with ``meeting_not_found`` or ``admission_denied``."""

    status = BotStatus.FAILED


class MeetingLeft(MeetingExit):
    """The bot was in and is out: ``completed``, e.g. with ``removed_by_host`` or ``left_alone``."""

    status = BotStatus.COMPLETED
