"""Every test module declares exactly one category marker; collection fails otherwise.

The categories say what a test needs around it, so a developer can pick a cheap subset
(``scripts/test -m unit``) and CI knows what each part costs:

- ``unit``: no database, model or browser: logic, temporary files, loopback servers and
  local subprocesses;
- ``api``: the control plane's HTTP API or link against a real database (SQLite, PostgreSQL);
- ``model``: a real whisper model, voice or ffmpeg on real audio, no browser;
- ``browser``: drives Debian's Chromium through Playwright (the testmeeting, the agent);
- ``vm``: boots a qemu virtual machine (the bot image).

``slow`` (more than a few seconds) is not a category and may go beside any of them. The
module states its category in ``pytestmark``; a marker on a single test does not count.
"""

from __future__ import annotations

import pytest

CATEGORIES = ("unit", "api", "model", "browser", "vm")


def pytest_configure(config: pytest.Config) -> None:
    """Register the category markers (their meaning is the module docstring's list)."""
    for name in CATEGORIES:
        config.addinivalue_line("markers", f"{name}: test category (see tests/plugins/categories)")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


def _module_categories(module: pytest.Module) -> list[str]:
    declared = getattr(module.obj, "pytestmark", [])
    marks = declared if isinstance(declared, list) else [declared]
    return [mark.name for mark in marks if mark.name in CATEGORIES]


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Refuse the run when a collected module declares no category or more than one.

    Raises:
        pytest.UsageError: Names each offending module and what it declared.
    """
    wrong: dict[str, list[str]] = {}
    seen: set[str] = set()
    for item in items:
        module = item.getparent(pytest.Module)
        if module is None or module.nodeid in seen:
            continue
        seen.add(module.nodeid)
        found = _module_categories(module)
        if len(found) != 1:
            wrong[module.nodeid] = found
    if wrong:
        lines = [f"  {nodeid}: {found or 'none'}" for nodeid, found in sorted(wrong.items())]
        raise pytest.UsageError(
            "each test module must declare exactly one category marker in pytestmark, one of "
            f"{', '.join(CATEGORIES)}:\n" + "\n".join(lines)
        )
