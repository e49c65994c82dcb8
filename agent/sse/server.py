"""The agent's SSE endpoint: ``GET /stream`` with ``Authorization: Bearer <stream token>``.

The token is the short-lived JWT minted by the control plane's ``subscribe``
(docs/architecture.md §6,
docs/api.md 2.7): EdDSA over Ed25519, ``aud`` "bot-stream", ``sub`` this bot's id, ``exp`` required.
A missing, malformed, expired or other-bot token answers 401. Events carry ``id:``; a client
sending ``Last-Event-ID: n`` gets every event after ``n`` first. A ``: ping`` comment goes out
every ``ping_seconds``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import jwt
from aiohttp import web
from aiohttp_sse import sse_response

from agent.contracts.wire import (
    AUTHORIZATION_HEADER,
    BEARER_SCHEME,
    STREAM_ALGORITHM,
    STREAM_AUDIENCE,
    STREAM_PATH,
    STREAM_REQUIRED_CLAIMS,
)
from agent.sse.log import EventLog

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StreamAuth:
    """How tokens are checked: the bot they must name and the key that signs them."""

    bot_id: str
    public_key_pem: str | None


EVENT_LOG_KEY = web.AppKey("event_log", EventLog)
AUTH_KEY = web.AppKey("stream_auth", StreamAuth)
PING_KEY = web.AppKey("ping_seconds", float)

routes = web.RouteTableDef()


def _unauthorized(detail: str) -> web.HTTPUnauthorized:
    return web.HTTPUnauthorized(
        text=f'{{"code": "invalid_stream_token", "detail": "{detail}"}}',
        content_type="application/json",
        headers={"WWW-Authenticate": 'Bearer realm="bot-stream"'},
    )


def verify_stream_token(auth: StreamAuth, header: str | None) -> None:
    """Check an ``Authorization`` header value against ``auth``.

    Raises:
        web.HTTPUnauthorized: No bearer token, a bad signature, wrong audience, expired, or a
            ``sub`` naming another bot. Also when the agent has no public key configured.
    """
    prefix = f"{BEARER_SCHEME} "
    if not header or not header.startswith(prefix):
        raise _unauthorized("bearer token required")
    if not auth.public_key_pem:
        raise _unauthorized("this agent has no stream key")
    token = header.removeprefix(prefix).strip()
    try:
        claims = jwt.decode(
            token,
            auth.public_key_pem,
            algorithms=[STREAM_ALGORITHM],
            audience=STREAM_AUDIENCE,
            options={"require": list(STREAM_REQUIRED_CLAIMS)},
        )
    except jwt.ExpiredSignatureError as exc:
        raise _unauthorized("token expired") from exc
    except jwt.InvalidTokenError as exc:
        raise _unauthorized("invalid token") from exc
    if claims.get("sub") != auth.bot_id:
        raise _unauthorized("token is for another bot")


@routes.get(STREAM_PATH)
async def stream(request: web.Request) -> web.StreamResponse:
    """Stream the bot's events (see the module docstring)."""
    verify_stream_token(request.app[AUTH_KEY], request.headers.get(AUTHORIZATION_HEADER))
    last_id_header = request.headers.get("Last-Event-ID", "").strip()
    after = int(last_id_header) if last_id_header.isdigit() else 0
    events = request.app[EVENT_LOG_KEY]
    # LF line ends (aiohttp-sse defaults to CRLF): both are valid SSE, but clients that split
    # events on a blank line "\n\n" only understand LF.
    async with sse_response(request, sep="\n", ping_interval=request.app[PING_KEY]) as response:
        log.info("stream client connected", extra={"after": after})
        async for item in events.follow(after):
            await response.send(item.data, id=str(item.id), event=item.event)
    return response


@routes.get("/healthz")
async def healthz(_request: web.Request) -> web.Response:
    """Liveness of the agent's HTTP server."""
    return web.json_response({"ok": True})


def create_sse_app(
    events: EventLog, auth: StreamAuth, ping_seconds: float = 15.0
) -> web.Application:
    """Build the agent's SSE application.

    Args:
        events: The meeting's event log.
        auth: The bot id tokens must name and the PEM Ed25519 public key that verifies them.
        ping_seconds: Interval of ``: ping`` comments.
    """
    app = web.Application()
    app[EVENT_LOG_KEY] = events
    app[AUTH_KEY] = auth
    app[PING_KEY] = ping_seconds
    app.add_routes(routes)
    return app


class SseServer:
    """Runs :func:`create_sse_app` on a TCP port; ``url`` is the stream URL to register."""

    def __init__(
        self, app: web.Application, host: str, port: int, public_base_url: str = ""
    ) -> None:
        self._app = app
        self._host = host
        self._port = port
        self._public_base_url = public_base_url.rstrip("/")
        self._runner: web.AppRunner | None = None
        self.bound_port: int | None = None

    async def start(self) -> None:
        """Bind and serve; sets :attr:`bound_port`."""
        # The stream responses end when the event log closes; a short shutdown timeout keeps a
        # stalled client from holding the agent's exit.
        self._runner = web.AppRunner(self._app, shutdown_timeout=2.0, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        addresses = self._runner.addresses
        self.bound_port = int(addresses[0][1]) if addresses else self._port

    @property
    def url(self) -> str:
        """The stream URL clients open (``{base}/stream``)."""
        base = self._public_base_url or f"http://{self._host}:{self.bound_port}"
        return f"{base}{STREAM_PATH}"

    async def stop(self) -> None:
        """Stop serving and close open streams."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
