"""Fixtures of the API tests: the real app on SQLite and PostgreSQL, and tenants with keys.

Every test using ``client`` runs twice, ``[sqlite]`` and ``[postgresql]``. Each run gets a fresh
database built by the real Alembic migrations: a template is migrated once per session (a
SQLite file copied per test; a PostgreSQL ``CREATE DATABASE … TEMPLATE``), so migrations are
exercised on both databases without paying for them per test. The PostgreSQL variant needs
``MEETBOT_TEST_POSTGRES_URL`` (``scripts/test`` starts a throwaway server and sets it) and skips
with a clear message without it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from control_plane.app import create_app
from control_plane.auth.provisioning import (
    add_member,
    create_workspace,
    get_or_create_user,
    issue_key,
)
from control_plane.db.engine import DB, Database
from control_plane.db.migrate import upgrade
from control_plane.db.models.workspace import User, Workspace
from control_plane.enums import Permission, Role
from control_plane.launchers.memory import MemoryLauncher
from control_plane.settings import Settings

POSTGRES_ENV = "MEETBOT_TEST_POSTGRES_URL"
KEY_PREFIX = "mbk"


def _run(make: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run a coroutine to completion on its own loop in a helper thread.

    Session-scoped set-up may be requested from inside a running test loop, where
    ``asyncio.run`` is refused; a thread has no running loop.
    """
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(lambda: asyncio.run(make())).result()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated to the newest revision, copied by each test."""
    path = tmp_path_factory.mktemp("sqlite-template") / "template.db"
    _run(lambda: upgrade(f"sqlite+aiosqlite:///{path}"))
    return path


@pytest.fixture(scope="session")
def postgres_template() -> Iterator[tuple[str, str]]:
    """``(server URL, template database name)``: a database migrated to the newest revision."""
    server = os.environ.get(POSTGRES_ENV)
    if not server:
        pytest.skip(
            f"{POSTGRES_ENV} is not set: run scripts/test (it starts a throwaway PostgreSQL) or "
            "point it at a server, e.g. postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
        )
    name = f"meetbot_tpl_{uuid.uuid4().hex[:12]}"

    async def create() -> None:
        await _admin(server, f'CREATE DATABASE "{name}"')
        await upgrade(make_url(server).set(database=name).render_as_string(hide_password=False))

    async def drop() -> None:
        await _admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    _run(create)
    yield server, name
    _run(drop)


async def _admin(server: str, statement: str) -> None:
    # CREATE/DROP DATABASE refuse to run inside a transaction.
    engine = create_async_engine(server, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            await conn.exec_driver_sql(statement)
    finally:
        await engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, migrated database for one test, on each of the two databases."""
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        path = tmp_path / "meetbot.db"
        shutil.copyfile(template, path)
        yield f"sqlite+aiosqlite:///{path}"
        return
    server, template_name = request.getfixturevalue("postgres_template")
    name = f"meetbot_t_{uuid.uuid4().hex[:12]}"
    _run(lambda: _admin(server, f'CREATE DATABASE "{name}" TEMPLATE "{template_name}"'))
    yield make_url(server).set(database=name).render_as_string(hide_password=False)
    _run(lambda: _admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def database_file_bytes(database_url: str) -> bytes:
    """A SQLite database's file and its write-ahead log, as a copy of the disk would show them.

    For tests of what is stored at rest (secrets sealed, tokens erased).
    """
    path = Path(str(make_url(database_url).database))
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Settings of the app under test (memory launcher, testmeeting host allowed)."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        extra_meeting_hosts=["testmeeting.local", "127.0.0.1"],
        scheduler_interval_seconds=0.05,
    )


@pytest.fixture
def launcher() -> MemoryLauncher:
    """The launcher the app uses; tests inspect its ``launches``."""
    return MemoryLauncher()


@pytest.fixture
def app(settings: Settings, launcher: MemoryLauncher) -> web.Application:
    """The real application (not started; ``client`` starts it)."""
    return create_app(settings, launcher=launcher)


@pytest.fixture
async def client(
    app: web.Application, aiohttp_client: AiohttpClient
) -> TestClient[web.Request, web.Application]:
    """An HTTP client of the started app.

    ``app`` comes first so that its database is set up before ``aiohttp_client`` and torn down
    after it: the app's background loops stop before the test's PostgreSQL database is dropped.
    """
    return await aiohttp_client(app)


@dataclass(frozen=True)
class Caller:
    """A key and what it belongs to; ``headers`` authenticate a request."""

    workspace_id: uuid.UUID | None
    user_id: int
    key_id: int
    key: str

    @property
    def headers(self) -> dict[str, str]:
        """``{"X-API-Key": key}``."""
        return {"X-API-Key": self.key}


class Tenants:
    """Creates workspaces, users and keys straight in the app's database."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def workspace(self, name: str = "Acme") -> Caller:
        """A new workspace with an owner and the owner's ``edit`` key."""
        async with self.database.sessions.begin() as session:
            user = await get_or_create_user(session, f"owner-{uuid.uuid4().hex[:8]}@example.org")
            workspace = await create_workspace(session, name)
            await add_member(session, workspace, user, Role.OWNER)
            issued = await issue_key(
                session,
                user=user,
                workspace_id=workspace.id,
                name="owner",
                key_prefix=KEY_PREFIX,
            )
            return Caller(workspace.id, user.id, issued.key.id, issued.secret)

    async def key(
        self,
        of: Caller,
        *,
        permission: Permission = Permission.EDIT,
        expires_at: datetime | None = None,
    ) -> Caller:
        """Another key of the same user and workspace as ``of``."""
        async with self.database.sessions.begin() as session:
            user = await get_or_create_user(session, await self._email(of.user_id))
            issued = await issue_key(
                session,
                user=user,
                workspace_id=of.workspace_id,
                name="extra",
                key_prefix=KEY_PREFIX,
                permission=permission,
                expires_at=expires_at,
            )
            return Caller(of.workspace_id, user.id, issued.key.id, issued.secret)

    async def member(self, of: Caller, *, role: Role = Role.MEMBER) -> Caller:
        """A new user with ``role`` in ``of``'s workspace, and their ``edit`` key."""
        async with self.database.sessions.begin() as session:
            user = await get_or_create_user(session, f"member-{uuid.uuid4().hex[:8]}@example.org")
            workspace = await session.get(Workspace, of.workspace_id)
            assert workspace is not None
            await add_member(session, workspace, user, role)
            issued = await issue_key(
                session, user=user, workspace_id=workspace.id, name="member", key_prefix=KEY_PREFIX
            )
            return Caller(workspace.id, user.id, issued.key.id, issued.secret)

    async def unbound(self) -> Caller:
        """A key bound to no workspace."""
        async with self.database.sessions.begin() as session:
            user = await get_or_create_user(session, f"loose-{uuid.uuid4().hex[:8]}@example.org")
            issued = await issue_key(
                session, user=user, workspace_id=None, name="unbound", key_prefix=KEY_PREFIX
            )
            return Caller(None, user.id, issued.key.id, issued.secret)

    async def _email(self, user_id: int) -> str:
        async with self.database.sessions() as session:
            user = await session.get(User, user_id)
            assert user is not None
            return user.email


@pytest.fixture
def tenants(client: TestClient[web.Request, web.Application]) -> Tenants:
    """Factory of workspaces, users and keys in the started app's database."""
    return Tenants(client.app[DB])


@pytest.fixture
async def owner(tenants: Tenants) -> Caller:
    """The owner of a fresh workspace, with an ``edit`` key."""
    return await tenants.workspace()
