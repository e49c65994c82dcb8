"""Meeting references: native meeting ids, meeting URLs and the URL a bot opens.

Validate a platform's native meeting id, derive it from a meeting URL, and build the URL a bot
opens. Pure functions, shared by the control plane and the agent.

Rules (docs/api.md Part 1 "Launch a bot" and 2.3):

* ``google_meet``: id ``abc-defg-hij`` (``^[a-z]{3}-[a-z]{4}-[a-z]{3}$``) from
  ``https://meet.google.com/<id>``.
* ``zoom``: id of 9 to 11 digits from ``https://zoom.us/j/<id>`` or any ``*.zoom.us`` host (also
  the web client's ``/wc/<id>/join``); the ``pwd`` query parameter is kept as the passcode.
* ``teams``: id of 10 to 15 digits from ``https://teams.live.com/meet/<id>`` or
  ``https://teams.microsoft.com/meet/<id>`` (``?p=`` is the passcode); a legacy
  ``https://teams.microsoft.com/l/meetup-join/<thread>/…`` link is kept whole as the URL and its
  (decoded) thread id, e.g. ``19:meeting_…@thread.v2``, becomes the native id.

A host listed in ``extra_hosts`` (``host`` or ``host:port``; the testmeeting server) is accepted
for every platform with the same path shapes, over ``http`` too, and its URL is kept as given.

Errors: :class:`MissingMeetingReference` (neither URL nor id), :class:`InvalidMeetingId` (an id
that breaks the platform's rule, or a URL whose id does), :class:`MalformedMeetingUrl` (not a
URL of the platform). The control plane answers them 400, 400 and 422.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qs, quote, unquote, urlsplit

from agent.contracts.bot_config import Platform


class MeetingReferenceError(ValueError):
    """Base of the errors below; ``code`` is the API's stable error code."""

    code = "invalid_meeting_reference"


class MissingMeetingReference(MeetingReferenceError):
    """Neither ``meeting_url`` nor ``native_meeting_id`` was given."""

    code = "missing_meeting_reference"


class InvalidMeetingId(MeetingReferenceError):
    """The native meeting id does not follow the platform's rule."""

    code = "invalid_meeting_id"


class MalformedMeetingUrl(MeetingReferenceError):
    """The meeting URL is not a URL of the platform (or of an allowed extra host)."""

    code = "malformed_meeting_url"


@dataclass(frozen=True)
class MeetingReference:
    """A validated meeting: its native id, the URL to open, and the passcode if any."""

    native_meeting_id: str
    constructed_meeting_url: str
    passcode: str | None = None


GOOGLE_MEET_ID = re.compile(r"^[a-z]{3}-[a-z]{4}-[a-z]{3}$")
ZOOM_ID = re.compile(r"^\d{9,11}$")
TEAMS_ID = re.compile(r"^\d{10,15}$")

_ID_RULES: dict[Platform, tuple[re.Pattern[str], str]] = {
    Platform.GOOGLE_MEET: (GOOGLE_MEET_ID, "three letter groups like abc-defg-hij"),
    Platform.ZOOM: (ZOOM_ID, "9 to 11 digits"),
    Platform.TEAMS: (TEAMS_ID, "10 to 15 digits"),
}

_MEET_PATH = re.compile(r"^/(?P<id>[^/]+)/?$")
_ZOOM_PATHS = (
    re.compile(r"^/j/(?P<id>[^/]+)/?$"),
    re.compile(r"^/wc/(?P<id>[^/]+)/join/?$"),
    re.compile(r"^/wc/join/(?P<id>[^/]+)/?$"),
)
_TEAMS_MEET_PATH = re.compile(r"^/meet/(?P<id>[^/]+)/?$")
_TEAMS_LEGACY_PATH = re.compile(r"^/l/meetup-join/(?P<thread>[^/]+)(/.*)?$")

MEET_HOST = "meet.google.com"
ZOOM_HOST = "zoom.us"
TEAMS_HOSTS = ("teams.live.com", "teams.microsoft.com")


def validate_native_id(platform: Platform, native_meeting_id: str) -> str:
    """Return ``native_meeting_id`` if it follows ``platform``'s rule.

    Raises:
        InvalidMeetingId: It does not.
    """
    pattern, rule = _ID_RULES[platform]
    if not pattern.fullmatch(native_meeting_id):
        raise InvalidMeetingId(f"a {platform.value} meeting id is {rule}")
    return native_meeting_id


def url_for_id(platform: Platform, native_meeting_id: str, passcode: str | None = None) -> str:
    """The canonical join URL of a validated native id."""
    if platform is Platform.GOOGLE_MEET:
        return f"https://{MEET_HOST}/{native_meeting_id}"
    if platform is Platform.ZOOM:
        query = f"?pwd={quote(passcode, safe='')}" if passcode else ""
        return f"https://{ZOOM_HOST}/j/{native_meeting_id}{query}"
    query = f"?p={quote(passcode, safe='')}" if passcode else ""
    return f"https://{TEAMS_HOSTS[0]}/meet/{native_meeting_id}{query}"


