"""A short-lived, per-process cache of API-key lookups (digest → caller).

Every authenticated request otherwise costs a database round trip before the handler runs;
under load that is the largest part of a cheap request (measured by ``bench/api.py``). An entry
lives ``auth_cache_ttl_seconds`` (default 2 s; 0 disables the cache). Expiry (``expires_at``) is
still checked on every request. ``DELETE /api/v1/api-keys/{id}`` drops the key's entries in this
process, so a deleted key stops working at once here; another replica keeps accepting it for
at most the TTL.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from aiohttp import web

from control_plane.auth.context import AuthContext


@dataclass
class CachedKey:
    """What a request needs to know about its key.

    Attributes:
        context: The caller.
        expires_at: The key's expiry (aware UTC), or None.
        last_used_at: Last ``last_used_at`` written or read (aware UTC), or None.
    """

    context: AuthContext
    expires_at: datetime | None
    last_used_at: datetime | None


@dataclass
class KeyCache:
    """Entries by key digest, each valid ``ttl`` seconds after it was loaded.

    Args:
        ttl: Seconds an entry is trusted; 0 or less disables caching.
        max_entries: Bound on memory; the cache is emptied when it is reached.
        clock: Monotonic clock in seconds.
    """

    ttl: float
    max_entries: int = 10_000
    clock: Callable[[], float] = time.monotonic
    _entries: dict[str, tuple[float, CachedKey]] = field(default_factory=dict)

    def get(self, digest: str) -> CachedKey | None:
        """The entry of ``digest`` when it is younger than ``ttl``, else None."""
        found = self._entries.get(digest)
        if found is None:
            return None
        loaded, entry = found
        if self.clock() - loaded >= self.ttl:
            del self._entries[digest]
            return None
        return entry

    def put(self, digest: str, entry: CachedKey) -> None:
        """Remember ``entry`` for ``ttl`` seconds (nothing when caching is disabled)."""
        if self.ttl <= 0:
            return
        if len(self._entries) >= self.max_entries:
            self._entries.clear()
        self._entries[digest] = (self.clock(), entry)

    def forget_key(self, key_id: int) -> None:
        """Drop every entry of key ``key_id`` (it was deleted)."""
        stale = [d for d, (_, entry) in self._entries.items() if entry.context.key_id == key_id]
        for digest in stale:
            del self._entries[digest]

    def clear(self) -> None:
        """Drop everything (e.g. after a membership or role change)."""
        self._entries.clear()


KEY_CACHE = web.AppKey("key_cache", KeyCache)
