"""The shared page's one way out: a local forward proxy that checks every connection it makes.

A page a ``screen_share`` command names is chosen by an API user and rendered on the bot's
host, so none of its connections may reach what the SSRF rules (:mod:`meetbot_common.ssrf`)
refuse. ``page.route`` cannot guard that: it does not see redirect hops, WebSockets or service
workers, and the browser resolves names again after a route's check. So the share's browser
context sends everything through :class:`GuardedProxy` (Playwright's per-context ``proxy``,
:func:`share_proxy`), and the browser resolves nothing itself:

- ``CONNECT host:port`` (HTTPS, and every WebSocket: Chromium tunnels ``ws:`` and ``wss:``
  through an HTTP proxy) opens a tunnel to a checked address; TLS stays end to end;
- an absolute-form request (``GET http://host/…``, only when the policy allows ``http``) is
  forwarded in origin form with ``Connection: close``, so every request opens (and checks)
  a connection of its own.

For each connection the host is resolved once (or is an IP literal), refused (403) unless every
address is allowed, and the connection goes to an address of that answer: a name that changes
its answer between a check and the connection (DNS rebinding) cannot lead elsewhere. Chromium
sends loopback destinations around a proxy unless told otherwise; :func:`share_proxy` lists
``<-loopback>`` so they come here too. Refusals are logged with the host, never the path.

What no HTTP proxy carries is UDP: WebRTC (ICE to any address) and WebTransport. The share's
context has no such API (:func:`without_udp` removes them from every frame before its scripts
run); the bot's Chromium runs with ``--disable-quic`` as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from playwright.async_api import BrowserContext, ProxySettings

from meetbot_common.ssrf import TargetPolicy, TargetRefused, address_allowed, valid_dns_name

log = logging.getLogger(__name__)

HEAD_LIMIT_BYTES = 16 * 1024
"""Longest request head (request line and headers) the proxy reads."""
HEAD_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0
CLOSE_WAIT_S = 2.0
_CHUNK = 64 * 1024
_HOP_HEADERS = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer"}
)

Lookup = Callable[[str, int], Awaitable[list[str]]]
"""Resolves ``(host, port)`` to addresses (text)."""
Dial = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
"""Opens a TCP connection to ``(address, port)``."""


def share_proxy(url: str) -> ProxySettings:
    """The ``proxy`` option that sends every connection of a context through ``url``.

    ``<-loopback>`` removes Chromium's implicit bypass of ``localhost``, ``127.0.0.1`` and
    ``[::1]`` (Chromium's proxy bypass rules, net/proxy_resolution/proxy_bypass_rules.h).
    Playwright adds it as well unless ``PLAYWRIGHT_DISABLE_FORCED_CHROMIUM_PROXIED_LOOPBACK``
    is set (playwright-core crBrowser.ts, ``shouldProxyLoopback``); naming it here keeps it
    whatever the environment says.
    """
    return {"server": url, "bypass": "<-loopback>"}


UDP_APIS = (
    "RTCPeerConnection",
    "webkitRTCPeerConnection",
    "RTCDataChannel",
    "RTCIceTransport",
    "WebTransport",
)
"""Page APIs that open connections a proxy does not carry (UDP)."""

_WITHOUT_UDP = """(() => {
  for (const name of %s) {
    try { delete globalThis[name]; } catch (e) {}
    try {
      Object.defineProperty(
        globalThis, name, {value: undefined, writable: false, configurable: false});
    } catch (e) {}
  }
})();"""


async def without_udp(context: BrowserContext) -> None:
    """Remove :data:`UDP_APIS` from every frame of ``context`` before the frame's own scripts.

    Raises:
        playwright.async_api.Error: The context is closed.
    """
    names = "[" + ", ".join(f'"{name}"' for name in UDP_APIS) + "]"
    await context.add_init_script(_WITHOUT_UDP % names)


async def system_lookup(host: str, port: int) -> list[str]:
    """The system resolver's addresses of ``host`` (the event loop's ``getaddrinfo``)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def _open(address: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(address, port)


async def checked_addresses(
    host: str, port: int, policy: TargetPolicy, lookup: Lookup = system_lookup
) -> list[str]:
    """The addresses to connect to for ``host``, every one allowed by ``policy``.

    Args:
        host: A DNS name or an IP literal (IPv6 without brackets).
        port: The destination port.
        policy: Which addresses may be reached.
        lookup: The resolver (one call per connection).

    Raises:
        TargetRefused: An invalid name, a refused literal, a name with a refused address or
            with none.
        OSError: Name resolution failed.
    """
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not valid_dns_name(host.lower()):
            raise TargetRefused("host is not a valid DNS name") from None
    else:
        if not address_allowed(host, policy):
            raise TargetRefused("address not allowed")
        return [host]
    addresses = await lookup(host, port)
    if not addresses:
        raise TargetRefused("host resolves to no address")
    if not all(address_allowed(address, policy) for address in addresses):
        raise TargetRefused("host resolves to an address that is not allowed")
    return addresses


class _Refusal(Exception):
    """The request gets ``status`` and the connection ends; ``reason`` is logged."""

    def __init__(self, status: int, reason: str, host: str = "") -> None:
        super().__init__(reason)
        self.status = status
        self.host = host


_REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
}


