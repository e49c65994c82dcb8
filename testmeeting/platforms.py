"""Which hosts and URL paths each platform answers on, and how a browser is pointed at us.

URL shapes follow docs/api.md ("native_meeting_id rules"): Google Meet ``/<abc-defg-hij>``,
Zoom web client ``/wc/<id>/join`` (``/j/<id>`` on any ``*.zoom.us`` host redirects there),
Teams ``/meet/<10–15 digits>?p=<passcode>`` on ``teams.live.com`` and ``teams.microsoft.com``,
and legacy Teams links ``/l/meetup-join/<url-encoded thread id>/…`` whose meeting id is the
decoded thread id (``19:meeting_…@thread.v2``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import quote, unquote


class Platform(StrEnum):
    """Meeting platforms with a skin (same values as ``agent.contracts.Platform``)."""

    GOOGLE_MEET = "google_meet"
    ZOOM = "zoom"
    TEAMS = "teams"


MEET_HOST = "meet.google.com"
ZOOM_APP_HOST = "app.zoom.us"
TEAMS_LIVE_HOST = "teams.live.com"
TEAMS_WORK_HOST = "teams.microsoft.com"

# Zoom hands out links on regional subdomains (us02web, us04web, …); the wildcard rule
# covers the rest, the explicit ones document the common shapes.
ZOOM_SUBDOMAINS = (
    "zoom.us",
    "us02web.zoom.us",
    "us04web.zoom.us",
    "us05web.zoom.us",
    "us06web.zoom.us",
)

MAPPED_HOSTS: tuple[str, ...] = (
    MEET_HOST,
    ZOOM_APP_HOST,
    *ZOOM_SUBDOMAINS,
    "*.zoom.us",
    TEAMS_LIVE_HOST,
    TEAMS_WORK_HOST,
)
"""Host names the browser must resolve to the simulator (``*.zoom.us`` is a wildcard rule)."""

CERT_NAMES: tuple[str, ...] = (
    MEET_HOST,
    ZOOM_APP_HOST,
    "zoom.us",
    "*.zoom.us",
    TEAMS_LIVE_HOST,
    TEAMS_WORK_HOST,
    "localhost",
)
"""DNS names in the server certificate (127.0.0.1 is added as an IP address)."""

MEET_CODE = re.compile(r"^[a-z]{3}-[a-z]{4}-[a-z]{3}$")
ZOOM_ID = re.compile(r"^\d{9,11}$")
TEAMS_ID = re.compile(r"^\d{10,15}$")
TEAMS_THREAD = re.compile(r"^19:[A-Za-z0-9_.-]+@thread\.(v2|skype|tacv2)$")

_ZOOM_WC = re.compile(r"^/wc/(?P<id>\d{9,11})/join/?$")
_ZOOM_J = re.compile(r"^/j/(?P<id>\d{9,11})/?$")
_TEAMS_MEET = re.compile(r"^/meet/(?P<id>\d{10,15})/?$")
_TEAMS_LEGACY = re.compile(r"^/l/meetup-join/(?P<thread>[^/]+)(/.*)?$")
_MEET_PATH = re.compile(r"^/(?P<id>[a-z]{3}-[a-z]{4}-[a-z]{3})/?$")


@dataclass(frozen=True, slots=True)
class Route:
    """Where a request for a platform page leads.

    Attributes:
        platform: The platform whose skin answers.
        meeting_id: Native meeting id parsed from the path, or ``None`` for paths that are
            no meeting at all (they get the platform's not-found screen).
        redirect: Path (on ``app.zoom.us``) to redirect to instead of rendering, if any.
    """

    platform: Platform
    meeting_id: str | None
    redirect: str | None = None


def platform_of_host(host: str) -> Platform | None:
    """The platform served on ``host`` (no port), or ``None`` for hosts that are not mapped."""
    host = host.lower()
    if host == MEET_HOST:
        return Platform.GOOGLE_MEET
    if host in (TEAMS_LIVE_HOST, TEAMS_WORK_HOST):
        return Platform.TEAMS
    if host == "zoom.us" or host.endswith(".zoom.us"):
        return Platform.ZOOM
    return None


def route(host: str, path: str) -> Route | None:
    """Parse a platform page request.

    Args:
        host: Request host without port, e.g. ``"us02web.zoom.us"``.
        path: Request path, e.g. ``"/j/81234567890"``.

    Returns:
        The route, or ``None`` when ``host`` belongs to no platform.
    """
    platform = platform_of_host(host)
    if platform is None:
        return None
    if platform is Platform.GOOGLE_MEET:
        match = _MEET_PATH.match(path)
        return Route(platform, match["id"] if match else None)
    if platform is Platform.TEAMS:
        match = _TEAMS_MEET.match(path)
        if match:
            return Route(platform, match["id"])
        legacy = _TEAMS_LEGACY.match(path)
        return Route(platform, unquote(legacy["thread"]) if legacy else None)
    match = _ZOOM_WC.match(path)
    if match:
        return Route(platform, match["id"])
    match = _ZOOM_J.match(path)
    if match:
        return Route(platform, match["id"], redirect=f"/wc/{match['id']}/join")
    return Route(platform, None)


def valid_meeting_id(platform: Platform, meeting_id: str) -> bool:
    """Whether ``meeting_id`` has the shape the platform's URLs carry."""
    if platform is Platform.TEAMS:
        return bool(TEAMS_ID.match(meeting_id) or TEAMS_THREAD.match(meeting_id))
    pattern = {Platform.GOOGLE_MEET: MEET_CODE, Platform.ZOOM: ZOOM_ID}
    return bool(pattern[platform].match(meeting_id))


def meeting_path(
    platform: Platform, meeting_id: str, passcode: str | None = None
) -> tuple[str, str]:
    """Host and path (with query) of a room's join URL.

    Returns:
        ``(host, path)``, e.g. ``("teams.live.com", "/meet/1234567890?p=abc")``.
    """
    if platform is Platform.GOOGLE_MEET:
        return MEET_HOST, f"/{meeting_id}"
    if platform is Platform.ZOOM:
        query = f"?pwd={passcode}" if passcode else ""
        return ZOOM_APP_HOST, f"/wc/{meeting_id}/join{query}"
    if TEAMS_THREAD.match(meeting_id):
        return TEAMS_WORK_HOST, f"/l/meetup-join/{quote(meeting_id, safe='')}/0"
    query = f"?p={passcode}" if passcode else ""
    return TEAMS_LIVE_HOST, f"/meet/{meeting_id}{query}"


def browser_args(https_port: int, host: str = "127.0.0.1") -> list[str]:
    """Chromium command-line flags that send the platforms' hosts to a running simulator.

    Pass them to ``playwright.chromium.launch(args=...)`` beside your own flags. The
    simulator's certificate is self-signed, hence ``--ignore-certificate-errors``.

    Args:
        https_port: The simulator's HTTPS port (``TestMeetingServer.https_port``).
        host: Address the simulator listens on.

    Returns:
        ``["--host-resolver-rules=MAP meet.google.com 127.0.0.1:<port>, MAP …",
        "--ignore-certificate-errors"]``.
    """
    rules = ", ".join(f"MAP {name} {host}:{https_port}" for name in MAPPED_HOSTS)
    return [f"--host-resolver-rules={rules}", "--ignore-certificate-errors"]
