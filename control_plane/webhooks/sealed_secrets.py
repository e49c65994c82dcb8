"""Endpoint secrets at rest: sealed by the token cipher, opened where deliveries are signed.

Whoever holds an endpoint's ``whsec_`` secret can forge deliveries to its receiver, so
``webhook_endpoints.secret`` stores it sealed (:class:`~control_plane.token_cipher.TokenCipher`,
setting ``token_encryption_key``): a copy of the database does not show it. A value that still
starts with ``whsec_`` was stored before secrets were sealed; :func:`seal_stored_secrets` seals
those when the control plane starts, and until then :func:`open_secret` reads them as they are.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from control_plane.db.models.webhook import WebhookEndpoint
from control_plane.token_cipher import TokenCipher
from control_plane.webhooks.signing import SECRET_PREFIX


def seal_secret(cipher: TokenCipher, secret: str) -> str:
    """The stored form of a ``whsec_`` secret (ASCII, about 170 characters)."""
    return cipher.encrypt(secret)


def open_secret(cipher: TokenCipher, stored: str) -> str:
    """The ``whsec_`` secret of a stored value (sealed, or from before sealing).

    Raises:
        TokenDecryptionError: Sealed with another key, or altered.
    """
    if stored.startswith(SECRET_PREFIX):
        return stored
    return cipher.decrypt(stored)


async def seal_stored_secrets(
    sessionmaker: async_sessionmaker[AsyncSession], cipher: TokenCipher
) -> int:
    """Seal every secret still stored in plain text, in one transaction; returns how many.

    Idempotent: a sealed value never starts with ``whsec_``, so a second run finds none.
    """
    plain = WebhookEndpoint.secret.startswith(SECRET_PREFIX, autoescape=True)
    async with sessionmaker() as session, session.begin():
        rows = (await session.scalars(select(WebhookEndpoint).where(plain))).all()
        for row in rows:
            row.secret = seal_secret(cipher, row.secret)
    return len(rows)
