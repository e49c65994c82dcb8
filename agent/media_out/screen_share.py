"""Screen share: what the bot presents through the platform's share control (issue 14).

The in-page screen stream (``inject.js``) is a 1280x720 canvas captured at 30 fps; this module
feeds it and drives the platform's share control:

- ``image_url``: fetched under the SSRF rules (:mod:`agent.media_out.remote_media`) and drawn on
  every frame;
- ``url``: a web page the bot renders in an isolated browser context (no cookies, init script or
  bindings of the meeting page) of the same size; its frames come from a CDP screencast
  (``Page.startScreencast``, JPEG) and are drawn into the shared stream as they arrive. Every
  connection of that context — navigations, redirect hops, subresources, WebSockets, workers
  and service workers — goes through a guarded egress proxy of its own
  (:class:`agent.media_out.egress.GuardedProxy`) that checks the address it connects to against the
  same SSRF rules, so a redirect or a name that changes its answer cannot lead inside; the
  page gets no WebRTC or WebTransport (UDP, which no proxy carries);
- ``video_url``: fetched under the same rules (at most 50 MiB, ``video/*``) and served to the
  meeting page from its own origin (a Playwright route, so the canvas stays readable); the page
  plays it once, draws every frame and feeds its sound into the bot's microphone graph
  (``feedMic`` in ``inject.js``), which the platform hears while the microphone is unmuted.

While a share is active the camera shows the shared content too; :meth:`ScreenShare.stop`
clicks the share control's stop, empties the stream and so restores the camera's image.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page, Route

from agent.browser.session import BrowserSession
from agent.contracts.link import CommandErrorCode, ScreenShareCommand
from agent.media_out.egress import GuardedProxy, share_proxy, without_udp
from agent.media_out.remote_media import MAX_VIDEO_BYTES, fetch_media, image_data_url
from agent.platforms.base import PlatformAdapter
from agent.process.errors import CommandError
from meetbot_common.ssrf import TargetPolicy, TargetRefused, check_url

log = logging.getLogger(__name__)

SHARE_WIDTH = 1280
SHARE_HEIGHT = 720
PAGE_LOAD_TIMEOUT_MS = 20_000
SCREENCAST_QUALITY = 80
_SOURCE = CommandErrorCode.SCREEN_SOURCE_UNAVAILABLE


class SharedPage:
    """A page rendered for sharing, its screencast frames forwarded to the meeting page.

    Args:
        page: The page, in a context of its own.
        browser: The meeting's browser session (receiver of the frames).
        egress: The proxy every connection of the page's context goes through (closed with
            the page).
    """

    def __init__(self, page: Page, browser: BrowserSession, egress: GuardedProxy) -> None:
        self._page = page
        self._browser = browser
        self._egress = egress
        self._forwards: set[asyncio.Task[None]] = set()
        self.frames = 0

    async def start(self) -> None:
        """Start the screencast; each frame is acknowledged and drawn into the shared stream."""
        cdp = await self._page.context.new_cdp_session(self._page)

        def on_frame(params: dict[str, Any]) -> None:
            self.frames += 1
            task = asyncio.create_task(self._forward(cdp, params), name="screen-frame")
            self._forwards.add(task)
            task.add_done_callback(self._forwards.discard)

        cdp.on("Page.screencastFrame", on_frame)
        await cdp.send(
            "Page.startScreencast",
            {
                "format": "jpeg",
                "quality": SCREENCAST_QUALITY,
                "maxWidth": SHARE_WIDTH,
                "maxHeight": SHARE_HEIGHT,
                "everyNthFrame": 1,
            },
        )

    async def _forward(self, cdp: Any, params: dict[str, Any]) -> None:
        with contextlib.suppress(PlaywrightError):
            await self._browser.screen_frame(params["data"])
            # Chromium sends the next frame only after this one is acknowledged.
            await cdp.send("Page.screencastFrameAck", {"sessionId": params["sessionId"]})

    async def close(self) -> None:
        """Close the page's context and its egress, and wait for the frames in flight."""
        with contextlib.suppress(PlaywrightError):
            await self._page.context.close()
        await self._egress.close()
        for task in list(self._forwards):
            task.cancel()
        await asyncio.gather(*self._forwards, return_exceptions=True)


