"""``python -m agent.bootstrap``: a bot machine trades its bootstrap grant for its BotConfig.

Run by ``meetbot-agent.service`` (as root, before the agent starts): reads the grant that
cloud-init wrote (:data:`agent.contracts.bootstrap.BOOTSTRAP_GRANT_FILE`), posts its one-time
token to ``{control_plane_url}/internal/v1/agents/{bot_id}/bootstrap`` with the JSON Schema of the
``BotConfig`` this agent accepts (so a newer control plane fits the config to it, or refuses
with ``agent_incompatible`` and says which option the image predates) and writes the answer,
the bot's ``BotConfig``, to ``--out`` (mode 0600, owned by ``--owner``). Until the network and
the control plane answer it retries (connection errors, 5xx) for ``--wait-seconds``; a 4xx
(token unknown, used or expired) is final.

Exit codes: 0 written; 2 the grant is unreadable; 3 the control plane refused the token; 4 it
could not be reached in time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pwd
import sys
from collections.abc import Sequence
from pathlib import Path

import aiohttp
from pydantic import ValidationError

from agent import __version__
from agent.contracts.bootstrap import BOOTSTRAP_GRANT_FILE, BootstrapGrant, BootstrapRequest
from agent.contracts.bot_config import BotConfig
from agent.contracts.wire import agent_bootstrap_path, bearer


class BootstrapRefusedError(Exception):
    """The control plane answered 4xx: the token buys nothing (its problem body is the text)."""


async def exchange(grant: BootstrapGrant, *, wait_seconds: float = 600.0) -> BotConfig:
    """Trade ``grant``'s token for the bot's ``BotConfig``, retrying until ``wait_seconds``.

    Raises:
        BootstrapRefusedError: 4xx from the control plane (final: the token works once).
        TimeoutError: No answer but connection errors and 5xx within ``wait_seconds``.
    """
    url = grant.control_plane_url.rstrip("/") + agent_bootstrap_path(grant.bot_id)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    delay = 1.0
    last = "no attempt"
    request = BootstrapRequest(
        config_schema=BotConfig.model_json_schema(), agent_version=__version__
    ).model_dump_json()
    headers = {**bearer(grant.bootstrap_token), "Content-Type": "application/json"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        while True:
            try:
                async with session.post(url, data=request, headers=headers) as resp:
                    body = await resp.read()
                    if resp.status == 200:
                        return BotConfig.model_validate_json(body)
                    if 400 <= resp.status < 500:
                        raise BootstrapRefusedError(
                            f"{resp.status}: {body.decode('utf-8', 'replace')[:500]}"
                        )
                    last = f"answered {resp.status}"
            except (aiohttp.ClientError, TimeoutError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            if loop.time() + delay > deadline:
                raise TimeoutError(f"{url} not reached in {wait_seconds:.0f} s ({last})")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)


def write_config(config: BotConfig, out: Path, owner: str | None) -> None:
    """Write ``config`` to ``out`` (mode 0600; owned by the user ``owner`` when given)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(out.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(config.model_dump_json())
    if owner is not None:
        user = pwd.getpwnam(owner)
        os.chown(temporary, user.pw_uid, user.pw_gid)
    temporary.replace(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m agent.bootstrap``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m agent.bootstrap", description=__doc__)
    parser.add_argument("--grant", type=Path, default=Path(BOOTSTRAP_GRANT_FILE))
    parser.add_argument("--out", type=Path, required=True, help="where the BotConfig goes")
    parser.add_argument("--owner", help="user who owns the written config")
    parser.add_argument("--wait-seconds", type=float, default=600.0)
    args = parser.parse_args(argv)
    try:
        grant = BootstrapGrant.model_validate_json(args.grant.read_bytes())
    except (OSError, ValidationError) as exc:
        print(f"bootstrap: cannot read grant {args.grant}: {exc}", file=sys.stderr)
        return 2
    try:
        config = asyncio.run(exchange(grant, wait_seconds=args.wait_seconds))
    except BootstrapRefusedError as exc:
        print(f"bootstrap: the control plane refused the token: {exc}", file=sys.stderr)
        return 3
    except TimeoutError as exc:
        print(f"bootstrap: {exc}", file=sys.stderr)
        return 4
    write_config(config, args.out, args.owner)
    print(f"bootstrap: config of bot {config.bot_id} written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
