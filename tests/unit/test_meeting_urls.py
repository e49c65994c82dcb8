"""Meeting ids and URLs of all three platforms (docs/api.md Part 1 "Launch a bot", 2.3)."""

from __future__ import annotations

import re

import pytest

from agent.contracts.bot_config import Platform
from agent.contracts.meeting_urls import (
    InvalidMeetingId,
    MalformedMeetingUrl,
    MeetingReference,
    MissingMeetingReference,
    id_pattern,
    resolve_meeting,
    url_pattern,
)

pytestmark = pytest.mark.unit

GM, ZOOM, TEAMS = Platform.GOOGLE_MEET, Platform.ZOOM, Platform.TEAMS


@pytest.mark.parametrize(
    ("platform", "native_id", "url"),
    [
        (GM, "abc-defg-hij", "https://meet.google.com/abc-defg-hij"),
        (ZOOM, "123456789", "https://zoom.us/j/123456789"),
        (ZOOM, "12345678901", "https://zoom.us/j/12345678901"),
        (TEAMS, "1234567890", "https://teams.live.com/meet/1234567890"),
        (TEAMS, "123456789012345", "https://teams.live.com/meet/123456789012345"),
    ],
)
def test_valid_ids_build_the_canonical_url(platform: Platform, native_id: str, url: str) -> None:
    ref = resolve_meeting(platform, meeting_url=None, native_meeting_id=native_id)
    assert ref == MeetingReference(native_id, url, None)


@pytest.mark.parametrize(
    ("platform", "native_id"),
    [
        (GM, "abcdefghij"),
        (GM, "ABC-DEFG-HIJ"),
        (GM, "abc-def-hij"),
        (GM, "abc-defg-hijk"),
        (ZOOM, "12345678"),
        (ZOOM, "123456789012"),
        (ZOOM, "12345678a"),
        (TEAMS, "123456789"),
        (TEAMS, "1234567890123456"),
        (TEAMS, "12345abcde"),
    ],
)
def test_invalid_ids_are_refused(platform: Platform, native_id: str) -> None:
    with pytest.raises(InvalidMeetingId):
        resolve_meeting(platform, meeting_url=None, native_meeting_id=native_id)


@pytest.mark.parametrize(
    ("platform", "url", "expected"),
    [
        (
            GM,
            "https://meet.google.com/abc-defg-hij?authuser=0",
            MeetingReference("abc-defg-hij", "https://meet.google.com/abc-defg-hij"),
        ),
        (
            ZOOM,
            "https://us05web.zoom.us/j/81234567890?pwd=s3cr%3Dt",
            MeetingReference(
                "81234567890", "https://us05web.zoom.us/j/81234567890?pwd=s3cr%3Dt", "s3cr=t"
            ),
        ),
        (
            ZOOM,
            "https://app.zoom.us/wc/81234567890/join",
            MeetingReference("81234567890", "https://app.zoom.us/j/81234567890"),
        ),
        (
            TEAMS,
            "https://teams.live.com/meet/9876543210987?p=abcDEF",
            MeetingReference(
                "9876543210987", "https://teams.live.com/meet/9876543210987?p=abcDEF", "abcDEF"
            ),
        ),
        (
            TEAMS,
            "https://teams.microsoft.com/meet/9876543210987",
            MeetingReference("9876543210987", "https://teams.microsoft.com/meet/9876543210987"),
        ),
    ],
)
def test_urls_give_id_url_and_passcode(
    platform: Platform, url: str, expected: MeetingReference
) -> None:
    assert resolve_meeting(platform, meeting_url=url, native_meeting_id=None) == expected


def test_legacy_teams_link_is_kept_whole_with_the_thread_id() -> None:
    url = (
        "https://teams.microsoft.com/l/meetup-join/19%3ameeting_NjQ1ZjM2@thread.v2/0"
        "?context=%7b%22Tid%22%3a%22x%22%7d"
    )
    ref = resolve_meeting(TEAMS, meeting_url=url, native_meeting_id=None)
    assert ref.native_meeting_id == "19:meeting_NjQ1ZjM2@thread.v2"
    assert ref.constructed_meeting_url == url


