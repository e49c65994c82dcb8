"""Bot launchers: one module per implementation, chosen by ``Settings.launcher``.

The ``BotLauncher`` seam is docs/architecture.md §4.

Each implementation module exposes ``create(settings: Settings) -> BotLauncher``;
:data:`LAUNCHER_MODULES` maps the setting's value to that module, imported only when chosen.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import MappingProxyType
from typing import cast

from control_plane.launchers.base import BotLauncher
from control_plane.settings import Settings

LAUNCHER_MODULES = MappingProxyType(
    {
        "local": "control_plane.launchers.local",
        "memory": "control_plane.launchers.memory",
        "qemu": "control_plane.launchers.qemu",
        "ec2": "control_plane.launchers.ec2",
        "kubernetes": "control_plane.launchers.kubernetes",
    }
)


def create_launcher(settings: Settings) -> BotLauncher:
    """Build the launcher named by ``settings.launcher``.

    Raises:
        KeyError: No launcher of that name.
    """
    module = importlib.import_module(LAUNCHER_MODULES[settings.launcher])
    factory = cast(Callable[[Settings], BotLauncher], module.create)
    return factory(settings)
