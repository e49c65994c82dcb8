"""``python -m agent.log_upload``: a bot machine uploads its agent's log when the agent exits.

Run by ``meetbot-agent.service`` after the agent (``ExecStopPost``, before the machine powers
off): reads the log — the journal of ``--unit`` for this boot (``journalctl``), or ``--file`` —
asks the control plane for an upload slot (``kind`` ``log``, the upload-slot path of
:mod:`agent.link.artifacts`), sends the bytes and reports the artifact
(``POST …/agents/{bot_id}/artifacts``, the link being closed by then). The log is listed in
the full meeting record's ``logs`` (docs/api.md 2.6).

Exit code 0 uploaded, 1 not (the reason on stderr); the machine powers off either way.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import aiohttp
from pydantic import ValidationError

from agent.contracts.bot_config import BotConfig
from agent.contracts.link import ArtifactKind, ArtifactReport
from agent.contracts.wire import agent_artifacts_path, bearer
from agent.link.artifacts import ArtifactUploader
from agent.process.errors import CommandError

LOG_CONTENT_TYPE = "text/plain; charset=utf-8"
LOG_ARTIFACT_ID = "agent-log"
MAX_LOG_BYTES = 64 * 1024 * 1024
"""A log longer than this keeps its last 64 MiB."""


def journal(unit: str) -> bytes:
    """The journal of ``unit`` for this boot (ISO timestamps), at most :data:`MAX_LOG_BYTES`.

    Raises:
        OSError: ``journalctl`` could not run or failed.
    """
    done = subprocess.run(  # noqa: S603 - journalctl with our arguments
        ["journalctl", "--unit", unit, "--boot", "--no-pager", "--output", "short-iso-precise"],  # noqa: S607
        capture_output=True,
        check=False,
        timeout=60,
    )
    if done.returncode != 0:
        raise OSError(f"journalctl failed: {done.stderr.decode('utf-8', 'replace').strip()}")
    return done.stdout[-MAX_LOG_BYTES:]


async def upload_log(config: BotConfig, data: bytes, *, name: str = "agent.log") -> str:
    """Upload ``data`` as the bot's agent log and report it; return its storage key.

    Raises:
        CommandError: ``upload_failed`` when no slot came or the bytes were refused.
        OSError: The report was refused or the control plane unreachable.
    """
    if not config.control_plane_url or not config.agent_token:
        raise OSError("the config has no control plane to upload to")
    uploader = ArtifactUploader(config.agent_token, Path("."))
    slot = await uploader.request_slot(
        config.control_plane_url, str(config.bot_id), ArtifactKind.LOG, name, LOG_CONTENT_TYPE,
        len(data),
    )  # fmt: skip
    stored = await uploader.store(data, LOG_CONTENT_TYPE, name, slot)
    report = ArtifactReport(
        kind=ArtifactKind.LOG,
        artifact_id=LOG_ARTIFACT_ID,
        storage_key=stored.storage_key,
        content_type=LOG_CONTENT_TYPE,
        size_bytes=len(data),
    )
    url = config.control_plane_url.rstrip("/") + agent_artifacts_path(config.bot_id)
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session,
            session.post(
                url, json=report.model_dump(mode="json"), headers=bearer(config.agent_token)
            ) as resp,
        ):
            if resp.status != 201:
                raise OSError(f"artifact report answered {resp.status}")
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise OSError(f"artifact report failed: {exc}") from exc
    return stored.storage_key


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m agent.log_upload``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m agent.log_upload", description=__doc__)
    parser.add_argument("--config", type=Path, required=True, help="the bot's BotConfig JSON")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--unit", help="upload this systemd unit's journal of this boot")
    source.add_argument("--file", type=Path, help="upload this log file")
    args = parser.parse_args(argv)
    try:
        config = BotConfig.model_validate_json(args.config.read_bytes())
        data = journal(args.unit) if args.unit else args.file.read_bytes()[-MAX_LOG_BYTES:]
        key = asyncio.run(upload_log(config, data))
    except (OSError, ValidationError, CommandError, subprocess.TimeoutExpired) as exc:
        print(f"log upload: not uploaded: {exc}", file=sys.stderr)
        return 1
    print(f"log upload: {len(data)} bytes as {key}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
