"""Which screen a meeting page shows, read from its selector table in one evaluation.

:class:`ScreenReader` gathers every state probe of a
:class:`~agent.platforms.table.PlatformSelectors` (texts, CSS, scoped texts, URLs) into one
page evaluation, cheap enough to poll four times a second, and names the first state of
:data:`~agent.platforms.table.STATE_ORDER` with a hit. The page's visible text leaves out where
participants' own words appear (the chat and people lists, :attr:`PlatformSelectors.quoted`).
A page that matches no state but has the shape of a post-call screen (``POST_CALL_*``) is
``ended`` (``removed`` when it says so). It also reads the meeting's title and whether any of
some texts is shown.
"""

from __future__ import annotations

from playwright.async_api import Page

from agent.platforms.base import MeetingState
from agent.platforms.driver import PageDriver
from agent.platforms.table import STATE_ORDER, PlatformSelectors, Probe

# A post-call screen by its shape, in any wording (issue 33): no in-meeting control (the
# IN_MEETING probe, checked before), and a control to rejoin, go home or give feedback, or a
# heading / dialog saying the call is over or that you left. Wordings the platforms use (public
# bot code: Meet "Return to home screen" (VH), "You left the meeting" (AT), "Meeting ended"
# (V09); Teams "Rejoin" (PF removal)) and their close variants. "Removed" in a heading or
# dialog of such a screen makes it a removal.
POST_CALL_CONTROL = (
    r"\bre-?join\b|\b(return|back|go( back)?) to (the )?home|\bhome ?(screen|page)\b"
    r"|feedback|\brate (the|this|your)\b|how was (the|this|your)\b"
)
POST_CALL_HEADING = (
    r"\byou( have|'ve|’ve)? left\b|\bleft the (call|meeting)\b"
    r"|\b(call|meeting)( has| is| was)? (ended|over|finished)\b|\bended (the|this) (call|meeting)\b"
    r"|\bthanks? (you )?for (joining|attending)\b"
)
POST_CALL_REMOVED = r"\bremoved\b|\bkicked\b"

_PROBE_JS = """
([texts, selectors, scoped, urls, quoted, shape]) => {
  const visible = (el) => {
    if (!el.getClientRects().length) return false;
    const style = getComputedStyle(el);
    return style.visibility !== 'hidden' && style.display !== 'none';
  };
  const all = (s) => {
    try { return Array.from(document.querySelectorAll(s)).filter(visible); }
    catch (err) { return []; }
  };
  let body = document.body ? document.body.innerText : '';
  for (const s of quoted) {
    for (const el of all(s)) {
      const said = el.innerText || '';
      if (said) body = body.split(said).join(' ');
    }
  }
  const labels = all('[role="dialog"], [role="alertdialog"], [role="alert"]')
    .map((el) => el.getAttribute('aria-label') || '');
  const corpus = (body + '\\n' + labels.join('\\n')).toLowerCase();
  const own = (el) => ((el.innerText || '') + ' ' + (el.getAttribute('aria-label') || ''))
    .toLowerCase();
  const href = location.href.toLowerCase();
  let post = null;
  if (shape) {
    const [control, heading, removed] = shape.map((r) => new RegExp(r, 'i'));
    const controls = all('button, a[href], [role="button"], [role="link"]').map(own);
    const heads = all('h1, h2, h3, [role="heading"], [role="dialog"], [role="alertdialog"], '
      + '[role="alert"], [role="status"]').map(own);
    const said = heads.some((h) => removed.test(h));
    if (said || controls.some((c) => control.test(c)) || heads.some((h) => heading.test(h))) {
      post = said ? 'removed' : 'ended';
    }
  }
  return {
    texts: texts.map((t) => corpus.includes(t.toLowerCase())),
    css: selectors.map((s) => all(s).length > 0),
    scoped: scoped.map(([s, t]) => all(s).some((el) => own(el).includes(t.toLowerCase()))),
    urls: urls.map((u) => href.includes(u.toLowerCase())),
    post,
  };
}
"""


_TITLE_JS = """
(selectors) => {
  for (const s of selectors) {
    let found = [];
    try { found = Array.from(document.querySelectorAll(s)); } catch (err) { continue; }
    for (const el of found) {
      const text = el.getAttribute('data-meeting-title') || el.innerText || el.textContent || '';
      if (text.trim()) return text.trim();
    }
  }
  return null;
}
"""


class ScreenReader:
    """Names the screen a page shows, from one platform's table.

    Args:
        driver: Evaluates the probe in the page.
        selectors: The platform's table (``probes``, ``quoted``, ``title_css``).
    """

    def __init__(self, driver: PageDriver, selectors: PlatformSelectors) -> None:
        self._driver = driver
        self._selectors = selectors

    async def state(self, page: Page) -> MeetingState:
        """Probe the page once (one evaluation) and name its screen."""
        probes = self._selectors.probes
        texts: list[str] = []
        css: list[str] = []
        scoped: list[tuple[str, str]] = []
        urls: list[str] = []
        for state in STATE_ORDER:
            probe = probes.get(state, Probe())
            texts += probe.texts
            css += probe.css
            scoped += probe.scoped
            urls += probe.urls
        shape = [POST_CALL_CONTROL, POST_CALL_HEADING, POST_CALL_REMOVED]
        found = await self._driver.evaluate(
            page, _PROBE_JS, [texts, css, scoped, urls, list(self._selectors.quoted), shape]
        )
        if not found:
            return MeetingState.LOADING
        text_hits = dict(zip(texts, found["texts"], strict=True))
        css_hits = dict(zip(css, found["css"], strict=True))
        scoped_hits = dict(zip(scoped, found["scoped"], strict=True))
        url_hits = dict(zip(urls, found["urls"], strict=True))
        for state in STATE_ORDER:
            probe = probes.get(state, Probe())
            if (
                any(text_hits[t] for t in probe.texts)
                or any(css_hits[c] for c in probe.css)
                or any(scoped_hits[pair] for pair in probe.scoped)
                or any(url_hits[u] for u in probe.urls)
            ):
                return state
        # No screen of the table: a post-call screen is still known by its shape.
        if found.get("post") == "removed":
            return MeetingState.REMOVED
        if found.get("post") == "ended":
            return MeetingState.ENDED
        return MeetingState.LOADING

    async def shows_text(self, page: Page, texts: tuple[str, ...]) -> bool:
        """Whether the page's visible text (quoted words left out) holds any of ``texts``."""
        found = await self._driver.evaluate(
            page, _PROBE_JS, [list(texts), [], [], [], list(self._selectors.quoted), None]
        )
        return bool(found) and any(found["texts"])

    async def title(self, page: Page) -> str | None:
        """Read the meeting's title from the page; None if none is shown.

        The first non-empty title of :attr:`PlatformSelectors.title_css` (an element's
        ``data-meeting-title`` attribute, else its text), whitespace collapsed.
        """
        if not self._selectors.title_css:
            return None
        raw = await self._driver.evaluate(page, _TITLE_JS, list(self._selectors.title_css))
        title = " ".join(str(raw or "").split())[:300]
        return title or None
