"""Stream tokens: short-lived EdDSA JWTs that open a bot's SSE stream.

Sources: docs/api.md 2.7, docs/architecture.md §6.

The control plane holds one Ed25519 key pair, generated once into ``{data_dir}/keys/`` and
shared by every replica that shares the data directory. A token carries ``sub`` = bot id,
``aud`` = ``"bot-stream"``, ``iat`` and ``exp``; every replica verifies it with the public key
when a client opens ``GET /api/v1/bots/{bot_id}/stream`` (:mod:`control_plane.bots.stream`).
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from agent.contracts.wire import STREAM_ALGORITHM, STREAM_AUDIENCE, STREAM_REQUIRED_CLAIMS
from control_plane.agent_hub.agent_tokens import AGENT_TOKEN_PREFIX

_KEY_FILE = "stream_ed25519.pem"


@dataclass(frozen=True, slots=True)
class StreamToken:
    """A minted stream token and the moment it stops working (UTC, whole seconds)."""

    token: str
    expires_at: datetime


class StreamTokenSigner:
    """Mints stream tokens with the control plane's Ed25519 private key."""

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._private_key = private_key
        public = private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        self.public_key_pem: str = public.decode("ascii")

    @classmethod
    def load_or_create(cls, data_dir: Path) -> StreamTokenSigner:
        """Read the key pair from ``data_dir/keys``, creating it on first use.

        Blocking file I/O: call through ``asyncio.to_thread`` from async code. Creation uses an
        exclusive create, so two processes starting at once end up with the same key.

        Raises:
            OSError: The key directory cannot be created or read.
            ValueError: The key file exists but is not a PEM Ed25519 private key.
        """
        key_dir = data_dir / "keys"
        key_dir.mkdir(parents=True, exist_ok=True)
        path = key_dir / _KEY_FILE
        if not path.exists():
            pem = Ed25519PrivateKey.generate().private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass  # another process won the race; its key is read below
            else:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(pem)
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError(f"{path} does not hold an Ed25519 private key")
        return cls(key)

    def agent_token(self, bot_id: UUID) -> str:
        """The agent token of ``bot_id``: ``mat_`` and 43 URL-safe characters (256 bits).

        Derived, not random: the SHA-256 of this key's Ed25519 signature (deterministic) over
        the bot id, so a relaunch after a crash hands the agent that may already run the token
        it holds, and nobody without the private key can compute it.
        """
        signature = self._private_key.sign(b"meetbot-agent-token:" + bot_id.bytes)
        digest = hashlib.sha256(signature).digest()
        return AGENT_TOKEN_PREFIX + base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")

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
        token = jwt.encode(claims, self._private_key, algorithm=STREAM_ALGORITHM)
        return StreamToken(token=token, expires_at=expires)


def verify_stream_token(token: str, public_key_pem: str, bot_id: UUID) -> dict[str, object]:
    """Check a stream token (the stream route does, when a client opens it); return its claims.

    Raises:
        jwt.InvalidTokenError: Bad signature, wrong audience, expired, or ``sub`` is another bot.
    """
    public_key = serialization.load_pem_public_key(public_key_pem.encode("ascii"))
    if not isinstance(public_key, Ed25519PublicKey):
        raise jwt.InvalidKeyError("stream public key is not Ed25519")
    claims: dict[str, object] = jwt.decode(
        token,
        public_key,
        algorithms=[STREAM_ALGORITHM],
        audience=STREAM_AUDIENCE,
        subject=str(bot_id),
        options={"require": list(STREAM_REQUIRED_CLAIMS)},
    )
    return claims
