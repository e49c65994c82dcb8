"""One Chromium for one bot: launch, the in-page agent script, bindings, screenshots, close.

Chromium is Debian's (``executable_path``; ``playwright install`` cannot run offline) with the
quiet flags of :data:`agent.process.settings.QUIET_CHROMIUM_ARGS` plus ``extra_browser_args`` (e.g.
``--host-resolver-rules`` for the testmeeting). ``inject.js`` is added to the context before
any page script runs; it captures remote audio and gives the bot an agent-controlled
microphone, camera and screen (no physical devices).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
from collections.abc import Iterator, Mapping, MutableMapping
from importlib import resources
from typing import Any

from playwright.async_api import (
    Browser,
    BrowserContext,
    Page,
    Playwright,
    ProxySettings,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError

from agent.capture.pcm import AudioCapture
from agent.process.settings import AgentSettings

log = logging.getLogger(__name__)

# V8 flags for Playwright's node driver. Its young generation defaults to 16 MB per
# semi-space; the driver only relays small messages (100 ms PCM blocks, probes), and 1 MB kept
# its peak PSS at ~119 MB instead of ~139 MB in a 60 s meeting (bench/join.py).
DRIVER_NODE_OPTIONS = "--max-semi-space-size=1"


def tune_driver_environment(environ: MutableMapping[str, str]) -> None:
    """Give the node driver :data:`DRIVER_NODE_OPTIONS` unless ``NODE_OPTIONS`` is set.

    Playwright starts its driver with this process's environment and has no option of its own
    for it, so the agent's entry points call this on ``os.environ`` before any browser starts.
    """
    environ.setdefault("NODE_OPTIONS", DRIVER_NODE_OPTIONS)


# glibc's malloc settings for the node driver alone (issue 19). The driver relays every
# WebSocket frame the page receives and sends (CDP events, base64 in JSON: hundreds of kB for
# a large frame) and by default glibc raises its mapping threshold to the largest block freed,
# so such transient blocks come from the heap and stay there after they are freed: the
# driver grew from 124 to 150-172 MB over a 20-minute soak. A fixed threshold maps them on
# their own and returns them when freed; two arenas for its V8 and libuv threads.
DRIVER_MALLOC: Mapping[str, str] = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "131072"}


@contextlib.contextmanager
def driver_malloc(environ: MutableMapping[str, str]) -> Iterator[None]:
    """:data:`DRIVER_MALLOC` in ``environ`` while Playwright starts its driver, then removed.

    Playwright starts the driver with this process's environment; Chromium and every other
    child get the environment without them (:func:`browser_environment`). An operator's own
    ``MALLOC_*`` variables win: none is added when any is set.
    """
    added = {} if any(name.startswith("MALLOC_") for name in environ) else dict(DRIVER_MALLOC)
    environ.update(added)
    try:
        yield
    finally:
        for name in added:
            environ.pop(name, None)


def browser_environment(
    settings: AgentSettings, environ: Mapping[str, str]
) -> dict[str, str | float | bool]:
    """Chromium's environment: ``environ`` with the bot's display and sound server, if any.

    Always given to Playwright: without it Chromium would inherit the driver's environment,
    :data:`DRIVER_MALLOC` included.

    Returns:
        A copy of ``environ`` with ``DISPLAY`` and ``PULSE_SERVER`` from the settings when set.
    """
    env: dict[str, str | float | bool] = dict(environ)
    if settings.display:
        env["DISPLAY"] = settings.display
    if settings.pulse_server:
        env["PULSE_SERVER"] = settings.pulse_server
    return env


def logo_data_url() -> str:
    """The service logo (``logo.png``, 1280x720, shipped in this package) as a ``data:`` URL."""
    png = resources.files("agent.browser").joinpath("logo.png").read_bytes()
    return "data:image/png;base64," + base64.b64encode(png).decode()


def inject_script(bot_name: str, avatar: str | None = None) -> str:
    """The init script: the bot's name, the logo and camera image, then ``inject.js``.

    Args:
        bot_name: Drawn as initials when no image decodes.
        avatar: The camera's image at join (a ``data:`` URL); None shows the logo.
    """
    source = resources.files("agent.browser").joinpath("inject.js").read_text(encoding="utf-8")
    logo = logo_data_url()
    return (
        f"window.__meetbotBotName = {json.dumps(bot_name)};\n"
        f"window.__meetbotLogo = {json.dumps(logo)};\n"
        f"window.__meetbotAvatar = {json.dumps(avatar or logo)};\n{source}"
    )


class BrowserSession:
    """Owns Playwright, the browser, its context and the meeting page.

    Args:
        settings: Browser settings of the agent host.
        bot_name: Display name (drawn on the default camera image).
        capture: Receiver of the page's audio blocks.
    """

    def __init__(self, settings: AgentSettings, bot_name: str, capture: AudioCapture) -> None:
        self._settings = settings
        self._bot_name = bot_name
        self._capture = capture
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._context: BrowserContext | None = None
        self._page: Page | None = None

    @property
    def page(self) -> Page:
        """The meeting page.

        Raises:
            RuntimeError: :meth:`start` has not run.
        """
        if self._page is None:
            raise RuntimeError("browser session not started")
        return self._page

    async def start(self, avatar: str | None = None) -> Page:
        """Launch Chromium and open a blank page with the bindings and the init script.

        Args:
            avatar: The camera image at join (a ``data:`` URL); None shows the service logo.
        """
        s = self._settings
        with driver_malloc(os.environ):
            self._playwright = await async_playwright().start()
        self._browser = await self._playwright.chromium.launch(
            executable_path=str(s.chromium_path),
            headless=s.headless,
            args=[
                *s.browser_args(),
                "--window-position=0,0",
                f"--window-size={s.viewport_width},{s.viewport_height}",
            ],
            env=browser_environment(s, os.environ),
        )
        on_screen = not s.headless and bool(s.display)
        self._context = await self._browser.new_context(
            ignore_https_errors=s.ignore_https_errors,
            # The capture worklet loads from a blob: URL, which a strict CSP would refuse
            # (findings.md §3 "CSP").
            bypass_csp=True,
            # On the bot's own display the page takes the window's real size, which
            # _cover_screen makes the screen's: an emulated viewport would hide what the
            # window's toolbars cost.
            viewport=None
            if on_screen
            else {"width": s.viewport_width, "height": s.viewport_height},
            no_viewport=on_screen,
            locale="en-US",
        )
        await self._context.expose_binding("__meetbotPcm", self._on_pcm)
        await self._context.expose_binding("__meetbotTrack", self._on_track)
        await self._context.add_init_script(script=inject_script(self._bot_name, avatar))
        self._page = await self._context.new_page()
        if on_screen:
            await self._cover_screen(self._page)
        log.info("browser started", extra={"headless": s.headless, "display": s.display})
        return self._page

    async def _cover_screen(self, page: Page) -> None:
        """Place the window so its page area is exactly the screen (toolbars above the top).

        Xvfb has no window manager, so a window goes where it is asked, even partly off the
        screen: the tab strip and address bar are pushed above the top edge and a screen
        recording shows the meeting page only. A failure is logged; the bot still joins.
        """
        assert self._context is not None  # noqa: S101 - start() made it
        s = self._settings
        try:
            cdp = await self._context.new_cdp_session(page)
            try:
                window = await cdp.send("Browser.getWindowForTarget")
                outer_w, outer_h, inner_w, inner_h = await page.evaluate(
                    "() => [outerWidth, outerHeight, innerWidth, innerHeight]"
                )
                left, top = max(0, outer_w - inner_w), max(0, outer_h - inner_h)
                bounds = {
                    "left": -left,
                    "top": -top,
                    "width": s.viewport_width + left,
                    "height": s.viewport_height + top,
                }
                await cdp.send(
                    "Browser.setWindowBounds",
                    {"windowId": window["windowId"], "bounds": bounds},
                )
            finally:
                await cdp.detach()
        except PlaywrightError as exc:
            log.warning("browser window not placed on the screen", extra={"error": str(exc)})
            return
        size = await page.evaluate("() => [innerWidth, innerHeight]")
        log.info("browser window covers the screen", extra={"toolbars_px": top, "page": size})

    def _on_pcm(self, _source: Any, blocks: object) -> None:
        self._capture.on_pcm_batch(blocks)

    def _on_track(self, _source: Any, track_id: str, event: str, origin: str) -> None:
        self._capture.on_track(track_id, event, origin)

    async def screenshot(self) -> bytes:
        """PNG of the page as the bot sees it (the viewport)."""
        return await self.page.screenshot(type="png")

    async def set_avatar(self, data_url: str | None) -> bool:
        """Show an image (a ``data:`` URL) on the bot's camera, or the logo when None.

        Returns:
            False when the image does not decode (the camera keeps its previous image).
        """
        return bool(await self.page.evaluate("(url) => window.__meetbot.setAvatar(url)", data_url))

    async def set_screen_image(self, data_url: str) -> bool:
        """Feed the bot's screen stream (and camera) an image; False when it does not decode."""
        return bool(
            await self.page.evaluate("(url) => window.__meetbot.setScreenImage(url)", data_url)
        )

    async def set_screen_video(self, url: str) -> dict[str, Any]:
        """Play a video (a URL of the meeting page's origin) on the screen stream.

        Returns:
            ``{"ok": bool, "audio": bool, "duration": seconds}``: ``ok`` false when it does not
            load or play; ``audio`` whether its sound goes into the microphone graph.
        """
        result: dict[str, Any] = await self.page.evaluate(
            "(url) => window.__meetbot.setScreenVideo(url)", url
        )
        return result

    async def screen_frame(self, base64_jpeg: str) -> None:
        """Feed the bot's screen stream one frame (base64 JPEG) of a page it renders."""
        await self.page.evaluate("(data) => window.__meetbot.screenFrame(data)", base64_jpeg)

    async def clear_screen(self) -> None:
        """Empty the screen stream; the camera shows its own image again."""
        await self.page.evaluate("() => window.__meetbot.clearScreen()")

    async def isolated_page(
        self, width: int, height: int, proxy: ProxySettings | None = None
    ) -> Page:
        """A page in a context of its own (no init script, bindings or cookies of the meeting).

        ``proxy``: every connection of the context goes through it (the screen share's guarded
        egress, :func:`agent.media_out.egress.share_proxy`). The caller closes the page with
        ``page.context.close()``; :meth:`close` closes it too.

        Raises:
            RuntimeError: :meth:`start` has not run.
        """
        if self._browser is None:
            raise RuntimeError("browser session not started")
        context = await self._browser.new_context(
            ignore_https_errors=self._settings.ignore_https_errors,
            viewport={"width": width, "height": height},
            locale="en-US",
            proxy=proxy,
        )
        return await context.new_page()

    async def play_microphone(self, pcm: bytes, sample_rate: int) -> float:
        """Queue mono int16 PCM at ``sample_rate`` Hz on the bot's microphone.

        Returns:
            Seconds of speech queued from now, this piece included.
        """
        queued = await self.page.evaluate(
            "([b64, rate]) => window.__meetbot.micPlay(b64, rate)",
            [base64.b64encode(pcm).decode("ascii"), sample_rate],
        )
        return float(queued)

    async def microphone_queued(self) -> float:
        """Seconds of speech still queued on the bot's microphone."""
        return float(await self.page.evaluate("() => window.__meetbot.micQueued()"))

    async def stop_microphone(self) -> None:
        """Drop every piece of speech queued on the bot's microphone (silent at once)."""
        await self.page.evaluate("() => window.__meetbot.micStop()")

    async def capture_state(self) -> dict[str, Any]:
        """The page's capture state: AudioContext state and tracks (for diagnostics, tests)."""
        state: dict[str, Any] = await self.page.evaluate("() => window.__meetbot.captureState()")
        return state

    async def relieve_memory(self) -> bool:
        """Ask Chromium to free its caches, as a system short of memory would.

        Sends a critical memory-pressure notification (DevTools ``Memory.
        simulatePressureNotification``, which reaches every Chromium process) and a V8 garbage
        collection of the page. The meeting goes on untouched: only caches and garbage go.
        Measured: a renderer whose software cache of drawn video frames had grown to 312 MB
        USS fell to 52 MB (issue 19).

        Returns:
            False when there is no page to ask.
        """
        if self._page is None or self._context is None:
            return False
        cdp = await self._context.new_cdp_session(self._page)
        try:
            await cdp.send("Memory.simulatePressureNotification", {"level": "critical"})
            await cdp.send("HeapProfiler.collectGarbage")
        finally:
            with contextlib.suppress(PlaywrightError):
                await cdp.detach()
        return True

    async def close(self) -> None:
        """Close page, context, browser and Playwright; safe to call more than once."""
        for closer in (self._context, self._browser):
            if closer is not None:
                with contextlib.suppress(PlaywrightError):
                    await closer.close()
        if self._playwright is not None:
            with contextlib.suppress(PlaywrightError):
                await self._playwright.stop()
        self._page = self._context = self._browser = self._playwright = None
