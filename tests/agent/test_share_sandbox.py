"""The shared page's escapes, tried from Chromium through the guarded egress (issue 35, item 5).

The share's context is made as :meth:`agent.browser.session.BrowserSession.isolated_page` makes it
for a ``screen_share`` page: Playwright's per-context ``proxy`` given by
:func:`agent.media_out.egress.share_proxy`. Two loopback servers stand for the internet
(``site.test``, which only the proxy's test resolver knows: every page load of it shows that the
browser went through the proxy) and the inside (``127.0.0.1`` and ``inside.test``). The page then
tries the inside by a subresource, a redirect hop, a WebSocket and a service worker's fetch; the
inside must see nothing, while the same kinds of connection to the site still work. WebRTC and
WebTransport (UDP, which no proxy carries) are not there at all, in an iframe neither.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from aiohttp import WSMsgType, web
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import async_playwright

from agent.media_out.egress import GuardedProxy, share_proxy, without_udp
from agent.process.settings import AgentSettings
from meetbot_common.ssrf import TargetPolicy
from tests.egress_hosts import PUBLIC, dial_public_to, two_hosts

pytestmark = pytest.mark.browser

PAGE = """<!doctype html><title>shared</title>
<img src="http://127.0.0.1:{internal}/img-literal"><img src="http://inside.test:{internal}/img-name">
<script>
window.results = {{}};
const frame = document.createElement("iframe");
document.body.appendChild(frame);
window.udp = [typeof RTCPeerConnection, typeof WebTransport,
              typeof frame.contentWindow.RTCPeerConnection];
function tryWs(name, url) {{
  return new Promise(done => {{
    const ws = new WebSocket(url);
    ws.onopen = () => ws.send("ping");
    ws.onmessage = event => {{ window.results[name] = event.data; ws.close(); done(); }};
    ws.onerror = () => {{ window.results[name] = "error"; done(); }};
  }});
}}
window.done = Promise.all([
  tryWs("inside", "ws://127.0.0.1:{internal}/ws"),
  tryWs("site", "ws://site.test:{site}/ws"),
  navigator.serviceWorker.register("/sw.js").then(() => "registered", e => String(e)),
]);
</script>"""

WORKER = """self.addEventListener("install", event => {{
  event.waitUntil(Promise.allSettled([
    fetch("http://127.0.0.1:{internal}/from-worker"),
    fetch("http://inside.test:{internal}/from-worker-name"),
    fetch("http://site.test:{site}/from-worker"),
  ]));
}});"""


@dataclass
class Hosts:
    site: int
    internal: int
    site_paths: list[str]
    internal_paths: list[str]


@pytest.fixture
async def hosts() -> AsyncIterator[Hosts]:
    site_paths: list[str] = []
    internal_paths: list[str] = []
    ports: dict[str, int] = {}

    async def site(request: web.Request) -> web.StreamResponse:
        site_paths.append(request.path)
        if request.path == "/ws":
            ws = web.WebSocketResponse()
            await ws.prepare(request)
            async for message in ws:
                if message.type is WSMsgType.TEXT:
                    await ws.send_str("pong")
            return ws
        if request.path == "/redirect":
            raise web.HTTPFound(f"http://127.0.0.1:{ports['internal']}/after-redirect")
        if request.path == "/sw.js":
            body = WORKER.format(**ports)
            return web.Response(text=body, content_type="application/javascript")
        return web.Response(text=PAGE.format(**ports), content_type="text/html")

    async def internal(request: web.Request) -> web.Response:
        internal_paths.append(request.path)
        return web.Response(text="internal")

    async with two_hosts(site, internal) as (site_port, internal_port):
        ports.update(site=site_port, internal=internal_port)
        yield Hosts(site_port, internal_port, site_paths, internal_paths)


async def test_the_shared_page_reaches_the_site_and_never_the_inside(hosts: Hosts) -> None:
    async def lookup(host: str, port: int) -> list[str]:
        answers = {"site.test": [PUBLIC], "inside.test": ["127.0.0.1"]}
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "unknown name")
        return answers[host]

    origin = f"http://site.test:{hosts.site}"
    settings = AgentSettings()
    async with (
        GuardedProxy(
            TargetPolicy(allow_http=True), lookup=lookup, dial=dial_public_to(hosts.site)
        ) as proxy,
        async_playwright() as playwright,
    ):
        browser = await playwright.chromium.launch(
            executable_path=str(settings.chromium_path),
            # Service workers need a secure origin; the site here speaks plain http.
            args=["--no-sandbox", f"--unsafely-treat-insecure-origin-as-secure={origin}"],
        )
        try:
            context = await browser.new_context(proxy=share_proxy(proxy.url))
            page = await context.new_page()
            await without_udp(context)  # as the share does: after the page, before its load
            response = await page.goto(origin + "/", wait_until="load")
            assert response is not None and response.ok
            await page.evaluate("() => window.done")
            results = await page.evaluate("() => window.results")
            assert results == {"inside": "error", "site": "pong"}
            # No UDP (WebRTC, WebTransport), which no proxy carries: not in a frame either.
            assert await page.evaluate("() => window.udp") == ["undefined"] * 3
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while "/from-worker" not in hosts.site_paths:  # the worker's fetch to the site
                assert loop.time() < deadline, hosts.site_paths
                await asyncio.sleep(0.05)

            # A redirect hop to the inside is a connection of its own, refused by the proxy.
            # (the proxy's empty 403 is Chromium's ERR_HTTP_RESPONSE_CODE_FAILURE).
            with pytest.raises(PlaywrightError, match="net::ERR_"):
                await page.goto(origin + "/redirect", wait_until="load")
            await context.close()
        finally:
            await browser.close()
    assert hosts.internal_paths == []
    assert {"/", "/ws", "/sw.js", "/from-worker", "/redirect"} <= set(hosts.site_paths)
