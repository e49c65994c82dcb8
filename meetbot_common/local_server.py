"""An aiohttp application served in-process on local ports, started and stopped as one.

The test meeting (:class:`testmeeting.server.TestMeetingServer`) and the demo's webhook
receiver are such servers: they run inside the process that uses them (a test, a benchmark,
the demo), listen on ports the system picks, and must leave nothing listening when the
``async with`` ends. aiohttp's ``AppRunner`` and ``SockSite`` do the serving; this base holds
the runner between start and stop.
"""

from __future__ import annotations

import socket
import ssl
from abc import ABC, abstractmethod
from typing import Self

from aiohttp import web


class LocalServer(ABC):
    """Base of an in-process server: ``async with`` runs :meth:`start`, then :meth:`stop`.

    A subclass's :meth:`start` hands its application to :meth:`_serve`, then opens its ports
    with :meth:`_listen`. A start that fails half-way is stopped before the error goes on, so
    no port stays open.
    """

    def __init__(self) -> None:
        self._runner: web.AppRunner | None = None

    @abstractmethod
    async def start(self) -> None:
        """Open the server: :meth:`_serve` its application, :meth:`_listen` on each port."""

    async def _serve(self, app: web.Application) -> None:
        """Set ``app`` up (its startup hooks run); :meth:`stop` runs its cleanup."""
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        self._runner = runner

    async def _listen(
        self, host: str, port: int = 0, ssl_context: ssl.SSLContext | None = None
    ) -> int:
        """Accept connections to the application on ``host:port``; returns the port.

        Args:
            host: An IPv4 address to bind, e.g. ``"127.0.0.1"``.
            port: The port; 0 lets the system pick a free one.
            ssl_context: Serve HTTPS with it; plain HTTP when None.

        Raises:
            OSError: The address cannot be bound (e.g. the port is taken).
            RuntimeError: :meth:`_serve` was not called first.
        """
        if self._runner is None:
            raise RuntimeError("serve an application before listening")
        # SO_REUSEADDR (set by create_server on POSIX): a fixed port is free again at once
        # after a previous server on it stopped.
        sock = socket.create_server((host, port), backlog=128)
        sock.setblocking(False)
        try:
            await web.SockSite(self._runner, sock, ssl_context=ssl_context).start()
        except BaseException:
            sock.close()
            raise
        return int(sock.getsockname()[1])

    async def stop(self) -> None:
        """Close every port and run the application's cleanup (idempotent)."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()  # whether or not the block raised
