"""A detection worker as a process of its own, for the replica-crash test (killed with SIGKILL).

``python -m tests.intelligence.replica DATABASE_URL MODEL_BASE_URL OWNER`` runs a
:class:`~control_plane.intelligence.worker.DetectionWorker` (fast polls, a 2 s lease) over the
database with an OpenAI-compatible client of the model server, until killed.
"""

from __future__ import annotations

import asyncio
import sys

from prometheus_client import CollectorRegistry

from control_plane.db.engine import create_database
from control_plane.intelligence.detection_metrics import DetectionMetrics
from control_plane.intelligence.openai_chat import OpenAIChatModel
from control_plane.intelligence.worker import DetectionOptions, DetectionWorker
from control_plane.webhooks.outbox import Outbox

OPTIONS = DetectionOptions(window_pause=4.0, poll=0.05, lease=2.0, window_timeout=60.0)
"""What both replicas of the test run with."""


async def main(database_url: str, base_url: str, owner: str) -> None:
    """Run the worker until the process is killed."""
    database = create_database(database_url)
    chat = OpenAIChatModel(base_url=base_url, api_key="test", model="keywords")
    worker = DetectionWorker(
        database=database,
        chat=chat,
        outbox=Outbox(),
        options=OPTIONS,
        metrics=DetectionMetrics(CollectorRegistry()),
        owner=owner,
    )
    async with worker.running():
        print("running", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
