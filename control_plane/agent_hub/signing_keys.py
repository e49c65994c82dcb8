"""The key ring: the Ed25519 keys that sign stream tokens and derive agent tokens.

Sources: docs/architecture.md §6, README "Several replicas".

The ring lives in the database (``signing_keys``), each private key sealed by the token cipher
(:class:`~control_plane.token_cipher.TokenCipher`, setting ``token_encryption_key``), so every
replica of a deployment reads the same keys without sharing a disk. The newest generation signs;
an older one still verifies for ``retention_seconds`` after a newer one replaced it (longer than
any token it signed lives). The first replica to start on an empty table imports the key file
of a deployment that had one (``{data_dir}/keys/stream_ed25519.pem``), else generates a key.

A key is named by its ``kid``: the first 16 hex digits of the SHA-256 of its raw public key.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError

from control_plane.db.engine import Database
from control_plane.db.models.signing_key import SigningKey
from control_plane.token_cipher import TokenCipher, TokenDecryptionError

LEGACY_KEY_FILE = Path("keys") / "stream_ed25519.pem"
"""Where a deployment before the key ring kept its only key, relative to ``data_dir``."""

_INSERT_ATTEMPTS = 5


class SigningKeyError(Exception):
    """The stored keys cannot be used: sealed with another token encryption key, or not Ed25519.

    Every replica must be given the same ``MEETBOT_TOKEN_ENCRYPTION_KEY``.
    """


@dataclass(frozen=True, slots=True)
class RingKey:
    """One key of the ring.

    Attributes:
        generation: Its place in the ring (1 for the first; the highest signs).
        kid: Public-key fingerprint, the ``kid`` header of the tokens it signs.
        private_key: The Ed25519 private key.
        created_at: When it was added (UTC).
        superseded_at: When the next generation was added (UTC); None for the newest.
    """

    generation: int
    kid: str
    private_key: Ed25519PrivateKey
    created_at: datetime
    superseded_at: datetime | None

    def verifies(self, now: datetime, retention: timedelta) -> bool:
        """Whether tokens of this key are still accepted at ``now``."""
        return self.superseded_at is None or now < self.superseded_at + retention


def key_id(private_key: Ed25519PrivateKey) -> str:
    """The ``kid`` of ``private_key``: 16 hex digits of the SHA-256 of its raw public key."""
    raw = private_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return hashlib.sha256(raw).hexdigest()[:16]


def _pem(private_key: Ed25519PrivateKey) -> str:
    return private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode("ascii")


def _load_pem(pem: bytes, where: str) -> Ed25519PrivateKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{where} does not hold an Ed25519 private key")
    return key


def _legacy_or_new(legacy_file: Path | None) -> Ed25519PrivateKey:
    """The deployment's old key file when it has one, else a fresh key (blocking file I/O)."""
    if legacy_file is not None and legacy_file.is_file():
        return _load_pem(legacy_file.read_bytes(), str(legacy_file))
    return Ed25519PrivateKey.generate()


class SigningKeyStore:
    """The ring's rows in the database.

    Args:
        db: The control plane's database.
        cipher: Seals the private keys at rest.
        retention_seconds: How long a replaced key still verifies
            (``MEETBOT_SIGNING_KEY_RETENTION_SECONDS``).
        legacy_file: A key file to import into an empty ring (``{data_dir}/keys/…``), if any.
    """

    def __init__(
        self,
        db: Database,
        cipher: TokenCipher,
        *,
        retention_seconds: float,
        legacy_file: Path | None,
    ) -> None:
        self._db = db
        self._cipher = cipher
        self.retention = timedelta(seconds=retention_seconds)
        self._legacy_file = legacy_file

    async def ensure(self, *, now: datetime | None = None) -> None:
        """Give an empty ring its first key: the legacy file's, else a new one.

        Two replicas starting at once both try generation 1; one insert wins, and both then
        read the winner's key.
        """
        async with self._db.reads() as session:
            if await session.scalar(select(SigningKey.generation).limit(1)) is not None:
                return
        key = await asyncio.to_thread(_legacy_or_new, self._legacy_file)
        await self._insert(1, key, now or datetime.now(UTC))

    async def load(self) -> tuple[RingKey, ...]:
        """Every key of the ring, newest first.

        Raises:
            SigningKeyError: A key cannot be opened with this replica's token cipher.
        """
        async with self._db.reads() as session:
            rows = (
                await session.scalars(select(SigningKey).order_by(SigningKey.generation.desc()))
            ).all()
        ring: list[RingKey] = []
        superseded_at: datetime | None = None
        for row in rows:
            try:
                pem = self._cipher.decrypt(row.private_key_sealed)
            except TokenDecryptionError as exc:
                raise SigningKeyError(
                    f"signing key {row.kid} is sealed with another token encryption key: give "
                    "every replica the same MEETBOT_TOKEN_ENCRYPTION_KEY"
                ) from exc
            key = _load_pem(pem.encode("ascii"), f"signing key {row.kid}")
            ring.append(RingKey(row.generation, row.kid, key, row.created_at, superseded_at))
            superseded_at = row.created_at
        return tuple(ring)

    async def rotate(self, *, now: datetime | None = None) -> int:
        """Add a new newest key and drop keys replaced longer than the retention ago.

        Returns:
            The new key's generation.
        """
        at = now or datetime.now(UTC)
        for _ in range(_INSERT_ATTEMPTS):
            async with self._db.reads() as session:
                top = await session.scalar(select(func.max(SigningKey.generation)))
            generation = (top or 0) + 1
            if await self._insert(generation, Ed25519PrivateKey.generate(), at):
                break
        else:
            raise SigningKeyError("could not add a signing key: others were added meanwhile")
        await self._prune(self._expired(await self.load(), at))
        return generation

    def _expired(self, ring: Sequence[RingKey], now: datetime) -> list[int]:
        return [key.generation for key in ring if not key.verifies(now, self.retention)]

    async def _prune(self, generations: Sequence[int]) -> None:
        if not generations:
            return
        async with self._db.sessions.begin() as session:
            await session.execute(
                delete(SigningKey).where(SigningKey.generation.in_(list(generations)))
            )

    async def _insert(self, generation: int, key: Ed25519PrivateKey, at: datetime) -> bool:
        """Store ``key`` as ``generation``; False when that generation (or key) exists."""
        try:
            async with self._db.sessions.begin() as session:
                session.add(
                    SigningKey(
                        generation=generation,
                        kid=key_id(key),
                        private_key_sealed=self._cipher.encrypt(_pem(key)),
                        created_at=at,
                    )
                )
        except IntegrityError:
            return False
        return True
