"""Stream tokens: short-lived EdDSA JWTs that open a bot's SSE stream; and agent tokens.

Sources: docs/api.md 2.7, docs/architecture.md §6.

Tokens are signed with the newest key of the deployment's key ring
(:mod:`control_plane.agent_hub.signing_keys`), which every replica reads from the database, and
name it in their ``kid`` header. A token carries ``sub`` = bot id, ``aud`` = ``"bot-stream"``,
``iat`` and ``exp``; any replica verifies it (:meth:`StreamTokenSigner.verify`) when a client
opens ``GET /api/v1/bots/{bot_id}/stream`` (:mod:`control_plane.bots.stream`). A ``kid`` this
replica does not know yet (another replica rotated the ring) makes it read the ring again; a
token without ``kid`` (minted before the ring) is tried against every key still verifying.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from agent.contracts.wire import STREAM_ALGORITHM, STREAM_AUDIENCE, STREAM_REQUIRED_CLAIMS
from control_plane.agent_hub.agent_tokens import AGENT_TOKEN_PREFIX, agent_token_matches
from control_plane.agent_hub.signing_keys import RingKey, SigningKeyStore

REFRESH_MIN_INTERVAL_S = 1.0
"""Unknown ``kid`` s read the ring again at most this often (a stream of forged ones is cheap)."""


@dataclass(frozen=True, slots=True)
class StreamToken:
    """A minted stream token and the moment it stops working (UTC, whole seconds)."""

    token: str
    expires_at: datetime


def derive_agent_token(private_key: Ed25519PrivateKey, bot_id: UUID) -> str:
    """The agent token ``private_key`` gives ``bot_id``: ``mat_`` and 43 URL-safe characters.

    Derived, not random: the SHA-256 of the key's Ed25519 signature (deterministic) over the bot
    id, so a relaunch after a crash hands the agent that may already run the token it holds,
    and nobody without the private key can compute it.
    """
    signature = private_key.sign(b"meetbot-agent-token:" + bot_id.bytes)
    digest = hashlib.sha256(signature).digest()
    return AGENT_TOKEN_PREFIX + base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


class StreamTokenSigner:
    """Mints and verifies stream tokens and derives agent tokens with the shared key ring.

    Build it with :meth:`open`. ``ring`` is newest first.
    """

    def __init__(self, store: SigningKeyStore, ring: Sequence[RingKey]) -> None:
        if not ring:
            raise ValueError("the key ring is empty")
        self._store = store
        self._ring = tuple(ring)
        self._unknown_read_at = -REFRESH_MIN_INTERVAL_S  # last read for an unknown kid

    @classmethod
    async def open(cls, store: SigningKeyStore) -> StreamTokenSigner:
        """Give an empty ring its first key, then read it.

        Raises:
            SigningKeyError: The stored keys cannot be opened with this replica's cipher.
        """
        await store.ensure()
        return cls(store, await store.load())

    @property
    def current(self) -> RingKey:
        """The key that signs (the newest this replica has read)."""
        return self._ring[0]

    @property
    def public_key_pem(self) -> str:
        """The signing key's public key (SubjectPublicKeyInfo PEM)."""
        public = self.current.private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return public.decode("ascii")

    async def refresh(self) -> None:
        """Read the ring again.

        Raises:
            SigningKeyError: A stored key cannot be opened with this replica's cipher.
        """
        ring = await self._store.load()
        if ring:
            self._ring = ring

    async def rotate(self) -> RingKey:
        """Add a new signing key to the ring (older keys keep verifying) and use it here."""
        generation = await self._store.rotate()
        await self.refresh()
        return next(key for key in self._ring if key.generation == generation)

    def mint(self, bot_id: UUID, ttl_seconds: int, *, now: datetime | None = None) -> StreamToken:
        """Return a token for ``bot_id`` valid for ``ttl_seconds`` from ``now`` (default: now)."""
        issued = (now or datetime.now(UTC)).replace(microsecond=0)
        expires = issued + timedelta(seconds=ttl_seconds)
        claims = {
            "sub": str(bot_id),
            "aud": STREAM_AUDIENCE,
            "iat": int(issued.timestamp()),
            "exp": int(expires.timestamp()),
        }
        key = self.current
        token = jwt.encode(
            claims, key.private_key, algorithm=STREAM_ALGORITHM, headers={"kid": key.kid}
        )
        return StreamToken(token=token, expires_at=expires)

    async def verify(
        self, token: str, bot_id: UUID, *, now: datetime | None = None
    ) -> dict[str, object]:
        """Check a stream token signed by any key of the ring still verifying; its claims.

        Raises:
            jwt.InvalidTokenError: Malformed, unknown or retired key, bad signature, wrong
                audience, expired, or ``sub`` is another bot.
        """
        kid = jwt.get_unverified_header(token).get("kid")
        at = now or datetime.now(UTC)
        if kid is None:
            return self._verify_without_kid(token, bot_id, at)
        key = self._key(str(kid))
        if key is None and time.monotonic() - self._unknown_read_at >= REFRESH_MIN_INTERVAL_S:
            self._unknown_read_at = time.monotonic()
            await self.refresh()
            key = self._key(str(kid))
        if key is None or not key.verifies(at, self._store.retention):
            raise jwt.InvalidSignatureError("unknown or retired signing key")
        return _decode(token, key.private_key.public_key(), bot_id)

    def _key(self, kid: str) -> RingKey | None:
        return next((key for key in self._ring if key.kid == kid), None)

    def _verify_without_kid(self, token: str, bot_id: UUID, now: datetime) -> dict[str, object]:
        for key in self._ring:
            if not key.verifies(now, self._store.retention):
                continue
            try:
                return _decode(token, key.private_key.public_key(), bot_id)
            except jwt.InvalidSignatureError:
                continue
        raise jwt.InvalidSignatureError("no signing key of the ring signed this token")

    def agent_token(self, bot_id: UUID, *, digest: str | None = None) -> str:
        """The agent token of ``bot_id``: the one matching ``digest`` if a key derives it.

        Without ``digest``, or when no key of the ring derives a token with that digest, the
        signing key's token (:func:`derive_agent_token`).
        """
        if digest is not None:
            for key in self._ring:
                token = derive_agent_token(key.private_key, bot_id)
                if agent_token_matches(token, digest):
                    return token
        return derive_agent_token(self.current.private_key, bot_id)


def _decode(token: str, public_key: Ed25519PublicKey, bot_id: UUID) -> dict[str, object]:
    claims: dict[str, object] = jwt.decode(
        token,
        public_key,
        algorithms=[STREAM_ALGORITHM],
        audience=STREAM_AUDIENCE,
        subject=str(bot_id),
        options={"require": list(STREAM_REQUIRED_CLAIMS)},
    )
    return claims


def verify_stream_token(token: str, public_key_pem: str, bot_id: UUID) -> dict[str, object]:
    """Check a stream token against one public key (PEM); return its claims.

    Raises:
        jwt.InvalidTokenError: Bad signature, wrong audience, expired, or ``sub`` is another bot.
    """
    public_key = serialization.load_pem_public_key(public_key_pem.encode("ascii"))
    if not isinstance(public_key, Ed25519PublicKey):
        raise jwt.InvalidKeyError("stream public key is not Ed25519")
    return _decode(token, public_key, bot_id)