class ScreenShare:
    """Starts and stops the bot's screen share.

    Args:
        browser: The meeting's browser session.
        adapter: The platform adapter (its share control).
        policy: Which URLs shared images and pages may reach.
    """

    def __init__(
        self, browser: BrowserSession, adapter: PlatformAdapter, policy: TargetPolicy
    ) -> None:
        self._browser = browser
        self._adapter = adapter
        self._policy = policy
        self._shared_page: SharedPage | None = None
        self._video_route: str | None = None
        self.active = False

    @property
    def shared_page(self) -> SharedPage | None:
        """The page being shared, while a page share runs."""
        return self._shared_page

    async def start(self, command: ScreenShareCommand) -> dict[str, Any]:
        """Show the command's source on the screen stream and press the share control.

        A share already running is replaced (its page closed) without stopping the share.

        Returns:
            ``{"source": "image" | "page" | "video", "width": 1280, "height": 720}``, and for a
            video ``audio`` (its sound goes into the microphone graph) and ``duration`` (s).

        Raises:
            CapabilityNotSupported: The platform has no share control.
            CommandError: ``screen_source_unavailable`` for a source that is refused, cannot be
                fetched or loaded, or does not decode.
            BrowserError: The share control did not respond.
        """
        extra: dict[str, Any] = {}
        if command.video_url:
            extra = await self._play_video(command.video_url)
            source = "video"
        elif command.image_url:
            data_url = await image_data_url(command.image_url, self._policy, _SOURCE)
            await self._close_page()
            if not await self._browser.set_screen_image(data_url):
                raise CommandError(_SOURCE, "image_url does not decode as an image", "image_url")
            source = "image"
        else:
            page = await self._open_page(command.url or "")
            await self._close_video()
            await self._close_page()
            self._shared_page = page
            await page.start()
            source = "page"
        try:
            await self._adapter.set_sharing(self._browser.page, True)
        except Exception:
            await self._clear()
            raise
        self.active = True
        log.info("screen share started", extra={"source": source})
        return {"source": source, "width": SHARE_WIDTH, "height": SHARE_HEIGHT, **extra}

    async def stop(self) -> dict[str, Any]:
        """Press the share control's stop and give the camera its own image back.

        Returns:
            ``{"was_sharing": bool}``.

        Raises:
            BrowserError: The share control did not respond (the stream is emptied anyway).
        """
        was = self.active
        try:
            if was:
                await self._adapter.set_sharing(self._browser.page, False)
        finally:
            await self._clear()
        log.info("screen share stopped", extra={"was_sharing": was})
        return {"was_sharing": was}

    async def close(self) -> None:
        """Release the shared page, if any (the bot is leaving)."""
        await self._close_page()

    async def _clear(self) -> None:
        self.active = False
        await self._close_page()
        await self._close_video()
        with contextlib.suppress(PlaywrightError):
            await self._browser.clear_screen()

    async def _close_page(self) -> None:
        page, self._shared_page = self._shared_page, None
        if page is not None:
            await page.close()

    async def _play_video(self, url: str) -> dict[str, Any]:
        """Fetch the video, serve it on the meeting page's origin and play it on the stream."""
        kind, body = await fetch_media(
            url, self._policy, _SOURCE, "video_url", "video/", MAX_VIDEO_BYTES
        )
        page = self._browser.page
        origin = urlsplit(page.url)
        served = f"{origin.scheme}://{origin.netloc}/__meetbot/screen-video/{uuid.uuid4().hex}"

        async def serve(route: Route) -> None:
            await route.fulfill(status=200, body=body, content_type=kind)

        await page.route(served, serve)
        await self._close_page()
        await self._close_video()
        self._video_route = served
        played = await self._browser.set_screen_video(served)
        if not played.get("ok"):
            await self._close_video()
            raise CommandError(_SOURCE, "video_url does not load or play", "video_url")
        return {"audio": bool(played.get("audio")), "duration": played.get("duration", 0)}

    async def _close_video(self) -> None:
        served, self._video_route = self._video_route, None
        if served is not None:
            with contextlib.suppress(PlaywrightError):
                await self._browser.page.unroute(served)

    async def _open_page(self, url: str) -> SharedPage:
        """Load ``url`` in an isolated page whose every connection passes the SSRF rules."""
        try:
            check_url(url, self._policy)
        except TargetRefused as exc:
            raise CommandError(_SOURCE, f"url is not allowed: {exc}", "url") from exc
        egress = GuardedProxy(self._policy)
        await egress.start()
        try:
            page = await self._browser.isolated_page(
                SHARE_WIDTH, SHARE_HEIGHT, proxy=share_proxy(egress.url)
            )
        except BaseException:
            await egress.close()
            raise
        shared = SharedPage(page, self._browser, egress)
        try:
            await without_udp(page.context)
            response = await page.goto(url, wait_until="load", timeout=PAGE_LOAD_TIMEOUT_MS)
        except PlaywrightError as exc:
            await shared.close()
            raise CommandError(_SOURCE, "url could not be loaded", "url") from exc
        if response is None or not response.ok:
            await shared.close()
            status = response.status if response is not None else "no answer"
            raise CommandError(_SOURCE, f"url answered {status}", "url")
        return shared
