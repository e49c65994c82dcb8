"""``meetbot db upgrade``, ``meetbot admin bootstrap`` and ``meetbot serve`` as a user runs them;
``meetbot admin rotate-signing-key``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from control_plane.agent_hub.signing_keys import SigningKeyStore
from control_plane.agent_hub.stream_tokens import StreamTokenSigner
from control_plane.cli import admin_main
from control_plane.db.engine import create_database
from control_plane.settings import Settings
from control_plane.token_cipher import TokenCipher
from tests.plugins.paths import REPO_ROOT
from tests.ports import free_port

pytestmark = pytest.mark.api


def _meetbot(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own CLI with fixed arguments
        [sys.executable, "-m", "meetbot", *args],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _request(url: str, *, key: str | None = None, body: object = None) -> tuple[int, object]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET")  # noqa: S310 - loopback http
    if key:
        request.add_header("X-API-Key", key)
    if data:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - loopback http
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_upgrade_bootstrap_and_serve_on_sqlite(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MEETBOT_DATA_DIR": str(tmp_path / "data"),
        "MEETBOT_LAUNCHER": "memory",
        "MEETBOT_DATABASE_URL": "",
    }
    upgraded = _meetbot(["db", "upgrade"], env)
    assert upgraded.returncode == 0, upgraded.stderr
    assert (tmp_path / "data" / "meetbot.db").is_file()
    booted = _meetbot(["admin", "bootstrap", "--email", "ops@example.org"], env)
    assert booted.returncode == 0, booted.stderr
    key = booted.stdout.strip()
    assert key.startswith("mbk_") and len(key) == 47

    port = free_port()
    log_path = tmp_path / "serve.log"  # a file, not a pipe: an unread pipe would block the server
    log_file = log_path.open("w")
    server = subprocess.Popen(  # noqa: S603 - our own CLI with fixed arguments
        [sys.executable, "-m", "meetbot", "serve", "--port", str(port)],
        env=env,
        cwd=REPO_ROOT,
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if _request(f"{base}/readyz")[0] == 200:
                    break
            except OSError:
                pass
            assert server.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, "serve did not become ready"
            time.sleep(0.1)
        status, bot = _request(
            f"{base}/api/v1/bots",
            key=key,
            body={"platform": "google_meet", "meeting_url": "https://meet.google.com/abc-defg-hij"},
        )
        assert status == 201 and isinstance(bot, dict) and bot["status"] == "requested"
        status, listed = _request(f"{base}/api/v1/meetings", key=key)
        assert status == 200 and isinstance(listed, dict) and len(listed["meetings"]) == 1
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log_file.close()
    assert server.returncode == 0, log_path.read_text()[-2000:]


def test_admin_rotate_signing_key_adds_a_generation_that_signs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``meetbot admin rotate-signing-key`` (issue 35, item 1), in-process: no server needed."""
    monkeypatch.setenv("MEETBOT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEETBOT_DATABASE_URL", "")
    monkeypatch.delenv("MEETBOT_TOKEN_ENCRYPTION_KEY", raising=False)
    assert admin_main(["rotate-signing-key"]) == 0  # an empty ring gets its first key, then one
    assert admin_main(["rotate-signing-key"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in printed] == [
        "signing key generation 2",
        "signing key generation 3",
    ]
    newest_kid = printed[-1].split("kid ")[1].removesuffix(") added")

    async def ring() -> list[str]:
        settings = Settings()
        database = create_database(settings.effective_database_url)
        try:
            store = SigningKeyStore(
                database,
                TokenCipher.from_settings(settings),
                retention_seconds=settings.signing_key_retention_seconds,
                legacy_file=None,
            )
            signer = await StreamTokenSigner.open(store)
            return [key.kid for key in await store.load()] + [signer.current.kid]
        finally:
            await database.dispose()

    kids = asyncio.run(ring())
    assert len(set(kids[:3])) == 3 and kids[0] == kids[3] == newest_kid
