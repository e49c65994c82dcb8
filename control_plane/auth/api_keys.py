"""API-key secrets: generation, digest, prefix (docs/api.md 2.1).

A key is ``<key_prefix>_`` + 43 URL-safe characters (32 random bytes, 256 bits). Only the
SHA-256 hex digest is stored; ``prefix`` is the key's first 12 characters, shown in listings.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

PREFIX_LENGTH = 12
_RANDOM_BYTES = 32  # 43 URL-safe base64 characters without padding


@dataclass(frozen=True)
class NewKey:
    """A freshly generated key: ``secret`` is shown once, ``digest``/``prefix`` are stored."""

    secret: str
    digest: str
    prefix: str


def digest_of(secret: str) -> str:
    """SHA-256 hex digest of a key secret."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def generate(key_prefix: str) -> NewKey:
    """Generate a new key ``<key_prefix>_<43 url-safe chars>``."""
    secret = f"{key_prefix}_{secrets.token_urlsafe(_RANDOM_BYTES)}"
    return NewKey(secret=secret, digest=digest_of(secret), prefix=secret[:PREFIX_LENGTH])


def well_formed(secret: str, key_prefix: str) -> bool:
    """Whether ``secret`` has the shape of a key of this service (cheap pre-check)."""
    return re.fullmatch(rf"{re.escape(key_prefix)}_[A-Za-z0-9_-]{{43}}", secret) is not None


def digests_match(stored: str, presented: str) -> bool:
    """Constant-time comparison of two hex digests."""
    return hmac.compare_digest(stored.encode("ascii"), presented.encode("ascii"))
