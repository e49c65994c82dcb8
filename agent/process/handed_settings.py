"""Host settings with those the control plane handed over (``BotConfig.agent_settings``) on top.

A bot on its own machine gets the operator's agent settings in the bootstrap exchange's answer
(:mod:`agent.contracts.agent_settings`), as environment-style text: ``name → value``. They are
applied to a settings class the way its environment would be (a JSON list for a list field,
``true``/``1`` for a bool, …) and win over the machine's environment; they are never put into
the process environment, so Chromium, ffmpeg and the driver do not inherit a secret.
The machine's own settings (:data:`~agent.contracts.agent_settings.MACHINE_SETTINGS`) stay the
machine's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic_settings import BaseSettings, EnvSettingsSource

from agent.contracts.agent_settings import MACHINE_SETTINGS

S = TypeVar("S", bound=BaseSettings)


def _fields(cls: type[BaseSettings], handed: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Field name → (setting name, text) of the ``handed`` settings that belong to ``cls``."""
    prefix = str(cls.model_config.get("env_prefix", ""))
    found: dict[str, tuple[str, str]] = {}
    for name, text in handed.items():
        if not name.startswith(prefix) or name in MACHINE_SETTINGS:
            continue
        field = name.removeprefix(prefix).lower()
        if field in cls.model_fields:
            found[field] = (name, text)
    return found


def with_handed(cls: type[S], handed: Mapping[str, str]) -> S:
    """``cls()`` read from the environment, with ``handed``'s settings of ``cls`` winning.

    Args:
        cls: A settings class (its ``env_prefix`` picks the names that are its own).
        handed: The handed-over settings (``BotConfig.agent_settings``).

    Raises:
        pydantic.ValidationError: A handed-over (or environment) value is invalid.
    """
    source = EnvSettingsSource(cls)
    values: dict[str, Any] = {}
    for field, (_, text) in _fields(cls, handed).items():
        info = cls.model_fields[field]
        values[field] = source.prepare_field_value(field, info, text, source.field_is_complex(info))
    return cls(**values)


def unused(handed: Mapping[str, str], *classes: type[BaseSettings]) -> list[str]:
    """The names in ``handed`` that none of ``classes`` takes (unknown or the machine's)."""
    taken = {name for cls in classes for name, _ in _fields(cls, handed).values()}
    return sorted(set(handed) - taken)
