"""The ``BotLauncher`` seam: start one bot VM (or process) per bot, stop it, ask if it lives.

The caller (bot service, scheduler) owns retries, timeouts and status changes; a launcher does
the one thing. A launch that cannot happen raises :class:`LaunchError`; the caller marks the bot
``failed`` with ``status_reason`` ``launch_failed``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Protocol, runtime_checkable
from uuid import UUID

from aiohttp import web

from agent.contracts.bot_config import BotConfig


@dataclass(frozen=True)
class LaunchHandle:
    """The launcher's id of what it started (the bot record's ``bot_container_id``)."""

    id: str


class LaunchError(Exception):
    """The launcher could not start the bot (no capacity, provider refused, …)."""


class BotLauncher(Protocol):
    """Starts and stops bots.

    Implementations (:data:`control_plane.launchers.LAUNCHER_MODULES`): ``local`` (an agent
    subprocess on this machine), ``qemu`` (a VM per bot from the bot image), ``ec2`` (an
    instance per bot), ``kubernetes`` (a Pod per bot), ``memory`` (tests). Those that boot a
    machine also implement :class:`Bootstrapping`; those that can list their machines,
    :class:`Listing` (docs/architecture.md §4, §16).
    """

    async def launch(self, config: BotConfig) -> LaunchHandle:
        """Start a bot with ``config``; returns once the VM/process is started.

        Raises:
            LaunchError: It could not be started.
        """
        ...

    async def terminate(self, handle: LaunchHandle) -> None:
        """Stop what ``handle`` names; a no-op when it is already gone."""
        ...

    async def is_alive(self, handle: LaunchHandle) -> bool:
        """Whether what ``handle`` names is still running."""
        ...

    async def aclose(self) -> None:
        """Release the launcher's resources at application shutdown."""
        ...


@runtime_checkable
class Reconciling(Protocol):
    """A launcher whose VMs outlive the control plane and are reconciled at its start."""

    async def reconcile(self, live_bot_ids: Collection[UUID]) -> list[str]:
        """Stop what runs for bots not in ``live_bot_ids``; return the handle ids stopped."""
        ...


@runtime_checkable
class Listing(Protocol):
    """A launcher that lists its machines, for the reconciliation loop.

    ``control_plane.agent_link.reconciler`` compares the list with the live bots: machines
    without a live bot are terminated, live bots whose machine is missing fail ``agent_lost``.
    """

    async def machines(self) -> dict[str, UUID]:
        """This fleet's machines that are not gone (starting or running): handle id → bot id.

        Raises:
            LaunchError: The provider could not be asked (the caller tries again later).
        """
        ...


@runtime_checkable
class GrantKeeper(Protocol):
    """A launcher that keeps a bot's bootstrap grant somewhere to delete once it is used."""

    async def grant_used(self, bot_id: UUID) -> None:
        """Delete ``bot_id``'s stored grant: its token was exchanged (the bootstrap route).

        Raises:
            LaunchError: The grant could not be deleted.
        """
        ...


BootstrapIssuer = Callable[[BotConfig], Awaitable[str]]
"""Stores a one-time bootstrap token for a bot's config and returns it (the control plane's
``BootstrapTokens.issue``); the config is given as the machine must see it."""


@runtime_checkable
class Bootstrapping(Protocol):
    """A launcher that boots a machine per bot and hands it a bootstrap token, not its config.

    The machine's user-data carries the control-plane URL, the bot id and the token
    (``agent.contracts.bootstrap.BootstrapGrant``); the machine trades the token for the
    ``BotConfig`` once (docs/architecture.md §5). The control plane gives the launcher its
    issuer when it starts.
    """

    def use_bootstrap(self, issue: BootstrapIssuer) -> None:
        """Mint bootstrap tokens with ``issue`` from now on."""
        ...


LAUNCHER = web.AppKey("launcher", BotLauncher)
"""The application's bot launcher."""
