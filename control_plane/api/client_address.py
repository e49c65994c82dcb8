"""Which client sent a request: the TCP peer, or what the trusted proxies in front say it is.

Behind a load balancer every request arrives from the balancer's address, so per-address limits
(:mod:`control_plane.auth.ratelimit`) would lump every client together. The proxies listed in
``trusted_proxies`` (setting ``MEETBOT_TRUSTED_PROXIES``) are believed about the client:

- A request whose TCP peer is not a trusted proxy comes from that peer; its ``Forwarded`` and
  ``X-Forwarded-For`` headers are ignored (anyone can send them).
- From a trusted proxy, the hops it forwards are read from ``Forwarded`` (RFC 7239, each
  element's ``for=``), or without that header from ``X-Forwarded-For``, and walked from the
  nearest (last) one back: the first hop that is not a trusted proxy is the client. A hop
  that is no IP address (``unknown``, an obfuscated ``_name``) ends the walk at the last
  address known; with every hop trusted, the farthest one is the client.

Only the right-hand hops were written by proxies we trust; what lies left of the first
untrusted hop came from the client and is never believed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

from aiohttp import hdrs, web

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_hop(value: str) -> IPAddress | None:
    """The address of one forwarded hop, or None when it is none.

    Accepts ``192.0.2.1``, ``192.0.2.1:4711``, ``2001:db8::1``, ``[2001:db8::1]`` and
    ``[2001:db8::1]:4711`` (quotes already removed or not).
    """
    text = value.strip().strip('"').strip()
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        text = text[1:end]
    elif text.count(":") == 1:  # IPv4 with a port
        text = text.split(":", 1)[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(address: IPAddress, proxies: Sequence[IPNetwork]) -> bool:
    return any(address.version == net.version and address in net for net in proxies)


def forwarded_hops(request: web.BaseRequest) -> list[str]:
    """The ``for=`` hops of ``Forwarded``, else the entries of ``X-Forwarded-For``, in order."""
    if hdrs.FORWARDED in request.headers:
        return [element["for"] for element in request.forwarded if "for" in element]
    hops: list[str] = []
    for header in request.headers.getall(hdrs.X_FORWARDED_FOR, []):
        hops.extend(part for part in header.split(",") if part.strip())
    return hops


def client_of(peer: str | None, hops: Iterable[str], proxies: Sequence[IPNetwork]) -> str:
    """The client's address given the TCP ``peer``, the forwarded ``hops`` and the proxies.

    Returns:
        The address as text (``""`` when aiohttp knows no peer, e.g. a Unix socket); see the
        module docstring for the rule.
    """
    peer_address = parse_hop(peer) if peer else None
    if peer_address is None or not _trusted(peer_address, proxies):
        return str(peer_address) if peer_address is not None else (peer or "")
    client = peer_address
    for hop in reversed(list(hops)):
        address = parse_hop(hop)
        if address is None:
            break
        client = address
        if not _trusted(address, proxies):
            break
    return str(client)


def client_address(request: web.BaseRequest, proxies: Sequence[IPNetwork]) -> str:
    """The request's client address under ``proxies`` (the ``trusted_proxies`` setting)."""
    if not proxies:
        return request.remote or ""
    return client_of(request.remote, forwarded_hops(request), proxies)