@pytest.mark.parametrize(
    ("platform", "url"),
    [
        (GM, "http://meet.google.com/abc-defg-hij"),
        (GM, "https://meet.google.com.evil.example/abc-defg-hij"),
        (GM, "https://zoom.us/j/123456789"),
        (GM, "https://meet.google.com/abc-defg-hij/extra"),
        (GM, "not a url"),
        (ZOOM, "https://evilzoom.us/j/123456789"),
        (ZOOM, "https://zoom.us/s/123456789"),
        (TEAMS, "https://teams.live.com/l/meetup-join/19%3ameeting_x@thread.v2/0"),
        (TEAMS, "https://teams.example.com/meet/1234567890"),
        (TEAMS, "https://teams.live.com:99999/meet/1234567890"),
    ],
)
def test_foreign_or_malformed_urls_are_refused(platform: Platform, url: str) -> None:
    with pytest.raises(MalformedMeetingUrl):
        resolve_meeting(platform, meeting_url=url, native_meeting_id=None)


@pytest.mark.parametrize(
    ("platform", "url"),
    [
        (GM, "https://meet.google.com/abc-defgh-ij"),
        (ZOOM, "https://zoom.us/j/1234"),
        (TEAMS, "https://teams.live.com/meet/123"),
    ],
)
def test_urls_with_an_invalid_id_are_invalid_ids(platform: Platform, url: str) -> None:
    with pytest.raises(InvalidMeetingId):
        resolve_meeting(platform, meeting_url=url, native_meeting_id=None)


def test_extra_hosts_allow_the_testmeeting_server_over_http() -> None:
    url = "http://127.0.0.1:8766/j/81234567890?pwd=x"
    ref = resolve_meeting(ZOOM, meeting_url=url, native_meeting_id=None, extra_hosts=["127.0.0.1"])
    assert ref == MeetingReference("81234567890", url, "x")
    with pytest.raises(MalformedMeetingUrl):
        resolve_meeting(ZOOM, meeting_url=url, native_meeting_id=None)


def test_neither_url_nor_id_is_missing_reference() -> None:
    with pytest.raises(MissingMeetingReference):
        resolve_meeting(GM, meeting_url=None, native_meeting_id=None)


def test_id_must_agree_with_url_and_explicit_passcode_wins() -> None:
    with pytest.raises(InvalidMeetingId):
        resolve_meeting(
            GM, meeting_url="https://meet.google.com/abc-defg-hij", native_meeting_id="xyz-defg-hij"
        )
    ref = resolve_meeting(
        TEAMS,
        meeting_url="https://teams.live.com/meet/1234567890?p=old",
        native_meeting_id="1234567890",
        passcode="new",
    )
    assert ref.passcode == "new"


# Python's ``\d`` takes every Unicode decimal digit; an id is ASCII 0-9 only (issue 18).
ARABIC_INDIC = "\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669"  # 123456789
FULLWIDTH = "\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19\uff10"  # 1234567890
DEVANAGARI = "\u0967\u0968\u0969\u096a\u096b\u096c\u096d\u096e\u096f\u0966"  # 1234567890


@pytest.mark.parametrize(
    ("platform", "native_id"),
    [
        (ZOOM, ARABIC_INDIC),
        (ZOOM, FULLWIDTH),
        (ZOOM, "12345678" + "\u0669"),
        (TEAMS, DEVANAGARI),
        (TEAMS, FULLWIDTH + "1"),
        (TEAMS, "123456789" + "\u00b2"),  # superscript two: isdigit() but not a decimal
    ],
)
def test_non_ascii_digits_are_not_digits(platform: Platform, native_id: str) -> None:
    with pytest.raises(InvalidMeetingId):
        resolve_meeting(platform, meeting_url=None, native_meeting_id=native_id)
    path = "/j/" if platform is ZOOM else "/meet/"
    host = "zoom.us" if platform is ZOOM else "teams.live.com"
    with pytest.raises(InvalidMeetingId):
        resolve_meeting(
            platform, meeting_url=f"https://{host}{path}{native_id}", native_meeting_id=None
        )


