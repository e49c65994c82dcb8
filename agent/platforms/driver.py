"""The page actions every selector-driven adapter is made of.

:class:`PageDriver` finds a :class:`~agent.platforms.table.Target` on the page (its role+name
pairs, then labels, then CSS, the first match winning), tells whether it is visible, clicks it,
and evaluates scripts in the page with a timeout of its own: ``page.evaluate`` has none, and a
hung renderer must not hang the bot.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Locator, Page

from agent.platforms.base import EVALUATE_TIMEOUT_S
from agent.platforms.table import Target
from agent.process.errors import BrowserError


class PageDriver:
    """Locates, probes and clicks targets, and evaluates scripts, on a meeting page.

    Args:
        evaluate_timeout_s: Seconds a page evaluation may take before the page counts as hung.
    """

    def __init__(self, evaluate_timeout_s: float = EVALUATE_TIMEOUT_S) -> None:
        self.evaluate_timeout_s = evaluate_timeout_s

    @staticmethod
    def locate(page: Page, target: Target) -> Locator:
        """One locator matching any candidate of ``target`` (first match wins).

        Raises:
            BrowserError: ``target`` has no candidate.
        """
        candidates: list[Locator] = [
            page.get_by_role(role, name=name, exact=True)  # type: ignore[arg-type]
            for role, name in target.roles
        ]
        candidates += [page.get_by_label(label, exact=True) for label in target.labels]
        candidates += [page.locator(css) for css in target.css]
        if not candidates:
            raise BrowserError("empty target")
        combined = candidates[0]
        for other in candidates[1:]:
            combined = combined.or_(other)
        return combined.first

    async def visible(self, page: Page, target: Target) -> bool:
        """Whether any candidate of ``target`` is visible now."""
        if not target:
            return False
        with contextlib.suppress(PlaywrightError):
            return await self.locate(page, target).is_visible()
        return False

    async def click_if_visible(self, page: Page, target: Target) -> bool:
        """Click ``target`` when it is visible; returns whether it clicked."""
        if not await self.visible(page, target):
            return False
        with contextlib.suppress(PlaywrightError):
            await self.locate(page, target).click(timeout=2_000)
            return True
        return False

    async def evaluate(self, page: Page, script: str, arg: Any = None) -> Any:
        """Evaluate ``script`` (a JS function of ``arg``) in the page and return its result.

        Returns:
            The script's JSON-able result; None when a navigation destroyed the page's context
            mid-call (the next poll retries).

        Raises:
            BrowserError: No answer within ``evaluate_timeout_s``.
            playwright.async_api.Error: Any other failure of the evaluation.
        """
        try:
            # page.evaluate has no timeout of its own: a hung renderer would hang the bot.
            return await asyncio.wait_for(
                page.evaluate(script, arg), timeout=self.evaluate_timeout_s
            )
        except TimeoutError as exc:
            raise BrowserError("the meeting page stopped answering") from exc
        except PlaywrightError as exc:
            # Navigations destroy the execution context mid-call; the next poll retries.
            if "context was destroyed" in str(exc) or "navigation" in str(exc).lower():
                return None
            raise
