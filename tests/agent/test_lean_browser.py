"""The agent's lean Chromium: one ``--disable-features`` and one ``--enable-features`` that keep
Playwright's names, and a launched browser without the processes the lean flags remove."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from pathlib import Path

import playwright
import psutil
import pytest

from agent.capture.pcm import AudioCapture
from agent.process.settings import (
    LEAN_DISABLED_FEATURES,
    LEAN_ENABLED_FEATURES,
    PLAYWRIGHT_DISABLED_FEATURES,
    PLAYWRIGHT_ENABLED_FEATURES,
    AgentSettings,
    merge_feature_switches,
)

pytestmark = pytest.mark.browser


def _names(args: list[str], switch: str) -> list[str]:
    switches = [a for a in args if a.startswith(switch)]
    assert len(switches) == 1, switches
    return switches[0].removeprefix(switch).split(",")


def test_one_switch_of_each_kind_carries_every_name_in_first_seen_order() -> None:
    merged = merge_feature_switches(
        ["--a", "--disable-features=X,Y", "--enable-features=E", "--b", "--disable-features=Y,Z,"],
        ("W", "X"),
        ("D",),
    )
    assert merged == ["--a", "--b", "--disable-features=W,X,Y,Z", "--enable-features=D,E"]
    assert merge_feature_switches(["--a"], ("W",)) == ["--a", "--disable-features=W"]


def test_browser_args_keep_extra_feature_names_and_lean_ones() -> None:
    args = AgentSettings(
        extra_browser_args=["--disable-features=Foo", "--bar", "--enable-features=Baz"]
    ).browser_args()
    disabled = _names(args, "--disable-features=")
    assert {*PLAYWRIGHT_DISABLED_FEATURES, *LEAN_DISABLED_FEATURES, "Foo"} == set(disabled)
    enabled = _names(args, "--enable-features=")
    assert {*PLAYWRIGHT_ENABLED_FEATURES, *LEAN_ENABLED_FEATURES, "Baz"} == set(enabled)
    assert "--bar" in args


@pytest.mark.parametrize(
    ("list_name", "ours"),
    [
        ("disabledFeatures", PLAYWRIGHT_DISABLED_FEATURES),
        ("enabledFeatures", PLAYWRIGHT_ENABLED_FEATURES),
    ],
)
def test_our_lists_repeat_every_feature_the_installed_playwright_sets(
    list_name: str, ours: tuple[str, ...]
) -> None:
    # Ours replace Playwright's switches (Chromium keeps the last), so a Playwright upgrade
    # that sets a new feature must show up here rather than be silently dropped.
    bundle = Path(playwright.__file__).parent / "driver/package/lib/coreBundle.js"
    source = bundle.read_text(encoding="utf-8")
    block = re.search(rf"{list_name} = (?:\(\) => )?\[(.*?)\]\.filter", source, re.DOTALL)
    assert block is not None, f"Playwright's {list_name} moved; re-check the merge"
    theirs = set(re.findall(r'"([A-Za-z][A-Za-z0-9-]*)"', block.group(1)))
    assert theirs, f"no feature names parsed from Playwright's {list_name}"
    assert theirs <= set(ours)


async def test_lean_chromium_runs_one_renderer_and_no_zygote_gpu_network_or_webui_popup(
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
        assert not [c for c in lines if "network.mojom.NetworkService" in c]
        assert len([c for c in lines if "--type=renderer" in c]) == 1
    finally:
        await session.close()


def test_driver_node_options_apply_unless_the_operator_set_their_own() -> None:
    from agent.browser.session import DRIVER_NODE_OPTIONS, tune_driver_environment

    environ: dict[str, str] = {}
    tune_driver_environment(environ)
    assert environ == {"NODE_OPTIONS": DRIVER_NODE_OPTIONS}
    own = {"NODE_OPTIONS": "--max-old-space-size=256"}
    tune_driver_environment(own)
    assert own == {"NODE_OPTIONS": "--max-old-space-size=256"}


def test_driver_malloc_is_added_for_the_start_only_and_yields_to_the_operators() -> None:
    from agent.browser.session import DRIVER_MALLOC, driver_malloc

    environ = {"PATH": "/usr/bin"}
    with driver_malloc(environ):
        assert environ == {"PATH": "/usr/bin", **DRIVER_MALLOC}
    assert environ == {"PATH": "/usr/bin"}
    with contextlib.suppress(RuntimeError), driver_malloc(environ):
        raise RuntimeError("the driver did not start")
    assert environ == {"PATH": "/usr/bin"}
    own = {"MALLOC_ARENA_MAX": "4"}  # the operator tuned glibc: nothing of ours is mixed in
    with driver_malloc(own):
        assert own == {"MALLOC_ARENA_MAX": "4"}
    assert own == {"MALLOC_ARENA_MAX": "4"}


async def test_the_driver_alone_gets_the_malloc_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent.browser.session import DRIVER_MALLOC, BrowserSession

    for name in [k for k in os.environ if k.startswith("MALLOC_")]:
        monkeypatch.delenv(name)
    session = BrowserSession(AgentSettings(data_dir=tmp_path), "Notetaker", AudioCapture())
    await session.start()
    try:
        seen: dict[str, dict[str, str]] = {}
        for process in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                env = process.environ()
                kind = "driver" if process.name().startswith("node") else process.name()
                seen[kind] = {k: v for k, v in env.items() if k.startswith("MALLOC_")}
        assert seen.pop("driver") == dict(DRIVER_MALLOC)
        assert seen, "no Chromium process found under the test"
        assert all(not malloc for malloc in seen.values()), seen
        assert not [k for k in os.environ if k.startswith("MALLOC_")]
    finally:
        await session.close()


# Chromium rates the machine for on-device models this long after start (3 minutes unless
# this feature parameter says otherwise), in a utility process that then stays.
_RATE_SOON = "--enable-features=LogOnDeviceMetricsOnStartup:on_device_startup_metric_delay/1s"


async def _on_device_model_service_seen(tmp_path: Path, extra: list[str], watch_s: float) -> bool:
    from agent.browser.session import BrowserSession

    settings = AgentSettings(data_dir=tmp_path, extra_browser_args=[_RATE_SOON, *extra])
    session = BrowserSession(settings, "Notetaker", AudioCapture())
    await session.start()
    try:
        loop = asyncio.get_running_loop()
        until = loop.time() + watch_s
        while loop.time() < until:
            for process in psutil.Process().children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    if "OnDeviceModelService" in " ".join(process.cmdline()):
                        return True
            await asyncio.sleep(0.5)
        return False
    finally:
        await session.close()


async def test_chromium_rates_the_machine_in_a_model_service_when_the_class_is_unknown(
    tmp_path: Path,
) -> None:
    # The control: class 0 (unknown) overrides ours (Chromium keeps a switch's last value),
    # so the rating runs and the test can see its process.
    assert await _on_device_model_service_seen(
        tmp_path, ["--optimization-guide-performance-class=0"], watch_s=60
    )


async def test_lean_chromium_never_starts_the_on_device_model_service(tmp_path: Path) -> None:
    assert not await _on_device_model_service_seen(tmp_path, [], watch_s=10)
