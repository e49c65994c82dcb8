r"""``meetbot agent``: send one bot into a meeting from this machine, no control plane needed.

Events are printed to stdout as JSON lines (``{"event": ..., "data": ...}``); logs go to stderr.
Ctrl-C makes the bot leave cleanly. ``--display`` runs it as on its VM: headful on an Xvfb
display and a PulseAudio of its own (images/runtime/), started before and stopped after it.
Browser options come from ``MEETBOT_AGENT_*`` settings and the flags below (e.g.
``--browser-arg`` for the testmeeting's ``--host-resolver-rules``).

Example::

    meetbot agent --platform google_meet --meeting-url https://meet.google.com/abc-defg-hij \
        --name "Note taker"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from agent.__main__ import run_bot, run_on_display
from agent.browser.session import tune_driver_environment
from agent.contracts.bot_config import BotConfig, BotSettings, Platform
from agent.contracts.status import BotStatus
from agent.meeting.bot import Bot
from agent.process import heap
from agent.process.logs import configure_logging
from agent.process.runtime import RuntimeStartError
from agent.process.settings import AgentSettings
from agent.wiring import assemble


def _print_event(name: str, payload: dict[str, Any]) -> None:
    print(json.dumps({"event": name, "data": payload}, default=str), flush=True)


def build_config(args: argparse.Namespace) -> BotConfig:
    """A ``BotConfig`` for a laptop run: a fresh bot id, no control plane.

    Raises:
        pydantic.ValidationError: An option is out of the API's range.
    """
    path = urlsplit(args.meeting_url).path.rstrip("/")
    options: dict[str, Any] = {"bot_name": args.name}
    for key in (
        "admission_timeout_seconds",
        "left_alone_timeout_seconds",
        "startup_alone_timeout_seconds",
        "max_meeting_duration_seconds",
    ):
        value = getattr(args, key)
        if value is not None:
            options[key] = value
    return BotConfig(
        bot_id=uuid.uuid4(),
        meeting_id=0,
        platform=Platform(args.platform),
        meeting_url=args.meeting_url,
        native_meeting_id=path.rsplit("/", 1)[-1] or args.meeting_url,
        settings=BotSettings(**options),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``meetbot agent``; returns 0 when the bot ends ``completed``."""
    parser = argparse.ArgumentParser(
        prog="meetbot agent",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--platform", required=True, choices=[p.value for p in Platform])
    parser.add_argument("--meeting-url", required=True)
    parser.add_argument("--name", default="meetbot", help="display name in the meeting")
    parser.add_argument("--headful", action="store_true", help="show the browser window")
    parser.add_argument(
        "--display",
        action="store_true",
        help="run headful on an Xvfb display and PulseAudio of its own (images/runtime/)",
    )
    parser.add_argument(
        "--browser-arg", action="append", default=[], help="extra Chromium flag (repeatable)"
    )
    parser.add_argument("--ignore-https-errors", action="store_true")
    parser.add_argument("--admission-timeout-seconds", type=int)
    parser.add_argument("--left-alone-timeout-seconds", type=int)
    parser.add_argument("--max-meeting-duration-seconds", type=int)
    parser.add_argument("--startup-alone-timeout-seconds", type=int)
    args = parser.parse_args(argv)
    base = AgentSettings()
    overrides: dict[str, Any] = {
        "extra_browser_args": [*base.extra_browser_args, *args.browser_arg],
    }
    if args.headful:
        overrides["headless"] = False
    if args.ignore_https_errors:
        overrides["ignore_https_errors"] = True
    settings = base.model_copy(update=overrides)
    configure_logging(settings.log_level)
    try:
        config = build_config(args)
    except (ValidationError, ValueError) as exc:
        print(f"meetbot agent: {exc}", file=sys.stderr)
        return 2

    def make_bot(host: AgentSettings) -> Bot:
        return assemble(config, host, observer=_print_event)

    tune_driver_environment(os.environ)
    heap.tune()  # fewer malloc arenas, before the decode threads (agent/process/heap.py)
    try:
        if args.display:
            status = asyncio.run(run_on_display(settings, make_bot))
        else:
            status = asyncio.run(run_bot(make_bot(settings)))
    except RuntimeStartError as exc:
        print(f"meetbot agent: the display runtime did not start: {exc}", file=sys.stderr)
        return 3
    return 0 if status is BotStatus.COMPLETED else 1
