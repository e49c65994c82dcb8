r"""Meeting references: native meeting ids, meeting URLs and the URL a bot opens.

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

The rules are regular expressions in a dialect both Python's ``re`` and ECMA-262 (JSON Schema,
so the OpenAPI document) read alike: digits are ``[0-9]`` (Python's ``\d`` also takes
Arabic-Indic and other Unicode digits), the scheme and host are lower case, the URL is printable
ASCII with no spaces, credentials or port (but on an extra host). :func:`id_pattern` and
:func:`url_pattern` give their text; the server checks the same text with ``fullmatch``.

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


ID_RULES: dict[Platform, tuple[str, str]] = {
    Platform.GOOGLE_MEET: ("[a-z]{3}-[a-z]{4}-[a-z]{3}", "three letter groups like abc-defg-hij"),
    Platform.ZOOM: ("[0-9]{9,11}", "9 to 11 digits"),
    Platform.TEAMS: ("[0-9]{10,15}", "10 to 15 digits"),
}
"""Per platform: the native id's regular expression (unanchored) and its rule in words."""

_UNRESERVED = "A-Za-z0-9._~!$&'()*+,;=:@%-"
"""The characters of a URL path segment (RFC 3986 ``pchar``; ``%`` for escapes), as a class body."""
_SEGMENT = f"[{_UNRESERVED}]+"
_TAIL = f"/?([?][{_UNRESERVED}/?]*)?(#[{_UNRESERVED}/?]*)?"
"""An optional trailing slash, then an optional query and fragment."""
_PORT = "(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?"
"""An optional port, 0 to 65535."""

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


def id_pattern(platform: Platform) -> str:
    """The anchored regular expression of ``platform``'s native meeting id.

    E.g. ``^[0-9]{9,11}$`` for ``zoom``; the OpenAPI document states the same text.
    """
    return f"^{ID_RULES[platform][0]}$"


def _path_shapes(platform: Platform) -> list[str]:
    ident = f"({ID_RULES[platform][0]})"
    if platform is Platform.GOOGLE_MEET:
        return [f"/{ident}"]
    if platform is Platform.ZOOM:
        return [f"/j/{ident}", f"/wc/{ident}/join", f"/wc/join/{ident}"]
    return [f"/meet/{ident}"]


def _host_pattern(entry: str) -> str:
    """An ``extra_hosts`` entry as a pattern: ``host:port`` exactly, a bare ``host`` any port."""
    entry = entry.strip().lower()
    escaped = "".join(
        char if char.isascii() and (char.isalnum() or char in "-:") else "\\" + char
        for char in entry
    )
    _, colon, port = entry.rpartition(":")
    has_port = bool(colon) and port.isascii() and port.isdigit()
    return escaped if has_port else escaped + _PORT


_OWN_HOSTS = {
    Platform.GOOGLE_MEET: "meet\\.google\\.com",
    Platform.ZOOM: "([a-z0-9-]+\\.)*zoom\\.us",
    Platform.TEAMS: "teams\\.(live|microsoft)\\.com",
}
_LEGACY_PATH = f"/l/meetup-join/{_SEGMENT}(/[{_UNRESERVED}/]*)?"


def _extra_branch(extra_hosts: Sequence[str], paths: str) -> list[str]:
    hosts = [_host_pattern(entry) for entry in extra_hosts if entry.strip()]
    return [f"https?://({'|'.join(hosts)})({paths}){_TAIL}"] if hosts else []


def url_pattern(platform: Platform, extra_hosts: Sequence[str] = ()) -> str:
    """The anchored regular expression every accepted meeting URL of ``platform`` matches.

    ``https://`` on the platform's own hosts (lower case, no port, no credentials) with one of
    its path shapes, then an optional ``/``, query and fragment of printable ASCII; for
    ``extra_hosts`` also ``http://`` and the host's port. Python's ``re`` and ECMA-262 read the
    text alike; the OpenAPI document states it and :func:`parse_meeting_url` enforces it.
    """
    paths = "|".join(_path_shapes(platform))
    branches = [f"https://{_OWN_HOSTS[platform]}({paths}){_TAIL}"]
    if platform is Platform.TEAMS:
        branches.append(f"https://teams\\.microsoft\\.com{_LEGACY_PATH}{_TAIL}")
        paths = f"{paths}|{_LEGACY_PATH}"
    branches += _extra_branch(extra_hosts, paths)
    return "^(" + "|".join(branches) + ")$"


def legacy_teams_url_pattern(extra_hosts: Sequence[str] = ()) -> str:
    """The anchored regular expression of a legacy Teams ``/l/meetup-join/…`` link.

    Such a link's native id is its thread id, not digits (see the module docstring).
    """
    branches = [f"https://teams\\.microsoft\\.com{_LEGACY_PATH}{_TAIL}"]
    branches += _extra_branch(extra_hosts, _LEGACY_PATH)
    return "^(" + "|".join(branches) + ")$"


def validate_native_id(platform: Platform, native_meeting_id: str) -> str:
    """Return ``native_meeting_id`` if it follows ``platform``'s rule (:func:`id_pattern`).

    Raises:
        InvalidMeetingId: It does not.
    """
    pattern, rule = ID_RULES[platform]
    if not re.fullmatch(pattern, native_meeting_id):
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


def _check_spelling(platform: Platform, meeting_url: str, extra_hosts: Sequence[str]) -> None:
    """Refuse a URL of the right host, path and id whose spelling :func:`url_pattern` refuses."""
    if not re.fullmatch(url_pattern(platform, extra_hosts), meeting_url):
        raise MalformedMeetingUrl(
            f"a {platform.value} meeting URL is written in lower case, printable ASCII, with no "
            "spaces, credentials, default port or escaped id (see the OpenAPI pattern)"
        )


def parse_meeting_url(
    platform: Platform, meeting_url: str, extra_hosts: Sequence[str] = ()
) -> MeetingReference:
    """Derive the meeting reference from a meeting URL.

    Raises:
        MalformedMeetingUrl: Not a URL of ``platform`` (scheme, host or path).
        InvalidMeetingId: The URL's id breaks the platform's id rule.
    """
    try:
        parts = urlsplit(meeting_url)
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
            _check_spelling(platform, meeting_url, extra_hosts)
            return MeetingReference(thread, meeting_url, None)

    raw_id = _match_id(platform, parts.path)
    if raw_id is None:
        raise MalformedMeetingUrl(f"the URL path is not a {platform.value} meeting path")
    native_id = validate_native_id(platform, raw_id)
    _check_spelling(platform, meeting_url, extra_hosts)
    passcode_param = {"zoom": "pwd", "teams": "p"}.get(platform.value)
    passcode = query[passcode_param][0] if passcode_param and passcode_param in query else None
    if is_extra:
        url = meeting_url
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
