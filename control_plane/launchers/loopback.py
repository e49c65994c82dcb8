"""A control-plane URL on a loopback host, as a bot on another machine must use it.

A loopback ``MEETBOT_PUBLIC_URL`` (``127.0.0.1``, ``localhost``, ``::1``) names this machine to
this machine only. A bot on a VM reaches it at another address: the qemu launcher's user-mode
network shows this host's loopback as ``10.0.2.2`` (:mod:`control_plane.launchers.qemu`), and an
upload slot goes wherever the agent's request for it came through
(:mod:`control_plane.agent_link.endpoint`). Both rewrite the URL here.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""The host names a URL may give for this machine's loopback."""


def off_loopback(url: str, host: str, *, keep_port: bool) -> str:
    """``url`` with a loopback host replaced by ``host``; any other ``url`` unchanged.

    Args:
        url: An absolute URL of the control plane.
        host: Where the other machine reaches this one: an address (``10.0.2.2``) with
            ``keep_port``, else a whole network location as a request's ``Host`` names it
            (``10.0.2.2:8080``; no port means the scheme's default).
        keep_port: Keep ``url``'s port after ``host`` (the address of this host as a VM sees
            it serves the same ports).
    """
    parts = urlsplit(url)
    if parts.hostname not in LOOPBACK_HOSTS:
        return url
    netloc = host if not keep_port or parts.port is None else f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))
