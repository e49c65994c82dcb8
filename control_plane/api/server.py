"""Serving the app so that aiohttp's own early errors are problem+json too.

Errors of the HTTP parser (a request line or header field over 8,190 bytes, a malformed request
line or header, a bad chunk) are answered by aiohttp before any middleware runs, as
``400 text/plain`` echoing the request line, with a logged traceback. :class:`ApiRunner` serves
the app through a request handler whose ``handle_error`` answers such a 4xx as problem+json
(docs/api.md 2.1: 400 ``bad_request``, or ``request_too_long`` for an overlong line) without
echoing the request, and logs one line without a traceback. 5xx keep aiohttp's handling.

:func:`run_api` is what ``meetbot serve`` runs: the runner, one TCP site, until SIGINT/SIGTERM.
Once the app is set up, what exists is frozen out of the garbage collector's sight
(``gc.freeze``): a full collection then skips the ~150,000 objects of the imports and the
app's start, which cost it 50-130 ms every time, a pause that every agent link's frames share.
The youngest generation is then collected every :data:`YOUNG_GC_THRESHOLD` allocations instead
of Python's 700: a frame's objects (its JSON, its rows, its futures) live a few milliseconds,
and at 700 a thousand links' frames in flight were caught alive, promoted and left for the old
generation, whose growth is what triggers the full collections. ``bench/fleet.py`` with 1,000
agents: collections took 0.8 s of a 60 s run (four full ones of up to 51 ms) at 700, 0.19 s
(none full, the longest 53 ms) at 20,000; frame-to-stored p99 fell from 114-158 to 98-112 ms.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal

from aiohttp import web
from aiohttp.http_exceptions import LineTooLong
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from control_plane.errors import DomainError, Problem

log = logging.getLogger(__name__)

YOUNG_GC_THRESHOLD = 20_000
"""Allocations between two collections of the youngest generation (CPython's default: 700)."""


def early_problem(status: int, exc: BaseException | None) -> Problem:
    """The problem+json body of a parser error (never echoes the request)."""
    if isinstance(exc, LineTooLong):
        code, detail = "request_too_long", "a request line or header field is too long"
    else:
        code, detail = "bad_request", "the HTTP request is malformed"
    error = DomainError(detail, code=code)
    error.status = status  # type: ignore[misc]  # per-instance status of a parser error
    return error.problem()


class _ProblemRequestHandler(RequestHandler):
    """aiohttp's request handler with parser errors (4xx) answered as problem+json."""

    __slots__ = ()

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """Answer a 4xx parser error with problem+json; defer anything else to aiohttp."""
        if status >= 500 or status < 400:
            return super().handle_error(request, status, exc, message)
        log.info(
            "malformed request refused",
            extra={"status": status, "error": type(exc).__name__ if exc else None},
        )
        if request.writer.output_size > 0:
            raise ConnectionError("response already started; cannot answer the error")
        response = web.Response(
            status=status,
            text=early_problem(status, exc).model_dump_json(exclude_none=True),
            content_type="application/problem+json",
        )
        response.force_close()
        return response


class _ProblemServer(web.Server):
    """A :class:`web.Server` whose connections use :class:`_ProblemRequestHandler`."""

    def __call__(self) -> RequestHandler:
        handler = super().__call__()
        handler.__class__ = _ProblemRequestHandler
        return handler


class ApiRunner(web.AppRunner):
    """An :class:`web.AppRunner` answering parser errors as problem+json (module docstring)."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _ProblemServer
        return server


def run_api(app: web.Application, *, host: str, port: int) -> None:
    """Serve ``app`` on ``host:port`` through :class:`ApiRunner` until SIGINT or SIGTERM."""

    async def main() -> None:
        runner = ApiRunner(app, access_log=None)
        await runner.setup()
        gc.collect()  # the start's garbage goes now, not into the frozen set
        gc.freeze()
        _, middle, old = gc.get_threshold()
        gc.set_threshold(YOUNG_GC_THRESHOLD, middle, old)
        try:
            await web.TCPSite(runner, host, port).start()
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
            await stop.wait()
        finally:
            await runner.cleanup()

    asyncio.run(main())
