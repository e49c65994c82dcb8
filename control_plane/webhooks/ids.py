"""Ids of webhook objects in the Svix style: ``ep_…`` endpoints, ``msg_…`` messages, ``atmpt_…``.

The part after the prefix is 26 Crockford base32 characters: 48 bits of milliseconds since the
epoch, then 80 random bits (the ULID layout), so ids of one kind sort by creation time.
"""

from __future__ import annotations

import secrets
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_id(prefix: str) -> str:
    """A fresh id ``<prefix>_<26 base32 chars>``, e.g. ``new_id("ep")`` → ``ep_01JD…``."""
    value = (time.time_ns() // 1_000_000) << 80 | secrets.randbits(80)
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return f"{prefix}_{''.join(reversed(chars))}"
