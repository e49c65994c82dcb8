"""A recording survives its agent's crash: the pieces that ended before it are kept.

The agent runs as a launcher runs it (``python -m agent --config bot.json``, its own process
group, no control plane: recordings go to its data folder's ``artifacts``) in a testmeeting room
where one person talks without pause. The recording is cut every :data:`PIECE_S` seconds. Once
two pieces are stored the agent is killed with SIGKILL (no cleanup, no leaving, as the
out-of-memory killer does), then its browser and driver. The two pieces must be whole mp3
files of one span each, with the talk in them. Before issue 19's pieces nothing reached the
artifacts folder until the bot left, so a SIGKILL lost the whole recording.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import signal
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from agent.contracts.bot_config import BotConfig, BotSettings, RecordingFormat
from agent.transcribe.audio_io import read_audio
from testmeeting import TestMeetingServer, parse_scenario
from tests.recording.helpers import codecs, probe

pytestmark = pytest.mark.browser

PIECE_S = 12.0
MEETING_ID = "crs-hpie-ces"
REPO = Path(__file__).resolve().parents[2]


def _monologue(speech: Path, seconds: float) -> str:
    """One person saying the corpus's English clips back to back for ``seconds``."""
    with (speech / "MANIFEST.tsv").open() as manifest:
        clips = [
            (row["file"], float(row["duration_s"]))
            for row in csv.DictReader(manifest, delimiter="\t")
            if row["language"] == "en"
        ]
    utterances, at, n = [], 0.5, 0
    while at < seconds:
        name, duration = clips[n % len(clips)]
        utterances.append(f"{{at: {at:.2f}, file: {name}}}")
        at += duration + 0.3
        n += 1
    return (
        f"platform: google_meet\nmeeting_id: '{MEETING_ID}'\nlobby: false\nparticipants:\n"
        f"  - name: Alice\n    utterances: [{', '.join(utterances)}]\n"
    )


def _rms(samples: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(samples.astype(np.float64) / 32768.0))))


async def test_a_sigkilled_agent_keeps_the_pieces_recorded_before_it(
    speech: Path, tmp_path: Path
) -> None:
    artifacts = tmp_path / "data" / "artifacts"
    async with TestMeetingServer(speech_dir=speech) as server:
        await server.create_room(parse_scenario(_monologue(speech, 600)))
        config = BotConfig(
            bot_id=uuid.uuid4(),
            meeting_id=1,
            platform="google_meet",
            meeting_url=server.meeting_url("google_meet", MEETING_ID),
            native_meeting_id=MEETING_ID,
            settings=BotSettings(
                bot_name="Recorder",
                recording_enabled=True,
                recording_format=RecordingFormat.MP3,
                transcribe_enabled=False,
            ),
        )
        (tmp_path / "bot.json").write_text(config.model_dump_json())
        env = {
            **os.environ,
            "MEETBOT_AGENT_DATA_DIR": str(tmp_path / "data"),
            "MEETBOT_AGENT_EXTRA_BROWSER_ARGS": json.dumps(server.browser_args()),
            "MEETBOT_AGENT_IGNORE_HTTPS_ERRORS": "true",
            "MEETBOT_AGENT_RECORDING_PIECE_SECONDS": str(PIECE_S),
            "PYTHONPATH": str(REPO),
        }
        with (tmp_path / "agent.log").open("wb") as log:
            agent = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "agent",
                "--config",
                str(tmp_path / "bot.json"),
                cwd=REPO,
                env=env,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,  # its browser and driver can be killed with it
            )
            try:
                deadline = time.monotonic() + 240
                while len(pieces := sorted(artifacts.glob("*.mp3"))) < 2:
                    assert agent.returncode is None, (tmp_path / "agent.log").read_text()[-3000:]
                    assert time.monotonic() < deadline, "two pieces never arrived"
                    await asyncio.sleep(0.5)
                os.kill(agent.pid, signal.SIGKILL)  # the agent dies mid-piece, without cleanup
                await asyncio.wait_for(agent.wait(), 30)
            finally:
                if agent.returncode is None:
                    agent.kill()
                    await agent.wait()
                os.killpg(agent.pid, signal.SIGKILL)  # its orphaned driver and browser
    assert agent.returncode == -signal.SIGKILL
    for piece in pieces:
        assert codecs(probe(piece)) == {"audio": "mp3"}
        duration = float(probe(piece)["format"]["duration"])
        assert duration == pytest.approx(PIECE_S, abs=0.3), duration
        audio = read_audio(piece)
        assert _rms(audio) > 0.003  # Alice's talk, not silence
