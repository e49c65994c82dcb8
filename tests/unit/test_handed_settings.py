"""Agent settings handed over in the bootstrap exchange: which a control plane hands over, how
the agent applies them over its machine's environment, and that a bad one is refused unshown."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from agent.__main__ import main
from agent.contracts.agent_settings import described, handed_over
from agent.contracts.bot_config import BotConfig, Platform
from agent.process.handed_settings import unused, with_handed
from agent.process.settings import AgentSettings
from control_plane.launchers.qemu import QemuLauncher
from control_plane.settings import Settings
from tests.handed_settings import SECRET

pytestmark = pytest.mark.unit


def test_the_control_plane_hands_over_the_agents_names_but_not_the_machines() -> None:
    environ = {
        "MEETBOT_AGENT_TTS_API_KEY": SECRET,
        "MEETBOT_AGENT_TTS_PROVIDER": "openai",
        "MEETBOT_ACTIONS_PROVIDER": "openai",  # no longer an agent setting (issue 34)
        "MEETBOT_INTELLIGENCE_API_KEY": "x",  # the control plane's own
        "MEETBOT_AGENT_DATA_DIR": "/srv/cp",  # the control plane host's path: not a VM's
        "MEETBOT_AGENT_lower": "x",
        "MEETBOT_DATABASE_URL": "postgresql://secret",
        "AWS_SECRET_ACCESS_KEY": "x",
    }
    assert handed_over(environ) == {
        "MEETBOT_AGENT_TTS_API_KEY": SECRET,
        "MEETBOT_AGENT_TTS_PROVIDER": "openai",
    }
    assert described(handed_over(environ))["MEETBOT_AGENT_TTS_API_KEY"] == "<secret>"


def test_settings_read_them_from_the_environment_unless_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEETBOT_AGENT_TTS_API_KEY", SECRET)
    monkeypatch.setenv("MEETBOT_AGENT_MODELS_DIR", "/srv/models")
    assert Settings().fleet_agent_settings == {"MEETBOT_AGENT_TTS_API_KEY": SECRET}
    given = {"MEETBOT_AGENT_LOG_LEVEL": "DEBUG"}
    assert Settings(fleet_agent_settings=given).fleet_agent_settings == given
    with pytest.raises(ValueError, match="fleet_agent_settings"):
        Settings(fleet_agent_settings={"PATH": "/bin"})


def test_a_secret_setting_is_refused_in_qemu_user_data() -> None:
    with pytest.raises(ValueError, match="bootstrap exchange"):
        QemuLauncher(Path("x.qcow2"), Path("vms"), agent_env={"MEETBOT_AGENT_TTS_API_KEY": SECRET})


def test_handed_settings_win_over_the_environment_but_not_over_the_machines_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEETBOT_AGENT_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("MEETBOT_AGENT_DATA_DIR", "/var/lib/meetbot/agent")
    monkeypatch.setenv("MEETBOT_AGENT_VOICE_PRELOAD", "true")
    handed = {
        "MEETBOT_AGENT_LOG_LEVEL": "DEBUG",
        "MEETBOT_AGENT_EXTRA_BROWSER_ARGS": '["--a", "--b=c d"]',
        "MEETBOT_AGENT_MEMORY_WARN_MB": "900",
        "MEETBOT_AGENT_DATA_DIR": "/elsewhere",
        "MEETBOT_AGENT_NO_SUCH": "1",
        "MEETBOT_AGENT_TTS_API_KEY": SECRET,
    }
    host = with_handed(AgentSettings, handed)
    assert host.log_level == "DEBUG" and host.extra_browser_args == ["--a", "--b=c d"]
    assert host.memory_warn_mb == 900.0 and host.voice_preload  # the environment still counts
    assert host.data_dir == Path("/var/lib/meetbot/agent")
    assert host.tts_api_key == SECRET
    assert unused(handed, AgentSettings) == [
        "MEETBOT_AGENT_DATA_DIR",
        "MEETBOT_AGENT_NO_SUCH",
    ]


def test_the_agent_refuses_a_bad_handed_setting_without_printing_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = BotConfig(
        bot_id=uuid.uuid4(),
        meeting_id=1,
        platform=Platform.GOOGLE_MEET,
        meeting_url="https://meet.google.com/abc-defg-hij",
        native_meeting_id="abc-defg-hij",
        agent_settings={"MEETBOT_AGENT_TTS_PROVIDER": SECRET},
    )
    path = tmp_path / "bot.json"
    path.write_text(config.model_dump_json())
    assert main(["--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "tts_provider" in err and SECRET not in err
