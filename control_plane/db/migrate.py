"""Run the Alembic migrations of ``control_plane/migrations`` programmatically.

``meetbot db upgrade``, ``meetbot serve`` (at start) and the test fixtures call
:func:`upgrade`. The migration environment reuses the connection handed to it through
``config.attributes["connection"]``, so no second engine and no ``alembic.ini`` are needed.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(url: str) -> Config:
    """An Alembic config pointing at this package's migrations and ``url``."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser interpolation would choke on "%" in passwords.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def _upgrade_sync(connection: Connection, config: Config, revision: str) -> None:
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


async def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at ``url`` to ``revision`` (default: the newest)."""
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_upgrade_sync, alembic_config(url), revision)
    finally:
        await engine.dispose()
