"""The agent's lean Chromium: one ``--disable-features`` that keeps Playwright's names, and a
launched browser without the processes the lean flags remove."""

from __future__ import annotations

import re
from pathlib import Path

import playwright
import psutil
import pytest

from agent.capture.pcm import AudioCapture
from agent.settings import (
    LEAN_DISABLED_FEATURES,
    PLAYWRIGHT_DISABLED_FEATURES,
    AgentSettings,
    merge_feature_switches,
)


def _disable_switches(args: list[str]) -> list[str]:
    return [a for a in args if a.startswith("--disable-features=")]


@pytest.mark.unit
def test_one_disable_features_switch_carries_every_name_in_first_seen_order() -> None:
    merged = merge_feature_switches(
        ["--a", "--disable-features=X,Y", "--b", "--disable-features=Y,Z,"], ("W", "X")
    )
    assert merged == ["--a", "--b", "--disable-features=W,X,Y,Z"]


@pytest.mark.unit
def test_browser_args_keep_extra_feature_names_and_lean_ones() -> None:
    args = AgentSettings(extra_browser_args=["--disable-features=Foo", "--bar"]).browser_args()
    switches = _disable_switches(args)
    assert len(switches) == 1 and args[-1] == switches[0]
    names = switches[0].removeprefix("--disable-features=").split(",")
    assert {*PLAYWRIGHT_DISABLED_FEATURES, *LEAN_DISABLED_FEATURES, "Foo"} == set(names)
    assert "--bar" in args


@pytest.mark.unit
def test_our_list_repeats_every_feature_the_installed_playwright_disables() -> None:
    # Ours replaces Playwright's switch (Chromium keeps the last), so a Playwright upgrade that
    # disables something new must show up here rather than be silently re-enabled.
    bundle = Path(playwright.__file__).parent / "driver/package/lib/coreBundle.js"
    source = bundle.read_text(encoding="utf-8")
    block = re.search(r"disabledFeatures = \[(.*?)\]\.filter", source, re.DOTALL)
    assert block is not None, "Playwright's disabledFeatures list moved; re-check the merge"
    theirs = set(re.findall(r'^\s*"([A-Za-z0-9-]+)"', block.group(1), re.MULTILINE))
    assert theirs, "no feature names parsed from Playwright's list"
    assert theirs <= set(PLAYWRIGHT_DISABLED_FEATURES)


@pytest.mark.browser
async def test_lean_chromium_runs_one_renderer_and_no_zygote_or_webui_popup(
    tmp_path: Path,
) -> None:
    from agent.browser.session import BrowserSession

    session = BrowserSession(AgentSettings(data_dir=tmp_path), "Notetaker", AudioCapture())
    page = await session.start()
    try:
        await page.set_content("<p>one trusted tab</p>")
        lines = [
            " ".join(p.cmdline())
            for p in psutil.Process().children(recursive=True)
            if not p.name().startswith("node")
        ]
        assert lines, "no Chromium process found under the test"
        assert not [c for c in lines if "--top-chrome-webui" in c]
        assert not [c for c in lines if "--type=zygote" in c]
        assert not [c for c in lines if "--type=gpu-process" in c]
        assert len([c for c in lines if "--type=renderer" in c]) == 1
    finally:
        await session.close()
