"""Time to first render of the dashboard's bot list over a workspace of 10,000 meetings.

The database is a fresh SQLite file migrated and seeded through the real models
(:func:`bench.api._seed`: ``--meetings`` rows, mixed statuses over 100 days); the real app
(memory launcher) serves it from a child process (:func:`bench.api._serve`); Debian's Chromium
(Playwright) opens the dashboard signed in (the key in the tab's session storage) at
``/#/bots``. One run is a fresh browser context (no cache): from ``page.goto`` until the list's
first page (50 rows) is in the DOM. Printed as JSON lines:

* ``dashboard_first_render`` — wall ms per run (p50, p95, min, max), measured by this
  process, and ``in_page_ms``: the page's own ``performance.now()`` when the rows appeared
  (time since navigation start, the figure a user feels, without Playwright's round trips);
  ``list_request_start_p50_ms`` / ``list_request_p50_ms`` split it: when the page sent
  ``GET /api/v1/bots?limit=50`` (after loading its modules and asking who the key is) and
  how long that answer took;
* the same for ``--name`` filtered lists (``name=Retro``, a substring scan of every meeting)
  as ``dashboard_filtered_render``: the filter typed into the form and submitted, until the
  table shows the filtered rows.

Usage: ``.venv/bin/python bench/dashboard.py [--meetings 10000] [--runs 15]``. Report the
figures with ``uptime`` (a shared machine's load changes them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, async_playwright

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.api import _seed, _serve  # noqa: E402 — after the path set-up above
from bench.stats import percentile  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ROWS = "#bot-list tbody tr:nth-child(50)"
MARK = """() => new Promise((done) => {
  const seen = () => document.querySelectorAll('#bot-list tbody tr').length >= %d;
  if (seen()) return done(performance.now());
  new MutationObserver((_, observer) => {
    if (seen()) { observer.disconnect(); done(performance.now()); }
  }).observe(document, {childList: true, subtree: true});
})"""


def _summary(name: str, walls: list[float], in_page: list[float], **extra: Any) -> None:
    print(
        json.dumps(
            {
                "bench": name,
                **extra,
                "runs": len(walls),
                "p50_ms": round(statistics.median(walls), 1),
                "p95_ms": round(percentile(walls, 0.95), 1),
                "min_ms": round(min(walls), 1),
                "max_ms": round(max(walls), 1),
                "in_page_p50_ms": round(statistics.median(in_page), 1),
                "in_page_p95_ms": round(percentile(in_page, 0.95), 1),
            }
        ),
        flush=True,
    )


LIST_TIMING = """() => {
  const list = performance.getEntriesByType('resource')
    .find((e) => e.name.includes('/api/v1/bots?'));
  return list ? [list.startTime, list.duration] : [0, 0];
}"""


async def _first_render(
    browser: Browser, base: str, key: str, timings: list[tuple[float, float]] | None = None
) -> tuple[float, float]:
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    await context.add_init_script(f"sessionStorage.setItem('meetbot.apiKey', {json.dumps(key)})")
    page = await context.new_page()
    started = time.perf_counter()
    await page.goto(f"{base}/#/bots", wait_until="commit")
    at = float(await page.evaluate(MARK % 50))
    wall = (time.perf_counter() - started) * 1000
    if timings is not None:
        start, duration = await page.evaluate(LIST_TIMING)
        timings.append((float(start), float(duration)))
    await context.close()
    return wall, at


async def _filtered(browser: Browser, base: str, key: str, name: str) -> tuple[float, float]:
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    await context.add_init_script(f"sessionStorage.setItem('meetbot.apiKey', {json.dumps(key)})")
    page = await context.new_page()
    await page.goto(f"{base}/#/bots")
    await page.wait_for_selector(ROWS)
    await page.locator("#bots-filters").get_by_label("Meeting name").fill(name)
    begun = float(await page.evaluate("performance.now()"))
    started = time.perf_counter()
    await page.locator("#bots-filters").get_by_role("button", name="Filter").click()
    # Until every row of the first page shows a meeting name holding the filter.
    check = """(wanted) => new Promise((done) => {
      const ok = () => {
        const names = [...document.querySelectorAll('#bot-list tbody td.name')];
        return names.length > 0 && names.every((cell) => cell.textContent.includes(wanted));
      };
      if (ok()) return done(performance.now());
      new MutationObserver((_, observer) => {
        if (ok()) { observer.disconnect(); done(performance.now()); }
      }).observe(document.querySelector('#bot-list tbody'), {childList: true, subtree: true});
    })"""
    at = float(await page.evaluate(check, name))
    wall = (time.perf_counter() - started) * 1000
    await context.close()
    return wall, at - begun


async def main() -> None:
    """Seed, serve, measure (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meetings", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--name", default="Retro")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{folder}/bench.db"
        key, _ = await _seed(url, args.meetings)
        ctx = multiprocessing.get_context("spawn")
        ready = ctx.Queue()
        server = ctx.Process(target=_serve, args=(url, folder, ready), daemon=True)
        server.start()
        try:
            base = f"http://127.0.0.1:{ready.get(timeout=120)}"
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
                )
                await _first_render(browser, base, key)  # warm-up: server imports, caches
                timings: list[tuple[float, float]] = []
                runs = [await _first_render(browser, base, key, timings) for _ in range(args.runs)]
                _summary(
                    "dashboard_first_render",
                    [wall for wall, _ in runs],
                    [at for _, at in runs],
                    meetings=args.meetings,
                    db="sqlite",
                    # Where the time goes: when the page asked for the list, how long it took.
                    list_request_start_p50_ms=round(statistics.median(t for t, _ in timings), 1),
                    list_request_p50_ms=round(statistics.median(d for _, d in timings), 1),
                )
                filtered = [
                    await _filtered(browser, base, key, args.name) for _ in range(args.runs)
                ]
                _summary(
                    "dashboard_filtered_render",
                    [wall for wall, _ in filtered],
                    [at for _, at in filtered],
                    meetings=args.meetings,
                    db="sqlite",
                    filter_name=args.name,
                )
                await browser.close()
        finally:
            server.terminate()
            server.join(timeout=10)


if __name__ == "__main__":
    asyncio.run(main())
