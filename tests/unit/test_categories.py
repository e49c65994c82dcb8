"""The category rule of the suite: a test module without exactly one category fails collection."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.plugins.paths import REPO_ROOT

pytestmark = pytest.mark.unit

CONFTEST = 'pytest_plugins = ("tests.plugins.categories",)\n'


def _collect(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - this interpreter's pytest on a temporary folder
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(folder),
            str(folder),
        ],
        cwd=folder,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("declaration", "collects"),
    [
        ("", False),
        ("pytestmark = pytest.mark.slow", False),
        ("pytestmark = [pytest.mark.unit, pytest.mark.api]", False),
        ("pytestmark = pytest.mark.unit", True),
        ("pytestmark = [pytest.mark.model, pytest.mark.slow]", True),
    ],
)
def test_collection_needs_exactly_one_category(
    tmp_path: Path, declaration: str, collects: bool
) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "test_sample.py").write_text(
        f"import pytest\n\n{declaration}\n\n\ndef test_one() -> None:\n    assert True\n",
        encoding="utf-8",
    )

    done = _collect(tmp_path)

    if collects:
        assert done.returncode == 0, done.stdout + done.stderr
    else:
        assert done.returncode != 0
        assert "exactly one category marker" in done.stdout + done.stderr
        assert "test_sample.py" in done.stdout + done.stderr
