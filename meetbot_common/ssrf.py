"""The SSRF rules: which URLs a user may name and which addresses a connection may reach.

A webhook URL (the control plane) or a media URL and a shared page (the agent) is chosen by an
API user, so neither side may become a way into its own network. Both enforce these rules, with
their own ``allow_http``/``allow_private`` settings. The rules (docs/api.md 2.8):

* the scheme is ``https`` (``http`` too when ``webhook_allow_http`` is on);
* the host is an IP literal or a valid DNS name (letters, digits and hyphens in labels of 1 to
  63 characters, at most 253 in all, no trailing dot, a top-level label that is not all
  digits): spellings a resolver may read as an address (``127.0.0.1.``, ``%31%32%37.0.0.1``,
  ``2130706433``) are refused at registration;
* every address the host resolves to must be global unicast: loopback, private, link-local,
  shared (CGNAT), multicast, reserved and unspecified addresses are refused unless
  ``webhook_allow_private`` is on; so are the IPv6 forms that embed an IPv4 address and may be
  routed to it by a gateway — IPv4-mapped (``::ffff:0:0/96``), IPv4-compatible (``::/96``),
  6to4 (``2002::/16``), NAT64 (``64:ff9b::/96``, ``64:ff9b:1::/48``) and Teredo
  (``2001::/32``); with ``webhook_allow_private`` the embedded IPv4 address is judged instead;
* the check runs when the connection is made (:class:`GuardedResolver` sits inside aiohttp's
  connector and DNS caching is off), so a name that resolved to a public address when the
  endpoint was saved and to ``127.0.0.1`` later (DNS rebinding) is still refused;
* redirects are never followed and each attempt has a 15 s total timeout (:func:`client_session`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

DELIVERY_TIMEOUT_SECONDS = 15.0


class TargetRefused(OSError):
    """The URL's scheme or an address its host resolves to is not allowed.

    It subclasses :class:`OSError` because aiohttp only wraps resolver ``OSError`` s into its
    connection errors; the message names the reason, never the payload.
    """


@dataclass(frozen=True, slots=True)
class TargetPolicy:
    """What delivery may reach: ``allow_http`` (plain HTTP) and ``allow_private`` addresses."""

    allow_http: bool = False
    allow_private: bool = False


_EMBEDDING_PREFIXES = tuple(
    ipaddress.IPv6Network(prefix)
    for prefix in ("::/96", "64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "2001::/32")
)
"""IPv6 ranges whose addresses carry an IPv4 address a gateway may route to (see the module
docstring); IPv4-mapped addresses are unwrapped instead."""
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_MAX_NAME = 253


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv4-embedding IPv6 address carries (empty for others)."""
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    if any(ip in prefix for prefix in _EMBEDDING_PREFIXES):
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    return []


def address_allowed(address: str, policy: TargetPolicy) -> bool:
    """Whether an IP address (v4 or v6 text) may be connected to under ``policy``."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif not ip.is_unspecified and not ip.is_loopback:
            embedded = _embedded_ipv4(ip)
            if embedded:
                return policy.allow_private and all(
                    address_allowed(str(inner), policy) for inner in embedded
                )
    if policy.allow_private:
        return not ip.is_unspecified and not ip.is_multicast
    return ip.is_global and not ip.is_multicast and not ip.is_reserved


def valid_dns_name(host: str) -> bool:
    """Whether ``host`` (as yarl gives it: lower case, IDNA-encoded) is a valid DNS name."""
    if not host or len(host) > _MAX_NAME:
        return False
    labels = host.split(".")
    # fullmatch: ``$`` of ``match`` also matches before a trailing newline ('example\n').
    if not all(_LABEL.fullmatch(label) for label in labels):
        return False
    return not labels[-1].isdigit()


def check_url(url: str, policy: TargetPolicy) -> URL:
    """Check the parts of ``url`` that need no DNS: scheme, host, and a literal IP host.

    Returns:
        The parsed URL.

    Raises:
        TargetRefused: Wrong scheme, no host, credentials in the URL, or a refused IP literal.
    """
    parsed = URL(url)
    allowed_schemes = {"https", "http"} if policy.allow_http else {"https"}
    if parsed.scheme not in allowed_schemes:
        raise TargetRefused(f"scheme must be one of {sorted(allowed_schemes)}")
    if not parsed.host:
        raise TargetRefused("URL has no host")
    if parsed.user is not None or parsed.password is not None:
        raise TargetRefused("credentials in the URL are not accepted")
    host = parsed.host.strip("[]")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not valid_dns_name(parsed.raw_host or ""):
            raise TargetRefused("host is not a valid DNS name") from None
        return parsed
    if not address_allowed(host, policy):
        raise TargetRefused("address not allowed")
    return parsed


async def resolve_checked(host: str, port: int, policy: TargetPolicy) -> list[str]:
    """Resolve ``host`` and refuse it when any of its addresses is not allowed.

    Returns:
        The resolved addresses (text), in resolver order.

    Raises:
        TargetRefused: An address is refused, or the name resolves to nothing.
        OSError: Name resolution failed.
    """
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses = [str(info[4][0]) for info in infos]
    if not addresses:
        raise TargetRefused("host resolves to no address")
    if not all(address_allowed(address, policy) for address in addresses):
        # All-or-nothing: a name with one internal address is an internal name.
        raise TargetRefused("host resolves to an address that is not allowed")
    return addresses


async def check_target(url: str, policy: TargetPolicy) -> URL:
    """Full check of a URL as delivery would make it (scheme, then every resolved address).

    Raises:
        TargetRefused: The URL is refused.
        OSError: Name resolution failed.
    """
    parsed = check_url(url, policy)
    await resolve_checked((parsed.host or "").strip("[]"), parsed.port or 443, policy)
    return parsed


class GuardedResolver(AbstractResolver):
    """aiohttp resolver that resolves through the system and applies :func:`resolve_checked`.

    aiohttp hands IP-literal hosts past the resolver, so callers also run :func:`check_url`
    before each request (as :func:`client_session` users do through :func:`check_url`).
    """

    def __init__(self, policy: TargetPolicy) -> None:
        self._policy = policy

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """Resolve ``host`` to allowed addresses only (raises :class:`TargetRefused`)."""
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(
            host, port, family=family, type=socket.SOCK_STREAM, flags=socket.AI_ADDRCONFIG
        )
        results: list[ResolveResult] = []
        for fam, _, proto, _, sockaddr in infos:
            address = str(sockaddr[0])
            if not address_allowed(address, self._policy):
                raise TargetRefused("host resolves to an address that is not allowed")
            results.append(
                ResolveResult(
                    hostname=host,
                    host=address,
                    port=int(sockaddr[1]),
                    family=fam,
                    proto=proto,
                    flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
                )
            )
        if not results:
            raise TargetRefused("host resolves to no address")
        return results

    async def close(self) -> None:
        """Nothing to release: resolution goes through the event loop's ``getaddrinfo``."""


def client_session(policy: TargetPolicy) -> aiohttp.ClientSession:
    """An HTTP session for deliveries: guarded resolver, no DNS cache, 15 s total timeout.

    Callers pass ``allow_redirects=False`` on each request (aiohttp has no session-wide switch)
    and run :func:`check_url` first; a 3xx answer counts as a failed attempt.
    """
    connector = aiohttp.TCPConnector(
        resolver=GuardedResolver(policy), use_dns_cache=False, limit=100, limit_per_host=10
    )
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=DELIVERY_TIMEOUT_SECONDS),
        auto_decompress=False,
        # A receiver must not be able to set cookies that later requests to others carry.
        cookie_jar=aiohttp.DummyCookieJar(),
    )
