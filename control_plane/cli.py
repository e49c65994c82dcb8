"""``meetbot serve``, ``meetbot admin …`` and ``meetbot db …`` (see ``meetbot.cli``)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence

from control_plane.auth.provisioning import bootstrap
from control_plane.db.engine import create_database
from control_plane.db.migrate import upgrade
from control_plane.logs import configure_logging
from control_plane.settings import Settings

# The app and the signing-key ring are imported by the commands that use them: the whole app
# is ~2.4 s of CPU to import, which ``admin bootstrap`` and ``db upgrade`` (run before
# ``serve`` by the demo, the tests and deployments) do not need.

log = logging.getLogger(__name__)


def _prepare(settings: Settings) -> None:
    if not settings.database_url:
        settings.data_dir.mkdir(parents=True, exist_ok=True)


def serve_main(argv: Sequence[str]) -> int:
    """Migrate the database, then serve the API (and the scheduler) until interrupted."""
    parser = argparse.ArgumentParser(prog="meetbot serve", description="Run the control plane.")
    parser.add_argument("--host", help="listen address (default: MEETBOT_HOST)")
    parser.add_argument("--port", type=int, help="listen port (default: MEETBOT_PORT)")
    args = parser.parse_args(list(argv))
    from control_plane.api.server import run_api
    from control_plane.app import create_app

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    settings = Settings().model_copy(update=overrides)
    configure_logging(settings.log_level)
    _prepare(settings)
    asyncio.run(upgrade(settings.effective_database_url))
    log.info("control plane starting", extra={"host": settings.host, "port": settings.port})
    run_api(create_app(settings), host=settings.host, port=settings.port)
    return 0


async def _bootstrap(settings: Settings, email: str, workspace_name: str) -> str:
    await upgrade(settings.effective_database_url)
    database = create_database(settings.effective_database_url)
    try:
        async with database.sessions.begin() as session:
            _, _, issued = await bootstrap(
                session, email=email, workspace_name=workspace_name, key_prefix=settings.key_prefix
            )
            return issued.secret
    finally:
        await database.dispose()


async def _rotate_signing_key(settings: Settings) -> tuple[int, str]:
    from control_plane.agent_hub.signing_keys import LEGACY_KEY_FILE, SigningKeyStore
    from control_plane.token_cipher import TokenCipher

    await upgrade(settings.effective_database_url)
    database = create_database(settings.effective_database_url)
    try:
        store = SigningKeyStore(
            database,
            TokenCipher.from_settings(settings),
            retention_seconds=settings.signing_key_retention_seconds,
            legacy_file=settings.data_dir / LEGACY_KEY_FILE,
        )
        await store.ensure()
        generation = await store.rotate()
        newest = (await store.load())[0]
        return generation, newest.kid
    finally:
        await database.dispose()


def admin_main(argv: Sequence[str]) -> int:
    """``admin bootstrap --email E [--workspace-name N]``: print a new owner key once.

    ``admin rotate-signing-key``: add a new signing key to the ring every replica shares (it
    signs from then on; older keys verify for ``signing_key_retention_seconds``) and print its
    generation and ``kid``.
    """
    parser = argparse.ArgumentParser(prog="meetbot admin", description="Administration.")
    sub = parser.add_subparsers(dest="action", required=True)
    boot = sub.add_parser("bootstrap", help="create a workspace, its owner and an owner key")
    boot.add_argument("--email", required=True, help="the owner's e-mail address")
    boot.add_argument("--workspace-name", default="Default workspace", help="workspace name")
    sub.add_parser(
        "rotate-signing-key",
        help="add a new key that signs stream tokens and derives agent tokens on every replica",
    )
    args = parser.parse_args(list(argv))
    settings = Settings()
    _prepare(settings)
    if args.action == "rotate-signing-key":
        generation, kid = asyncio.run(_rotate_signing_key(settings))
        print(f"signing key generation {generation} (kid {kid}) added")
        return 0
    secret = asyncio.run(_bootstrap(settings, args.email, args.workspace_name))
    print(secret)
    print("store this key now: it is not shown again", file=sys.stderr)
    return 0


def db_main(argv: Sequence[str]) -> int:
    """``db upgrade [REVISION]``: migrate the database (default to the newest revision)."""
    parser = argparse.ArgumentParser(prog="meetbot db", description="Database maintenance.")
    sub = parser.add_subparsers(dest="action", required=True)
    up = sub.add_parser("upgrade", help="apply migrations")
    up.add_argument("revision", nargs="?", default="head")
    args = parser.parse_args(list(argv))
    settings = Settings()
    _prepare(settings)
    asyncio.run(upgrade(settings.effective_database_url, args.revision))
    print(f"database at revision {args.revision}")
    return 0
