"""Serving the dashboard: ``GET /`` (its one page) and ``GET /ui/{file}`` (its static files).

The dashboard is plain HTML, CSS and ES modules in ``static/`` with no build step; in the
browser it calls only the public API (``/api/v1/…``, ``X-API-Key`` from the tab's session
storage) and the bots' stream relay. Nothing here reads the database or needs a key: the routes
serve files, each with a strict Content-Security-Policy (scripts, styles and fonts from this
origin only; no inline code; no framing) and ``nosniff``.

Routes are plain aiohttp routes, not :class:`~control_plane.api.routes.ApiRoutes`: they are not
part of the API and stay out of its OpenAPI document. A missing file is the API's 404
``not_found`` (problem+json, through the error middleware).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web

from control_plane.settings import SETTINGS, Settings

STATIC_DIR = Path(__file__).resolve().parent / "static"
"""The folder of the dashboard's files (served flat: no sub-folders)."""

_TYPES = {
    ".html": "text/html",
    ".css": "text/css",
    ".js": "text/javascript",
    ".svg": "image/svg+xml",
}

routes = web.RouteTableDef()


def content_security_policy(settings: Settings) -> str:
    """The dashboard's CSP header value.

    Media and images may come from this origin, the public URL's origin (presigned local
    artifact URLs), ``blob:``/``data:`` (downloads, inline screenshots) and ``https:`` (S3
    presigned URLs); fetches go to this origin and the public URL's (the stream relay).
    """
    public = urlsplit(settings.effective_public_url)
    origin = f"{public.scheme}://{public.netloc}" if public.netloc else ""
    media = " ".join(part for part in ("'self'", origin, "blob: data: https:") if part)
    connect = " ".join(part for part in ("'self'", origin) if part)
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; "
        f"img-src {media}; media-src {media}; connect-src {connect}; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


def _file_response(request: web.Request, path: Path) -> web.Response:
    headers = {
        "Content-Security-Policy": content_security_policy(request.app[SETTINGS]),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    }
    return web.Response(body=path.read_bytes(), content_type=_TYPES[path.suffix], headers=headers)


@routes.get("/")
async def index(request: web.Request) -> web.Response:
    """The dashboard's page (every view is a ``#/…`` route of it)."""
    return _file_response(request, STATIC_DIR / "index.html")


@routes.get("/ui/{name}")
async def static_file(request: web.Request) -> web.Response:
    """One file of ``static/`` by its plain name; anything else is 404 ``not_found``."""
    name = request.match_info["name"]
    path = STATIC_DIR / name
    if "/" in name or name.startswith(".") or path.suffix not in _TYPES or not path.is_file():
        raise web.HTTPNotFound()
    return _file_response(request, path)
