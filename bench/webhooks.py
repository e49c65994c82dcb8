"""Webhook delivery benchmark: throughput and status-change → delivery delay (embedded provider).

Runs the real control-plane app (its cleanup contexts start the delivery worker) on a fresh
SQLite database, or on PostgreSQL when ``--database-url`` names one, with one endpoint pointing
at a local aiohttp receiver (loopback allowed for the run). Prints one JSON line per figure:

* ``webhook_deliveries_per_second`` — N events committed in one transaction, time until the
  receiver has all N (signed POSTs, attempts stored);
* ``webhook_status_change_delay_ms`` — p50/p99 from the commit of a bot status change (with its
  outbox row, in one transaction) to the receiver getting the ``bot.status_changed`` webhook,
  for changes made one at a time at random moments: committed through the app's own sessions
  (the worker is woken after the commit) and through another engine, as another replica would
  (the worker finds it by polling, default interval).

Usage: ``.venv/bin/python bench/webhooks.py [--events 2000] [--changes 100]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from aiohttp import web

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.stats import percentile  # noqa: E402 — after the path set-up above
from control_plane.app import create_app  # noqa: E402 — after the path set-up above
from control_plane.auth.provisioning import create_workspace  # noqa: E402
from control_plane.db.engine import DB, create_database  # noqa: E402
from control_plane.db.migrate import upgrade  # noqa: E402
from control_plane.db.models.bot import Meeting  # noqa: E402
from control_plane.hooks import STATUS_HOOKS, StatusChange  # noqa: E402
from control_plane.launchers.memory import MemoryLauncher  # noqa: E402
from control_plane.settings import Settings  # noqa: E402
from control_plane.webhooks.events import EventType, TranscriptionReady  # noqa: E402
from control_plane.webhooks.outbox import emit  # noqa: E402
from control_plane.webhooks.schemas import EndpointCreate  # noqa: E402
from control_plane.webhooks.wiring import WEBHOOK_PROVIDER  # noqa: E402


class Receiver:
    """Counts webhooks and stamps when each ``webhook-id`` arrived (monotonic seconds)."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        self.changed = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        await request.read()
        self.arrivals.setdefault(request.headers["webhook-id"], time.monotonic())
        self.changed.set()
        return web.Response(text="ok")

    async def wait_count(self, count: int) -> None:
        while len(self.arrivals) < count:
            self.changed.clear()
            await self.changed.wait()


async def _run(
    database_url: str, events: int, changes: int, *, from_other_process: bool = False
) -> dict[str, float]:
    receiver = Receiver()
    receiver_app = web.Application()
    receiver_app.router.add_post("/hook", receiver.handle)
    receiver_runner = web.AppRunner(receiver_app, access_log=None)
    await receiver_runner.setup()
    site = web.TCPSite(receiver_runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # started site

    settings = Settings(
        database_url=database_url,
        launcher="memory",
        webhook_allow_http=True,
        webhook_allow_private=True,
    )
    runner = web.AppRunner(create_app(settings, launcher=MemoryLauncher()))
    await runner.setup()  # runs the cleanup contexts: database, webhook worker
    app = runner.app
    try:
        async with app[DB].sessions.begin() as session:
            workspace = await create_workspace(session, "bench")
            workspace_id = workspace.id
        await app[WEBHOOK_PROVIDER].create_endpoint(
            workspace_id, EndpointCreate(url=f"http://127.0.0.1:{port}/hook")
        )
        async with app[DB].sessions.begin() as session:
            meeting = Meeting(
                workspace_id=workspace_id,
                platform="google_meet",
                native_meeting_id="abc-defg-hij",
                constructed_meeting_url="https://meet.google.com/abc-defg-hij",
                status="active",
            )
            session.add(meeting)
        result: dict[str, float] = {}

        if events:
            started = time.monotonic()
            async with app[DB].sessions.begin() as session:
                for index in range(events):
                    await emit(
                        session,
                        workspace_id,
                        EventType.TRANSCRIPTION_READY,
                        TranscriptionReady(
                            bot_id=str(meeting.bot_id),
                            meeting_id=meeting.id,
                            tier="realtime",
                            segment_count=index,
                        ),
                    )
            await receiver.wait_count(events)
            result["deliveries_per_second"] = events / (time.monotonic() - started)

        delays: list[float] = []
        hooks = app[STATUS_HOOKS]
        # "other process": a second engine on the same database, as another replica (or the
        # agent link of another process) would commit; only polling finds those events.
        other = create_database(database_url) if from_other_process else None
        sessions = other.sessions if other is not None else app[DB].sessions
        for index in range(changes):
            # Independent arrivals: a pause longer than the poll interval, so changes land at
            # random points of the worker's poll cycle rather than in step with it.
            await asyncio.sleep(random.uniform(0, 0.3))
            before = len(receiver.arrivals)
            status = "active" if index % 2 else "stopping"
            async with sessions.begin() as session:
                row = await session.get(Meeting, meeting.id)
                assert row is not None
                previous, row.status = row.status, status
                await session.flush()
                change = StatusChange(row, previous, status, "bench", datetime.now(UTC))
                for hook in hooks:
                    await hook(session, change)
            committed = time.monotonic()
            await receiver.wait_count(before + 1)
            arrived = max(receiver.arrivals.values())
            delays.append((arrived - committed) * 1000)
        if other is not None:
            await other.dispose()
        if delays:
            result["delay_p50_ms"] = percentile(delays, 0.50)
            result["delay_p99_ms"] = percentile(delays, 0.99)
            result["delay_mean_ms"] = statistics.fmean(delays)
        return result
    finally:
        await runner.cleanup()
        await receiver_runner.cleanup()


async def _main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        if not args.database_url:
            await upgrade(url)
        database = "postgresql" if url.startswith("postgresql") else "sqlite"
        figures = await _run(url, args.events, 0)
        print(
            json.dumps(
                {
                    "figure": "webhook_deliveries_per_second",
                    "database": database,
                    "events": args.events,
                    "value": round(figures["deliveries_per_second"], 1),
                }
            )
        )
        for other in (False, True):
            figures = await _run(url, 0, args.changes, from_other_process=other)
            print(
                json.dumps(
                    {
                        "figure": "webhook_status_change_delay_ms",
                        "database": database,
                        "committed_by": "other process" if other else "same process",
                        "poll_interval_s": Settings().webhook_poll_interval_seconds,
                        "changes": args.changes,
                        "p50": round(figures["delay_p50_ms"], 1),
                        "p99": round(figures["delay_p99_ms"], 1),
                        "mean": round(figures["delay_mean_ms"], 1),
                    }
                )
            )


def main() -> None:
    """Parse arguments and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument(
        "--database-url", default="", help="a migrated PostgreSQL URL; default: fresh SQLite"
    )
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