class GuardedProxy:
    """A forward proxy on ``127.0.0.1`` whose every upstream connection passes ``policy``.

    Use as ``async with GuardedProxy(policy) as proxy:`` and give the browser context
    :func:`share_proxy` of :attr:`url`. It owns the task of every client connection and ends
    them when it closes.

    Args:
        policy: Which schemes (``http``) and addresses the page may reach.
        lookup: The resolver (default: the system's); tests give one of their own.
        dial: Opens the upstream connection to a checked address (default: TCP); tests may
            route an address elsewhere.
    """

    def __init__(
        self, policy: TargetPolicy, *, lookup: Lookup = system_lookup, dial: Dial = _open
    ) -> None:
        self._policy = policy
        self._lookup = lookup
        self._dial = dial
        self._server: asyncio.Server | None = None
        # Each client connection's task and its writer (closing the writer ends the task).
        self._clients: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self.refused = 0
        # Connections that ended without an answer: the browser closed or reset them.
        self.dropped = 0

    @property
    def url(self) -> str:
        """``http://127.0.0.1:{port}`` of the running proxy.

        Raises:
            RuntimeError: It is not running.
        """
        if self._server is None:
            raise RuntimeError("the egress proxy is not running")
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def start(self) -> None:
        """Listen on a free port of ``127.0.0.1``."""
        if self._server is None:
            self._server = await asyncio.start_server(
                self._serve, "127.0.0.1", 0, limit=HEAD_LIMIT_BYTES
            )

    async def close(self) -> None:
        """Stop listening and end every connection (their tasks awaited).

        A connection ends by closing its sockets, which its copying loops read as the end;
        one that has not ended after :data:`CLOSE_WAIT_S` is cancelled.
        """
        server, self._server = self._server, None
        if server is not None:
            server.close()
        tasks = list(self._clients)
        for writer in self._clients.values():
            writer.close()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=CLOSE_WAIT_S)
            for task in pending:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    async def __aenter__(self) -> GuardedProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._clients[task] = writer
        try:
            await self._handle(reader, writer)
        except _Refusal as refusal:
            self.refused += 1
            log.info(
                "shared page connection refused",
                extra={"host": refusal.host[:100], "reason": str(refusal)},
            )
            reason = _REASONS.get(refusal.status, "Error")
            with contextlib.suppress(OSError):
                writer.write(
                    f"HTTP/1.1 {refusal.status} {reason}\r\nContent-Length: 0\r\n"
                    "Connection: close\r\n\r\n".encode()
                )
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError) as exc:
            # The browser closed or reset the connection: nothing to answer, but counted.
            self.dropped += 1
            log.debug("shared page connection dropped", extra={"error": type(exc).__name__})
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            if task is not None:
                self._clients.pop(task, None)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        except TimeoutError as exc:
            raise _Refusal(400, "no request head in time") from exc
        except asyncio.LimitOverrunError as exc:
            raise _Refusal(431, "request head over the stream limit") from exc
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _Refusal(400, "not an HTTP/1.x request")
        method, target, version = parts
        if method == "CONNECT":
            host, port = _authority(target)
            upstream = await self._connect(host, port)
            writer.write(f"{version} 200 Connection Established\r\n\r\n".encode())
            await writer.drain()
            await _relay(reader, writer, *upstream)
            return
        try:
            url = urlsplit(target)
            port = url.port or 80
        except ValueError as exc:  # a port out of range or not a number
            raise _Refusal(400, "bad request target") from exc
        if url.scheme != "http" or not url.hostname:
            raise _Refusal(400, "only CONNECT and absolute http:// requests are served")
        if not self._policy.allow_http:
            raise _Refusal(403, "plain http is not allowed", url.hostname)
        if url.username is not None or url.password is not None:
            raise _Refusal(403, "credentials in the URL are not accepted", url.hostname)
        upstream = await self._connect(url.hostname, port)
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        upgrade = any(line.lower().startswith("upgrade:") for line in lines[1:])
        kept = [
            line
            for line in lines[1:]
            if line and line.split(":", 1)[0].strip().lower() not in _HOP_HEADERS
        ]
        kept.append("Connection: Upgrade" if upgrade else "Connection: close")
        forwarded = "\r\n".join([f"{method} {path} {version}", *kept]) + "\r\n\r\n"
        upstream[1].write(forwarded.encode("latin-1"))
        await _relay(reader, writer, *upstream)

    async def _connect(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to an allowed address of ``host`` (the first that answers)."""
        try:
            addresses = await checked_addresses(host, port, self._policy, self._lookup)
        except TargetRefused as exc:
            raise _Refusal(403, str(exc), host) from exc
        except OSError as exc:
            raise _Refusal(502, "name not resolved", host) from exc
        for address in addresses:
            with contextlib.suppress(OSError, TimeoutError):
                return await asyncio.wait_for(self._dial(address, port), CONNECT_TIMEOUT_S)
        raise _Refusal(502, "no address answered", host)


def _authority(target: str) -> tuple[str, int]:
    """``host`` (IPv6 unbracketed) and ``port`` of a CONNECT target ``host:port``."""
    try:
        parsed = urlsplit("//" + target)
        host, port = parsed.hostname, parsed.port
    except ValueError as exc:
        raise _Refusal(400, "bad CONNECT target") from exc
    if not host or port is None:
        raise _Refusal(400, "bad CONNECT target")
    return host, port


async def _relay(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream_writer: asyncio.StreamWriter,
) -> None:
    """Copy both ways until either side ends, then close both."""
    try:
        await asyncio.gather(
            _copy(client_reader, upstream_writer), _copy(upstream_reader, client_writer)
        )
    finally:
        upstream_writer.close()
        with contextlib.suppress(OSError):
            await upstream_writer.wait_closed()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()  # the other direction then reads its end
