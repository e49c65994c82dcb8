"""The check a URL the bot will fetch must pass: the webhook SSRF rules (docs/api.md 2.8).

A speak command's ``audio_url`` (and any other media URL a live command hands the bot) is chosen
by an API user, and the bot fetches it from its own network, so it gets the same rules as a
webhook endpoint: ``https`` (``http`` with ``webhook_allow_http``), no credentials, a valid
host, and no address that is loopback, private, link-local, shared, multicast, reserved or an
IPv4-embedding IPv6 form (unless ``webhook_allow_private``). The rules live in
``meetbot_common/ssrf.py``; this module is the seam through which live routes reach them with
the webhook settings (the composition root sets :data:`URL_GUARD`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from control_plane.errors import ErrorItem, Validation

UrlGuard = Callable[[str], Awaitable[None]]
"""Checks a URL (scheme, host, every address it resolves to); raises :class:`UrlRefused`."""

URL_GUARD: web.AppKey[UrlGuard] = web.AppKey("media_url_guard")


class UrlRefused(Exception):
    """The URL breaks a rule; the message names which."""


class UrlNotAllowed(Validation):
    """422 ``url_not_allowed``: a media URL the bot would fetch is refused by the SSRF rules."""

    default_code = "url_not_allowed"
    title = "URL not allowed"

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(
            f"{field} not allowed: {reason}",
            status=422,
            errors=[ErrorItem(loc=["body", field], msg=reason, type="url_not_allowed")],
        )


async def checked(app: web.Application, field: str, url: str) -> str:
    """``url`` once :data:`URL_GUARD` accepted it.

    Raises:
        UrlNotAllowed: 422 naming ``field`` and the reason.
    """
    try:
        await app[URL_GUARD](url)
    except UrlRefused as exc:
        raise UrlNotAllowed(field, str(exc)) from exc
    return url
