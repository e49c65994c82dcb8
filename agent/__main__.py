"""``python -m agent --config bot.json``: run one bot from a launcher's config file.

Exit code 0 when the bot ends ``completed``, 1 when ``failed``, 2 for a bad config. SIGTERM
and SIGINT make the bot leave the meeting cleanly (status reason ``sigterm``). Without
``MEETBOT_AGENT_DATA_DIR`` the outbox and local artifacts live beside the config file.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from agent.actions.settings import ActionSettings
from agent.bot import Bot
from agent.browser.session import tune_driver_environment
from agent.contracts.bot_config import BotConfig
from agent.contracts.status import BotStatus, StatusReason
from agent.logs import configure_logging
from agent.settings import AgentSettings


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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m agent``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m agent", description=__doc__)
    parser.add_argument("--config", type=Path, required=True, help="BotConfig JSON file")
    args = parser.parse_args(argv)
    settings = AgentSettings()
    action_settings = ActionSettings()
    configure_logging(settings.log_level)
    try:
        config = BotConfig.model_validate_json(args.config.read_bytes())
    except (OSError, ValidationError) as exc:
        print(f"agent: cannot read config {args.config}: {exc}", file=sys.stderr)
        return 2
    if "data_dir" not in settings.model_fields_set:
        # The launcher's per-bot folder (beside bot.json) keeps the outbox with the bot.
        settings = settings.model_copy(update={"data_dir": args.config.resolve().parent})
    tune_driver_environment(os.environ)
    status = asyncio.run(run_bot(Bot(config, settings, action_settings=action_settings)))
    return 0 if status is BotStatus.COMPLETED else 1


if __name__ == "__main__":
    sys.exit(main())
