"""The bot image's inputs: the cache key, the package lists, the seed, the cache, the report."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from meetbot.image.build import BuildOptions, selftest_report
from meetbot.image.cache import IMAGE_FILE, Manifest, cached
from meetbot.image.host import package_list
from meetbot.image.inputs import find_checkout, input_files, input_key
from meetbot.image.seed import BUILD_USER, write_seed
from tests.plugins.paths import REPO_ROOT

pytestmark = pytest.mark.unit

# The lists each kind of machine installs: a developer/CI machine (scripts/setup), a bot
# machine (images/), the machine that builds the image (meetbot image build).
MACHINES = {
    "developer": ("common", "dev"),
    "bot": ("common", "vm", "base"),
    "image builder": ("checks", "builder"),
}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of the image's inputs of this checkout, to change freely."""
    root = tmp_path / "checkout"
    root.mkdir()
    for relative in input_files(REPO_ROOT):
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / relative, target)
    return root


def test_key_is_stable_and_ignores_bytecode(checkout: Path) -> None:
    key = input_key(checkout)
    assert len(key) == 64
    (checkout / "agent" / "__pycache__").mkdir(exist_ok=True)
    (checkout / "agent" / "__pycache__" / "bot.cpython-311.pyc").write_bytes(b"\0" * 16)
    assert input_key(checkout) == key


@pytest.mark.parametrize(
    "relative", ["images/steps/30-venv.sh", "packer/meetbot.pkr.hcl", "requirements.lock",
                 "agent/meeting/bot.py", "meetbot/cli.py"]
)  # fmt: skip
def test_key_changes_with_every_input(checkout: Path, relative: str) -> None:
    key = input_key(checkout)
    with (checkout / relative).open("a") as handle:
        handle.write("\n")
    assert input_key(checkout) != key


def test_key_changes_with_options_and_base_key_ignores_packer(checkout: Path) -> None:
    default = BuildOptions()
    assert input_key(checkout, default.key_options()) != input_key(
        checkout, BuildOptions(disk_size="12G").key_options()
    )
    base_key = input_key(checkout, exclude=("packer",))
    with (checkout / "packer" / "meetbot.pkr.hcl").open("a") as handle:
        handle.write("\n")
    assert input_key(checkout, exclude=("packer",)) == base_key


def test_checkout_is_found_from_a_subfolder() -> None:
    assert find_checkout(REPO_ROOT / "images" / "steps") == REPO_ROOT


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_no_package_is_listed_twice_for_a_machine(machine: str) -> None:
    seen: dict[str, str] = {}
    for name in MACHINES[machine]:
        packages = package_list(REPO_ROOT, name)
        assert packages, name
        for package in packages:
            assert package not in seen, f"{package} in both {seen.get(package)}.txt and {name}.txt"
            seen[package] = name


def test_shell_and_python_read_the_lists_alike() -> None:
    bash = shutil.which("bash")
    assert bash is not None
    script = f'. "{REPO_ROOT}/images/lib.sh"; package_list common vm'
    done = subprocess.run(  # noqa: S603 - bash with our own library
        [bash, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == package_list(REPO_ROOT, "common", "vm")


def test_seed_creates_the_build_user(tmp_path: Path) -> None:
    write_seed(tmp_path / "seed", "p'a\"ss: #word", instance_id="meetbot-build-test")
    user_data_text = (tmp_path / "seed" / "user-data").read_text()
    assert user_data_text.startswith("#cloud-config\n")
    user_data = yaml.safe_load(user_data_text)
    (user,) = user_data["users"]
    assert user["name"] == BUILD_USER
    assert user["plain_text_passwd"] == "p'a\"ss: #word"
    assert user["lock_passwd"] is False
    assert user_data["ssh_pwauth"] is True
    meta = yaml.safe_load((tmp_path / "seed" / "meta-data").read_text())
    assert meta["instance-id"] == "meetbot-build-test"
    assert (tmp_path / "seed").stat().st_mode & 0o077 == 0


def test_cache_returns_only_complete_builds(tmp_path: Path) -> None:
    key = "ab" * 32
    assert cached(tmp_path, key) is None
    folder = tmp_path / key
    folder.mkdir()
    manifest = Manifest(
        key=key, image=IMAGE_FILE, built_at="2026-11-23T20:00:00+00:00", accelerator="tcg",
        cpus=1, base_seconds=250.0, packer_seconds=400.0, size_bytes=3, virtual_size="8G",
        options={"disk_size": "8G"}, selftest=["self-test: 7 passed, 0 failed"],
    )  # fmt: skip
    manifest.write(folder)
    assert cached(tmp_path, key) is None  # manifest without its image
    (folder / IMAGE_FILE).write_bytes(b"qcow")
    hit = cached(tmp_path, key)
    assert hit == (folder / IMAGE_FILE, manifest)
    (folder / "manifest.json").write_text("[]")
    assert cached(tmp_path, key) is None


def test_selftest_report_is_cut_from_packer_output() -> None:
    lines = [
        "==> qemu.meetbot: Provisioning with shell script: /tmp/packer-shell1",
        "    qemu.meetbot: install.sh: step 60-system.sh done in 0 s",
        "    qemu.meetbot: meetbot image self-test on meetbot (6.1.0-41-cloud-amd64, 1 CPU)",
        "    qemu.meetbot: PASS  venv imports the agent                     3.2 s",
        "    qemu.meetbot:       meetbot 0.1.0, faster-whisper 1.2.1, playwright 1.65.2",
        "    qemu.meetbot: self-test: 7 passed, 0 failed",
        "==> qemu.meetbot: Gracefully halting virtual machine...",
    ]
    assert selftest_report(lines) == [
        "meetbot image self-test on meetbot (6.1.0-41-cloud-amd64, 1 CPU)",
        "PASS  venv imports the agent                     3.2 s",
        "      meetbot 0.1.0, faster-whisper 1.2.1, playwright 1.65.2",
        "self-test: 7 passed, 0 failed",
    ]
