"""``python -m agent --config bot.json``: run one bot from a launcher's config file.

Exit code 0 when the bot ends ``completed``, 1 when ``failed``, 2 for a bad config or agent
settings. The agent settings are the machine's ``MEETBOT_AGENT_*``
environment with the config's ``agent_settings`` (the operator's, from the bootstrap exchange)
on top (:mod:`agent.process.handed_settings`). SIGTERM and SIGINT make the bot leave the meeting
cleanly (status reason ``sigterm``). Without ``MEETBOT_AGENT_DATA_DIR`` the outbox and local
artifacts live beside the config file.

``--display`` runs the bot as on its VM, outside one: headful on an Xvfb display of its own with
a private PulseAudio, started from images/runtime/ before the browser and stopped after the bot
(:mod:`agent.process.runtime`); exit code 3 when they do not start.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import ValidationError

from agent.browser.session import tune_driver_environment
from agent.contracts.bot_config import BotConfig
from agent.contracts.status import BotStatus, StatusReason
from agent.meeting.bot import Bot
from agent.process import heap
from agent.process.handed_settings import unused, with_handed
from agent.process.logs import configure_logging
from agent.process.runtime import BotRuntime, RuntimeStartError, scripts_dir
from agent.process.settings import AgentSettings
from agent.wiring import assemble


async def run_bot(bot: Bot) -> BotStatus:
    """Run ``bot`` with SIGTERM/SIGINT turned into a clean stop."""
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, bot.request_stop, StatusReason.SIGTERM)
    try:
        return await bot.run()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


async def run_on_display(
    settings: AgentSettings, make_bot: Callable[[AgentSettings], Bot]
) -> BotStatus:
    """Start the bot's own Xvfb and PulseAudio, run the bot headful on them, stop them.

    Args:
        settings: The agent host's settings; the bot gets a copy that is headful on the new
            display and sound server.
        make_bot: Builds the bot from those settings.

    Raises:
        RuntimeStartError: The scripts are missing, or a server did not start.
    """
    async with BotRuntime(scripts_dir(settings.runtime_scripts_dir)) as runtime:
        on_display = settings.model_copy(
            update={
                "headless": False,
                "display": runtime.display,
                "pulse_server": runtime.pulse_server,
            }
        )
        return await run_bot(make_bot(on_display))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m agent``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m agent", description=__doc__)
    parser.add_argument("--config", type=Path, required=True, help="BotConfig JSON file")
    parser.add_argument(
        "--display",
        action="store_true",
        help="run headful on an Xvfb display and PulseAudio of its own (images/runtime/)",
    )
    args = parser.parse_args(argv)
    try:
        config = BotConfig.model_validate_json(args.config.read_bytes())
    except (OSError, ValidationError) as exc:
        print(f"agent: cannot read config {args.config}: {exc}", file=sys.stderr)
        return 2
    # The operator's settings from the bootstrap exchange win over the machine's environment.
    try:
        settings = with_handed(AgentSettings, config.agent_settings)
    except ValidationError as exc:
        # pydantic's message names each field; a handed-over value is never printed.
        fields = ", ".join(".".join(map(str, error["loc"])) for error in exc.errors())
        print(f"agent: invalid agent settings: {fields}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level)
    ignored = unused(config.agent_settings, AgentSettings)
    if ignored:
        logging.getLogger("agent").warning(
            "handed-over agent settings not applied", extra={"names": ignored}
        )
    if "data_dir" not in settings.model_fields_set:
        # The launcher's per-bot folder (beside bot.json) keeps the outbox with the bot.
        settings = settings.model_copy(update={"data_dir": args.config.resolve().parent})
    tune_driver_environment(os.environ)
    heap.tune()  # fewer malloc arenas, before the decode threads (agent/process/heap.py)

    def make_bot(host: AgentSettings) -> Bot:
        return assemble(config, host)

    try:
        if args.display:
            status = asyncio.run(run_on_display(settings, make_bot))
        else:
            status = asyncio.run(run_bot(make_bot(settings)))
    except RuntimeStartError as exc:
        print(f"agent: the display runtime did not start: {exc}", file=sys.stderr)
        return 3
    return 0 if status is BotStatus.COMPLETED else 1


if __name__ == "__main__":
    sys.exit(main())