def _host_allowed(platform: Platform, host: str) -> bool:
    if platform is Platform.GOOGLE_MEET:
        return host == MEET_HOST
    if platform is Platform.ZOOM:
        return host == ZOOM_HOST or host.endswith("." + ZOOM_HOST)
    return host in TEAMS_HOSTS


def _match_id(platform: Platform, path: str) -> str | None:
    patterns: Sequence[re.Pattern[str]]
    if platform is Platform.GOOGLE_MEET:
        patterns = (_MEET_PATH,)
    elif platform is Platform.ZOOM:
        patterns = _ZOOM_PATHS
    else:
        patterns = (_TEAMS_MEET_PATH,)
    for pattern in patterns:
        match = pattern.fullmatch(path)
        if match:
            return match["id"]
    return None


def parse_meeting_url(
    platform: Platform, meeting_url: str, extra_hosts: Sequence[str] = ()
) -> MeetingReference:
    """Derive the meeting reference from a meeting URL.

    Raises:
        MalformedMeetingUrl: Not a URL of ``platform`` (scheme, host or path).
        InvalidMeetingId: The URL's id breaks the platform's id rule.
    """
    try:
        parts = urlsplit(meeting_url.strip())
        port = parts.port
    except ValueError as exc:
        raise MalformedMeetingUrl("the meeting URL cannot be parsed") from exc
    host = (parts.hostname or "").lower()
    netloc = f"{host}:{port}" if port is not None else host
    extra = {h.lower() for h in extra_hosts}
    is_extra = bool(host) and (host in extra or netloc in extra)
    allowed_schemes = {"https", "http"} if is_extra else {"https"}
    if parts.scheme.lower() not in allowed_schemes or not host:
        raise MalformedMeetingUrl(f"a {platform.value} meeting URL starts with https://")
    if not is_extra and not _host_allowed(platform, host):
        raise MalformedMeetingUrl(f"{host} is not a {platform.value} host")
    query = parse_qs(parts.query)

    if platform is Platform.TEAMS:
        legacy = _TEAMS_LEGACY_PATH.fullmatch(parts.path)
        if legacy and (is_extra or host == "teams.microsoft.com"):
            thread = unquote(legacy["thread"])
            if not thread:
                raise MalformedMeetingUrl("the meetup-join link has no thread id")
            return MeetingReference(thread, meeting_url.strip(), None)

    raw_id = _match_id(platform, parts.path)
    if raw_id is None:
        raise MalformedMeetingUrl(f"the URL path is not a {platform.value} meeting path")
    native_id = validate_native_id(platform, unquote(raw_id))
    passcode_param = {"zoom": "pwd", "teams": "p"}.get(platform.value)
    passcode = query[passcode_param][0] if passcode_param and passcode_param in query else None
    if is_extra:
        url = meeting_url.strip()
    elif platform is Platform.ZOOM:
        query_text = f"?pwd={quote(passcode, safe='')}" if passcode else ""
        url = f"https://{host}/j/{native_id}{query_text}"
    elif platform is Platform.TEAMS:
        query_text = f"?p={quote(passcode, safe='')}" if passcode else ""
        url = f"https://{host}/meet/{native_id}{query_text}"
    else:
        url = url_for_id(platform, native_id)
    return MeetingReference(native_id, url, passcode)


def resolve_meeting(
    platform: Platform,
    *,
    meeting_url: str | None,
    native_meeting_id: str | None,
    passcode: str | None = None,
    extra_hosts: Sequence[str] = (),
) -> MeetingReference:
    """The meeting reference of a launch request.

    With a URL, the id and passcode come from it (an explicit ``native_meeting_id`` must agree,
    an explicit ``passcode`` wins); with only an id, the canonical URL is built.

    Raises:
        MissingMeetingReference: Neither is given.
        InvalidMeetingId: The id breaks the platform's rule, or disagrees with the URL.
        MalformedMeetingUrl: The URL is not one of the platform.
    """
    if meeting_url:
        ref = parse_meeting_url(platform, meeting_url, extra_hosts)
        if native_meeting_id is not None and native_meeting_id != ref.native_meeting_id:
            validate_native_id(platform, native_meeting_id)
            raise InvalidMeetingId("native_meeting_id does not match the meeting URL")
        return MeetingReference(
            ref.native_meeting_id, ref.constructed_meeting_url, passcode or ref.passcode
        )
    if not native_meeting_id:
        raise MissingMeetingReference("give meeting_url or native_meeting_id")
    native_id = validate_native_id(platform, native_meeting_id)
    return MeetingReference(native_id, url_for_id(platform, native_id, passcode), passcode)
