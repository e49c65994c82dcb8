"""Scenario validation, URL routing, browser flags and the certificate: pure logic."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from cryptography import x509

from testmeeting import Scenario, browser_args, parse_scenario
from testmeeting.certs import generate_pem
from testmeeting.cli import demo_scenarios, main
from testmeeting.errors import ScenarioError
from testmeeting.platforms import Platform, meeting_path, route

pytestmark = pytest.mark.unit

SCENARIO_YAML = """
platform: google_meet
meeting_id: abc-defg-hij
admission: {decision: deny, after_s: 2}
participants:
  - name: Alice
    utterances:
      - {at: 0.5, file: jfk.wav}
      - {at: 9, text: "Thanks everyone."}
    chat: [{at: 3, text: "hi"}]
    hands: [{at: 4, lower_at: 6}]
  - {name: Bob, join_at: 5, leave_at: 20}
removals: [{at: 12}]
end_at: 30
"""


def test_yaml_scenario_parses_with_defaults() -> None:
    scenario = parse_scenario(SCENARIO_YAML)
    assert scenario.platform is Platform.GOOGLE_MEET
    assert scenario.lobby is True
    assert scenario.clock == "first_admitted"
    assert scenario.admission.decision == "deny"
    assert scenario.participants[0].utterances[1].text == "Thanks everyone."
    assert scenario.removals[0].name is None


def test_json_is_accepted_too() -> None:
    scenario = parse_scenario('{"platform": "zoom", "meeting_id": "81234567890", "lobby": false}')
    assert scenario.platform is Platform.ZOOM
    assert scenario.lobby is False


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("platform: zoom\nmeeting_id: abc-defg-hij\n", "wrong shape"),
        ("platform: webex\nmeeting_id: '1'\n", "platform"),
        (
            "platform: teams\nmeeting_id: '1234567890'\n"
            "participants: [{name: A, utterances: [{at: 1}]}]\n",
            "file or a text",
        ),
        (
            "platform: teams\nmeeting_id: '1234567890'\nparticipants: [{name: A}, {name: A}]\n",
            "unique",
        ),
        ("platform: teams\nmeeting_id: '1234567890'\nsurprise: 1\n", "surprise"),
        ("platform: [unclosed\n", "neither YAML nor JSON"),
    ],
)
def test_invalid_scenarios_are_refused_with_the_reason(text: str, fragment: str) -> None:
    with pytest.raises(ScenarioError, match=fragment):
        parse_scenario(text)


def test_scenario_model_rejects_negative_times() -> None:
    with pytest.raises(ValueError, match="greater than or equal"):
        Scenario.model_validate({"platform": "teams", "meeting_id": "1234567890", "end_at": -1})


@pytest.mark.parametrize(
    ("host", "path", "expected"),
    [
        ("meet.google.com", "/abc-defg-hij", (Platform.GOOGLE_MEET, "abc-defg-hij", None)),
        ("meet.google.com", "/landing", (Platform.GOOGLE_MEET, None, None)),
        ("app.zoom.us", "/wc/81234567890/join", (Platform.ZOOM, "81234567890", None)),
        (
            "us02web.zoom.us",
            "/j/81234567890",
            (Platform.ZOOM, "81234567890", "/wc/81234567890/join"),
        ),
        ("zoom.us", "/j/812345678", (Platform.ZOOM, "812345678", "/wc/812345678/join")),
        ("teams.live.com", "/meet/9312345678901", (Platform.TEAMS, "9312345678901", None)),
        ("teams.microsoft.com", "/meet/9312345678901", (Platform.TEAMS, "9312345678901", None)),
        ("teams.live.com", "/meet/12", (Platform.TEAMS, None, None)),
        (
            "teams.microsoft.com",
            "/l/meetup-join/19%3ameeting_NzQ4@thread.v2/0",
            (Platform.TEAMS, "19:meeting_NzQ4@thread.v2", None),
        ),
    ],
)
def test_routes_follow_the_platforms_url_shapes(
    host: str, path: str, expected: tuple[Platform, str | None, str | None]
) -> None:
    target = route(host, path)
    assert target is not None
    assert (target.platform, target.meeting_id, target.redirect) == expected


def test_foreign_hosts_are_no_platform() -> None:
    assert route("example.com", "/abc-defg-hij") is None


def test_legacy_teams_rooms_answer_at_meetup_join_links() -> None:
    host, path = meeting_path(Platform.TEAMS, "19:meeting_NzQ4@thread.v2")
    assert (host, path) == ("teams.microsoft.com", "/l/meetup-join/19%3Ameeting_NzQ4%40thread.v2/0")
    target = route(host, path)
    assert target is not None
    assert target.meeting_id == "19:meeting_NzQ4@thread.v2"
    Scenario.model_validate({"platform": "teams", "meeting_id": "19:meeting_NzQ4@thread.v2"})


def test_meeting_paths_carry_the_passcode() -> None:
    assert meeting_path(Platform.ZOOM, "81234567890", "xyz") == (
        "app.zoom.us",
        "/wc/81234567890/join?pwd=xyz",
    )
    assert meeting_path(Platform.TEAMS, "9312345678901", "p1") == (
        "teams.live.com",
        "/meet/9312345678901?p=p1",
    )


def test_browser_args_map_every_platform_host_to_the_server() -> None:
    args = browser_args(8443)
    assert args[1] == "--ignore-certificate-errors"
    rules = args[0].removeprefix("--host-resolver-rules=").split(", ")
    for host in (
        "meet.google.com",
        "app.zoom.us",
        "*.zoom.us",
        "us02web.zoom.us",
        "teams.live.com",
        "teams.microsoft.com",
    ):
        assert f"MAP {host} 127.0.0.1:8443" in rules


def test_certificate_names_the_platform_hosts() -> None:
    cert_pem, key_pem = generate_pem()
    cert = x509.load_pem_x509_certificate(cert_pem)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {
        "meet.google.com",
        "app.zoom.us",
        "*.zoom.us",
        "teams.live.com",
        "teams.microsoft.com",
    } <= set(names.get_values_for_type(x509.DNSName))
    assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
    assert b"PRIVATE KEY" in key_pem


def test_cli_refuses_a_bad_scenario_with_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("platform: zoom\nmeeting_id: x\n")
    assert main(["--scenario", str(bad)]) == 2
    assert "wrong shape" in capsys.readouterr().err
    assert main(["--scenario", str(tmp_path / "missing.yaml")]) == 2


def test_demo_rooms_cover_every_platform() -> None:
    assert {scenario.platform for scenario in demo_scenarios()} == set(Platform)
