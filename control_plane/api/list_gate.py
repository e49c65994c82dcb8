"""Writers ahead of lists: a bound on the list requests one process serves at once.

Bot creation starved beside clients that list as fast as they can (issue 18). A creation is a
handful of database round trips, and each answer waits for a turn of the event loop behind
every callback already ready there; a list page spends milliseconds of the loop's time on
building and serialising up to 200 items. With 8 listing clients, each of a creation's round
trips waited behind up to 8 such pages (py-spy of ``bench/api.py --mixed-only`` on PostgreSQL:
creation p50 123 ms, about seven round trips). The list routes (``GET /api/v1/meetings``,
``GET /api/v1/bots``) therefore take a slot of :data:`LIST_GATE` for their whole handler; the
lists beyond ``Settings.list_concurrency`` wait on it without using the loop, and writes, which
take no slot, find few list pages ahead of them.

Lists alone lose nothing while the bound is at least the number of cores the process can use:
one process serves on one core, so more lists at once only interleave, they do not finish
sooner.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

LIST_GATE = web.AppKey("list_gate", asyncio.Semaphore)
"""Slots for list requests of this process (``Settings.list_concurrency`` of them)."""


def list_gate(concurrency: int) -> asyncio.Semaphore:
    """A gate admitting ``concurrency`` (≥ 1) list requests at once.

    Raises:
        ValueError: ``concurrency`` below 1.
    """
    if concurrency < 1:
        raise ValueError("list concurrency must be at least 1")
    return asyncio.Semaphore(concurrency)
