"""Errors of the agent link and the live routes, as domain errors the error middleware renders.

The tree (all under :class:`control_plane.errors.DomainError`)::

    AgentUnavailable ..... 503  agent_unavailable  the bot's agent has no open link here
    AgentTimeout ......... 504  agent_timeout      the agent did not answer a command in time
    AgentCommandFailed ... 502  agent_command_failed  the agent answered with an error code
                                                      this API has no mapping for

Errors the agent reports with a code the API knows are raised as the API's own errors; the
mapping is :func:`control_plane.bots.live_commands.refusal_error`.
"""

from __future__ import annotations

from control_plane.errors import DomainError


class AgentUnavailable(DomainError):
    """503: the bot is live but its agent is not connected to this control plane right now."""

    status = 503
    default_code = "agent_unavailable"
    title = "Bot agent unavailable"

    def __init__(self, detail: str | None = None) -> None:
        # Agents reconnect within seconds (backoff capped at 10 s).
        super().__init__(detail, headers={"Retry-After": "5"})


class AgentTimeout(DomainError):
    """504: the agent did not answer the command in time."""

    status = 504
    default_code = "agent_timeout"
    title = "Bot agent did not answer in time"


class AgentCommandFailed(DomainError):
    """502: the agent could not carry the command out."""

    status = 502
    default_code = "agent_command_failed"
    title = "Bot agent could not carry out the command"