@pytest.mark.parametrize(
    ("platform", "url"),
    [
        (GM, "https://MEET.google.com/abc-defg-hij"),
        (GM, "HTTPS://meet.google.com/abc-defg-hij"),
        (GM, " https://meet.google.com/abc-defg-hij"),
        (GM, "https://meet.google.com/abc-defg-hij\n"),
        (GM, "https://user@meet.google.com/abc-defg-hij"),
        (GM, "https://meet.google.com:443/abc-defg-hij"),
        (GM, "https://meet.google.com/abc-defg-hij?authuser=\u00e9"),
        (GM, "https://meet.google.com/abc-defg-hij?a b"),
        (ZOOM, "https://us05web..zoom.us/j/123456789"),
        (TEAMS, "https://teams.microsoft.com/l/meetup-join/19:meeting x@thread.v2/0"),
    ],
)
def test_urls_are_spelled_as_the_pattern_states(platform: Platform, url: str) -> None:
    with pytest.raises(MalformedMeetingUrl):
        resolve_meeting(platform, meeting_url=url, native_meeting_id=None)
    assert not re.fullmatch(url_pattern(platform), url)


ACCEPTED = [
    (GM, "https://meet.google.com/abc-defg-hij"),
    (GM, "https://meet.google.com/abc-defg-hij/?authuser=0#x"),
    (ZOOM, "https://zoom.us/wc/join/123456789"),
    (ZOOM, "https://us05web.zoom.us/j/81234567890?pwd=s3cr%3Dt"),
    (TEAMS, "https://teams.microsoft.com/meet/1234567890?p=x"),
    (TEAMS, "https://teams.microsoft.com/l/meetup-join/19%3ameeting_N@thread.v2/0?context=%7b%7d"),
    (ZOOM, "http://127.0.0.1:8766/wc/123456789/join"),
    (TEAMS, "http://testmeeting.local:80/l/meetup-join/19%3ameeting_N@thread.v2/0"),
]


@pytest.mark.parametrize(("platform", "url"), ACCEPTED)
def test_the_pattern_and_the_parser_accept_the_same_urls(platform: Platform, url: str) -> None:
    extra = ["127.0.0.1", "testmeeting.local"]
    assert re.fullmatch(url_pattern(platform, extra), url)
    resolve_meeting(platform, meeting_url=url, native_meeting_id=None, extra_hosts=extra)
    for other in Platform:
        if other is not platform:
            assert not re.fullmatch(url_pattern(other, extra), url)


def test_an_extra_host_with_a_port_allows_that_port_only() -> None:
    pattern = url_pattern(ZOOM, ["127.0.0.1:8766"])
    assert re.fullmatch(pattern, "http://127.0.0.1:8766/j/123456789")
    assert not re.fullmatch(pattern, "http://127.0.0.1:8767/j/123456789")
    with pytest.raises(MalformedMeetingUrl):
        resolve_meeting(
            ZOOM,
            meeting_url="http://127.0.0.1:8767/j/123456789",
            native_meeting_id=None,
            extra_hosts=["127.0.0.1:8766"],
        )


def test_the_patterns_are_ascii_and_ecma_safe() -> None:
    """No ``\\d``/``\\w``/``\\s`` (Unicode in Python, ASCII in ECMA-262), and ASCII text."""
    patterns = [id_pattern(p) for p in Platform]
    patterns += [url_pattern(p, ["127.0.0.1:8766", "testmeeting.local"]) for p in Platform]
    for pattern in patterns:
        assert pattern.isascii()
        assert not re.search(r"\\[dDwWsSbB]", pattern), pattern
