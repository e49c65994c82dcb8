"""Agent host settings a control plane hands its bots: which travel, and which are secret.

An operator declares a bot's host settings once, on the control plane, with the agent's own
variable names, ``MEETBOT_AGENT_*`` (:class:`agent.process.settings.AgentSettings`), e.g.
``MEETBOT_AGENT_TTS_PROVIDER=openai`` and ``MEETBOT_AGENT_TTS_API_KEY=sk-…``. (Action detection
is the control plane's own since issue 34: ``MEETBOT_INTELLIGENCE_*``, nothing a bot needs.)

- The ``local`` launcher's agents inherit the non-secret ones with the control plane's
  environment, and find all of them in their private ``bot.json`` (``BotConfig.agent_settings``),
  the secret ones only there.
- Bots on their own machine (``qemu``, ``ec2``, ``kubernetes``) get them in the answer of the
  one-time bootstrap exchange (``BotConfig.agent_settings``): never in user-data, instance
  tags, a Pod spec or a launcher's log. The control plane adds them when the token is
  redeemed, so the database never holds them either.

:data:`MACHINE_SETTINGS` describe the machine an agent runs on and are the image's to set
(paths, display, sound server): they are never handed over. :data:`SECRET_SETTINGS` are the
secret ones: a control plane logs their names, never their values, and refuses them where
they would travel in the clear (the qemu launcher's user-data settings).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated

from pydantic import StringConstraints

AGENT_SETTING_PREFIXES = ("MEETBOT_AGENT_",)
"""The environment prefixes of the agent's settings."""

AGENT_SETTING_NAME = re.compile(r"^MEETBOT_AGENT_[A-Z0-9_]+$")
"""What a handed-over setting's name looks like."""

MAX_AGENT_SETTING_CHARS = 8192
"""Longest value of one handed-over setting."""

HandedOverSettings = dict[
    Annotated[str, StringConstraints(pattern=AGENT_SETTING_NAME.pattern)],
    Annotated[str, StringConstraints(max_length=MAX_AGENT_SETTING_CHARS)],
]
"""The type of handed-over settings (name → value as in the environment)."""

MACHINE_SETTINGS = frozenset(
    {
        "MEETBOT_AGENT_CHROMIUM_PATH",
        "MEETBOT_AGENT_HEADLESS",
        "MEETBOT_AGENT_DISPLAY",
        "MEETBOT_AGENT_PULSE_SERVER",
        "MEETBOT_AGENT_RUNTIME_SCRIPTS_DIR",
        "MEETBOT_AGENT_DATA_DIR",
        "MEETBOT_AGENT_MODELS_DIR",
    }
)
"""Settings of the machine itself (set by the image's ``/etc/meetbot/agent.env`` and unit)."""

SECRET_SETTINGS = frozenset({"MEETBOT_AGENT_TTS_API_KEY"})
"""Settings whose values are secret: bootstrap exchange only, never logged."""


def handed_over(environ: Mapping[str, str]) -> dict[str, str]:
    """The agent settings in ``environ`` a control plane hands its bots' machines.

    Args:
        environ: The control plane's environment (name → value).

    Returns:
        Every ``MEETBOT_AGENT_*`` variable of a valid name that is not
        one of :data:`MACHINE_SETTINGS`.
    """
    return {
        name: value
        for name, value in environ.items()
        if AGENT_SETTING_NAME.fullmatch(name) and name not in MACHINE_SETTINGS
    }


def described(settings: Mapping[str, str]) -> dict[str, str]:
    """``settings`` fit for a log: each secret value replaced by ``"<secret>"``."""
    return {
        name: "<secret>" if name in SECRET_SETTINGS else value
        for name, value in sorted(settings.items())
    }
