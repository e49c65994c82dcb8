"""The control plane's signing keys, shared by every replica through the database.

Each row is one Ed25519 private key (PKCS#8 PEM) sealed by
:class:`control_plane.token_cipher.TokenCipher`; the newest ``generation`` signs stream tokens
and derives new agent tokens, older ones still verify until their tokens have expired
(:mod:`control_plane.agent_hub.signing_keys`, docs/architecture.md §6).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db.base import Base, UtcDateTime, utc_now


class SigningKey(Base):
    """One generation of the key ring: ``kid`` (public-key fingerprint) and the sealed key."""

    __tablename__ = "signing_keys"

    generation: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    kid: Mapped[str] = mapped_column(String(32), unique=True)
    private_key_sealed: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
