"""The per-process key cache: TTL, disabling, forgetting a deleted key, bounded size."""

from __future__ import annotations

import uuid

import pytest

from control_plane.auth.context import AuthContext
from control_plane.auth.key_cache import CachedKey, KeyCache
from control_plane.enums import Permission, Role

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _entry(key_id: int) -> CachedKey:
    context = AuthContext(
        key_id=key_id,
        user_id=1,
        workspace_id=uuid.uuid4(),
        permission=Permission.EDIT,
        role=Role.OWNER,
    )
    return CachedKey(context=context, expires_at=None, last_used_at=None)


def test_entries_live_for_the_ttl_only() -> None:
    clock = Clock()
    cache = KeyCache(ttl=2.0, clock=clock)
    cache.put("d1", _entry(1))
    clock.now += 1.9
    assert cache.get("d1") is not None
    clock.now += 0.2
    assert cache.get("d1") is None
    assert cache.get("unknown") is None


def test_zero_ttl_disables_caching() -> None:
    cache = KeyCache(ttl=0)
    cache.put("d1", _entry(1))
    assert cache.get("d1") is None


def test_forget_key_and_bounded_size() -> None:
    cache = KeyCache(ttl=60, max_entries=2, clock=Clock())
    cache.put("d1", _entry(1))
    cache.put("d2", _entry(2))
    cache.forget_key(1)
    assert cache.get("d1") is None and cache.get("d2") is not None
    cache.put("d3", _entry(3))
    cache.put("d4", _entry(4))  # full: emptied, then d4 stored
    assert cache.get("d2") is None and cache.get("d4") is not None
    cache.clear()
    assert cache.get("d4") is None
