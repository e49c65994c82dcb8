"""The import contract in pyproject.toml catches the arrows it exists to forbid.

A copy of the five packages gets one deliberately wrong import per rule (each an arrow the
codebase once had or that docs/architecture.md §11 forbids); ``lint-imports`` must break each
contract it names, and must keep every contract on the real tree.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.plugins.paths import REPO_ROOT

pytestmark = pytest.mark.unit

PACKAGES = ("agent", "control_plane", "testmeeting", "meetbot", "meetbot_common")

# (module added to the copy, or one of the copy's modules the import is appended to, the import
# it makes, words of the contract that must break)
WRONG_IMPORTS = [
    ("control_plane/auth/wrong_up.py", "import control_plane.api.http", "control_plane layers"),
    (
        "control_plane/api/wrong_up.py",
        "import control_plane.webhooks.routes",
        "control_plane layers",
    ),
    (
        "control_plane/bots/wrong_side.py",
        "import control_plane.meetings.routes",
        "control_plane layers",
    ),
    (
        "control_plane/db/wrong_key.py",
        "import control_plane.agent_hub.keys",
        "control_plane layers",
    ),
    (
        "control_plane/records/wrong_agent.py",
        "import agent.meeting.bot",
        "imports nothing of the agent",
    ),
    ("agent/transcribe/wrong_up.py", "import agent.media_in.meeting_media", "agent layers"),
    ("agent/platforms/wrong_up.py", "import agent.meeting.bot", "agent layers"),
    ("agent/link/wrong_cp.py", "import control_plane.settings", "agent never imports"),
    ("testmeeting/wrong_agent.py", "import agent.contracts.status", "testmeeting imports neither"),
    ("control_plane/meetings/wrong_meetbot.py", "import meetbot.cli", "nothing imports it"),
    (
        "agent/contracts/wrong_down.py",
        "import agent.process.settings",
        "agent.contracts (the wire models)",
    ),
    ("meetbot_common/wrong_up.py", "import agent.contracts.status", "meetbot_common (what every"),
    (
        "agent/contracts/wrong_rules.py",
        "import meetbot_common.ssrf",
        "agent.contracts (the wire models)",
    ),
    ("agent/media_out/wrong_up.py", "import agent.meeting.commands", "agent layers"),
    ("agent/link/wrong_up.py", "import agent.transcribe.pipe", "agent layers"),
    ("agent/meeting/watchdog.py", "import agent.meeting.bot", "agent.meeting: the bot over"),
    ("agent/meeting/wrong_wiring.py", "import agent.wiring", "agent layers"),
    ("agent/process/logs.py", "import agent.process.settings", "agent.process: settings, logs"),
    ("agent/platforms/driver.py", "import agent.platforms.roster", "agent.platforms: the adapters"),
]


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(  # noqa: S603 - our own venv's tool with fixed arguments
        [str(lint), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_real_tree_keeps_every_contract() -> None:
    done = _lint(REPO_ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_each_forbidden_arrow_breaks_its_contract(tmp_path: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(
            REPO_ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for path, statement, _ in WRONG_IMPORTS:
        target = tmp_path / path
        if target.exists():
            target.write_text(
                f"{target.read_text(encoding='utf-8')}\n{statement}\n", encoding="utf-8"
            )
        else:
            target.write_text(f'"""A wrong import."""\n\n{statement}\n', encoding="utf-8")

    done = _lint(tmp_path)

    assert done.returncode != 0
    report = done.stdout.split("Broken contracts", 1)[-1]
    for path, statement, contract in WRONG_IMPORTS:
        module = path.removesuffix(".py").replace("/", ".")
        assert module in report, f"{statement} in {module} was not reported"
        assert contract in report, f"contract {contract!r} did not break"


def test_a_module_no_layer_names_breaks_the_layers(tmp_path: Path) -> None:
    shutil.copytree(REPO_ROOT / "control_plane", tmp_path / "control_plane")
    for package in ("agent", "testmeeting", "meetbot", "meetbot_common"):
        shutil.copytree(REPO_ROOT / package, tmp_path / package)
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "control_plane" / "unplaced.py").write_text('"""Not in any layer."""\n')

    done = _lint(tmp_path)

    assert done.returncode != 0
    assert "control_plane.unplaced" in done.stdout + done.stderr
