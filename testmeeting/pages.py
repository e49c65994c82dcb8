"""The platform pages: skins at the real URL shapes, their static files and room socket.

On the HTTPS port the request's host decides the platform (``meet.google.com/<code>``);
on either port ``/p/<host>/<path>`` serves the same page for manual use.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any
from urllib.parse import quote

from aiohttp import web

from testmeeting.app_keys import ROOMS, SKINS, STATIC
from testmeeting.pagelink import handle_page_socket
from testmeeting.platforms import ZOOM_APP_HOST, Platform, meeting_path, route

routes = web.RouteTableDef()

_STATIC_TYPES = {".js": "text/javascript", ".css": "text/css"}


def load_skins() -> dict[Platform, str]:
    """Read the skin HTML of every platform from the package (blocking)."""
    folder = resources.files("testmeeting") / "skins"
    return {
        platform: (folder / f"{platform.value}.html").read_text("utf-8") for platform in Platform
    }


def load_static() -> dict[str, bytes]:
    """Read the page scripts from the package (blocking)."""
    folder = resources.files("testmeeting") / "static"
    return {item.name: item.read_bytes() for item in folder.iterdir() if item.name.endswith(".js")}


@routes.get("/_tm/ws")
async def page_socket(request: web.Request) -> web.StreamResponse:
    """The room WebSocket of a skin page."""
    return await handle_page_socket(request, request.app[ROOMS])


@routes.post("/_tm/shown")
async def screen_shown(request: web.Request) -> web.Response:
    """A skin page reports the screen it shows; the room records it (``page_screen``)."""
    query = request.query
    try:
        platform = Platform(query.get("platform", ""))
    except ValueError as exc:
        raise web.HTTPBadRequest() from exc
    room = request.app[ROOMS].find(platform, query.get("meeting_id", ""))
    if room is not None:
        room.note_screen(query.get("screen", "")[:64])
    return web.Response(status=204)


@routes.get("/_tm/static/{name}")
async def static_file(request: web.Request) -> web.Response:
    """A page script (``meeting.js``, ``capture-worklet.js``)."""
    name = request.match_info["name"]
    body = request.app[STATIC].get(name)
    if body is None:
        raise web.HTTPNotFound()
    suffix = name[name.rfind(".") :]
    return web.Response(
        body=body, content_type=_STATIC_TYPES.get(suffix, "application/octet-stream")
    )


@routes.get("/{tail:.*}")
async def platform_page(request: web.Request) -> web.StreamResponse:
    """A platform page, or the index of rooms for anything else."""
    host = (request.url.host or "").lower()
    path = request.path
    prefix = ""
    if path.startswith("/p/"):
        host, _, rest = path[3:].partition("/")
        path, prefix = "/" + rest, f"/p/{host}"
    target = route(host, path)
    if target is None:
        return _index(request)
    if target.redirect is not None:
        query = f"?{request.query_string}" if request.query_string else ""
        location = (
            f"/p/{ZOOM_APP_HOST}{target.redirect}{query}"
            if prefix
            else f"https://{ZOOM_APP_HOST}{target.redirect}{query}"
        )
        raise web.HTTPFound(location)
    room = (
        request.app[ROOMS].find(target.platform, target.meeting_id) if target.meeting_id else None
    )
    config: dict[str, Any] = {
        "platform": target.platform.value,
        "meeting_id": target.meeting_id,
        "exists": room is not None,
        "lobby": room.scenario.lobby if room else False,
        "title": room.scenario.title if room else "",
        "variant": room.scenario.variant if room else None,
        "passcode": room.scenario.passcode if room else None,
        "frame_interval_ms": room.scenario.frame_interval_ms if room else 1000,
        "ws": f"/_tm/ws?platform={target.platform.value}"
        f"&meeting_id={quote(target.meeting_id or '', safe='')}",
        "static": "/_tm/static/",
    }
    # The config sits inside <script>; "<" is escaped so no text can close the element.
    encoded = json.dumps(config).replace("<", "\\u003c")
    html = request.app[SKINS][target.platform].replace("__TM_CONFIG__", encoded)
    return web.Response(text=html, content_type="text/html", headers={"Cache-Control": "no-store"})


def _index(request: web.Request) -> web.Response:
    lines = ["testmeeting rooms (plain HTTP paths):"]
    for room in request.app[ROOMS].all():
        platform, meeting_id = room.key
        host, path = meeting_path(platform, meeting_id, room.scenario.passcode)
        lines.append(f"  {platform.value:<12} /p/{host}{path}")
    return web.Response(text="\n".join(lines) + "\n", status=404 if request.path != "/" else 200)
