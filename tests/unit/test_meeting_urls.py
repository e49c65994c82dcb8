"""Meeting ids and URLs of all three platforms (docs/api.md Part 1 "Launch a bot", 2.3)."""

from __future__ import annotations

import pytest

from agent.contracts.bot_config import Platform
from agent.contracts.meeting_urls import (
    InvalidMeetingId,
    MalformedMeetingUrl,
    MeetingReference,
    MissingMeetingReference,
    resolve_meeting,
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
