"""Per-workspace quotas (docs/api.md 2.10): how many of a thing a workspace may hold.

Each creation counts the workspace's rows of that kind first and refuses the new one with 409
``quota_exceeded`` when the count has reached the limit (settings ``MEETBOT_MAX_*``). The count
runs in the creating transaction where there is one (SQLite serialises those, so the limit is
exact there; on PostgreSQL concurrent creations may overshoot by their number).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.errors import Conflict


class QuotaExceeded(Conflict):
    """409: the workspace holds the most of this kind of resource its quota allows."""

    default_code = "quota_exceeded"
    title = "Quota exceeded"


def check_quota(count: int, limit: int, what: str) -> None:
    """Refuse one more ``what`` when ``count`` have reached ``limit``.

    Raises:
        QuotaExceeded: ``count >= limit``.
    """
    if count >= limit:
        raise QuotaExceeded(f"a workspace may have at most {limit} {what}")


async def enforce_quota(session: AsyncSession, rows: Select[Any], limit: int, what: str) -> None:
    """Count ``rows`` (a ``select(Model.id).where(…)``) and :func:`check_quota` it.

    Raises:
        QuotaExceeded: The count has reached ``limit``.
    """
    count = await session.scalar(select(func.count()).select_from(rows.limit(limit).subquery()))
    check_quota(count or 0, limit, what)
