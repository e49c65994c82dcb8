"""Fetching media the API names by URL (camera images, screen-share images), SSRF-guarded.

A URL in a command is chosen by an API user and fetched from the bot's host, so it follows the
webhook rules of :mod:`meetbot_common.ssrf`: ``https`` to global addresses only (``http`` and
private addresses when the agent settings ``media_allow_http`` / ``media_allow_private`` allow
them), every resolved address checked when the connection is made, no redirects, a total
timeout, and a size cap read before the body is kept. ``data:image/`` URLs need no fetch.

:func:`image_data_url` returns a ``data:`` URL: the page draws it into a canvas, and an image
from another origin would taint the canvas and stop its capture stream.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Awaitable, Callable

import aiohttp

from agent.contracts.link import CommandErrorCode
from agent.process.errors import CommandError
from agent.process.settings import AgentSettings
from meetbot_common.ssrf import TargetPolicy, TargetRefused, check_url, client_session

log = logging.getLogger(__name__)

MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Largest image accepted (docs/api.md 2.10: avatar image up to 5 MiB)."""
MAX_VIDEO_BYTES = 50 * 1024 * 1024
"""Largest screen-share video accepted (docs/api.md 2.10)."""


def fetch_policy(settings: AgentSettings) -> TargetPolicy:
    """The SSRF policy of the agent host (``media_allow_http``, ``media_allow_private``)."""
    return TargetPolicy(
        allow_http=settings.media_allow_http, allow_private=settings.media_allow_private
    )


async def image_data_url(
    url: str, policy: TargetPolicy, code: CommandErrorCode, field: str = "image_url"
) -> str:
    """The image at ``url`` (``http(s)://`` or ``data:image/``) as a ``data:`` URL.

    Args:
        url: Where the image is.
        policy: Which schemes and addresses may be reached.
        code: The error code of a refusal (``avatar_unavailable``, ``screen_source_unavailable``).
        field: The command argument named in errors.

    Returns:
        ``data:<content type>;base64,<body>``; whether it decodes is the page's to find out.

    Raises:
        CommandError: ``code`` when the URL is refused, cannot be fetched, does not answer 200
            with an ``image/*`` type, or is larger than :data:`MAX_IMAGE_BYTES`.
    """
    if url.startswith("data:image/"):
        _check_data_url(url, code, field)
        return url
    kind, body = await fetch_media(url, policy, code, field, "image/", MAX_IMAGE_BYTES)
    return f"data:{kind};base64,{base64.b64encode(body).decode()}"


async def avatar_image(
    url: str | None, policy: TargetPolicy, unavailable: Callable[[str], Awaitable[None]]
) -> str | None:
    """The camera image a bot joins with: ``url`` fetched, or None for the logo.

    An image that cannot be used is logged and handed to ``unavailable`` (with the refusal's
    detail) and None returned: the bot still joins, showing the logo.

    Args:
        url: The bot's ``default_avatar_url``; None or empty: the logo.
        policy: Which schemes and addresses may be reached.
        unavailable: Awaited with the detail of an image that cannot be used.
    """
    if not url:
        return None
    try:
        return await image_data_url(url, policy, CommandErrorCode.AVATAR_UNAVAILABLE)
    except CommandError as exc:
        log.warning("default avatar unavailable, showing the logo", extra={"detail": str(exc)})
        await unavailable(str(exc))
        return None


async def fetch_media(
    url: str, policy: TargetPolicy, code: CommandErrorCode, field: str, kind: str, limit: int
) -> tuple[str, bytes]:
    """GET ``url`` under ``policy``: ``(content type, body)`` of a ``kind`` (``image/``) answer.

    Raises:
        CommandError: ``code`` when the URL is refused, cannot be fetched, does not answer 200
            with a content type starting with ``kind``, is empty or larger than ``limit`` bytes.
    """
    try:
        check_url(url, policy)
    except TargetRefused as exc:
        raise CommandError(code, f"{field} is not allowed: {exc}", field=field) from exc
    try:
        async with (
            client_session(policy) as session,
            session.get(url, allow_redirects=False) as resp,
        ):
            got = resp.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if resp.status != 200:
                raise CommandError(code, f"{field} answered HTTP {resp.status}", field=field)
            if not got.startswith(kind):
                raise CommandError(code, f"{field} is not {kind}* ({got or 'no type'})", field)
            if (resp.content_length or 0) > limit:
                raise CommandError(code, f"{field} is larger than {limit // 2**20} MiB", field)
            body = bytearray()
            async for chunk in resp.content.iter_chunked(64 * 1024):
                body += chunk
                if len(body) > limit:
                    break
    except TargetRefused as exc:
        raise CommandError(code, f"{field} is not allowed: {exc}", field=field) from exc
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        # aiohttp wraps the guarded resolver's refusal into its connection error.
        refused = getattr(exc, "os_error", None)
        if isinstance(refused, TargetRefused):
            raise CommandError(code, f"{field} is not allowed: {refused}", field=field) from exc
        raise CommandError(code, f"{field} could not be fetched", field=field) from exc
    if len(body) > limit:
        raise CommandError(code, f"{field} is larger than {limit // 2**20} MiB", field)
    if not body:
        raise CommandError(code, f"{field} is empty", field=field)
    return got, bytes(body)


def _check_data_url(url: str, code: CommandErrorCode, field: str) -> None:
    """Refuse a ``data:`` URL without data, over the cap, or with a broken base64 body."""
    head, _, payload = url.partition(",")
    if not payload:
        raise CommandError(code, f"{field} has no data", field=field)
    base64_encoded = head.endswith(";base64")
    if (len(payload) * 3 // 4 if base64_encoded else len(payload)) > MAX_IMAGE_BYTES:
        raise CommandError(code, f"{field} is larger than 5 MiB", field=field)
    if not base64_encoded:
        return
    try:
        base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise CommandError(code, f"{field} is not valid base64", field=field) from exc
