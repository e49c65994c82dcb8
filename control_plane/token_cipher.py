"""Encryption at rest for third-party credentials (Zoom OAuth tokens).

Tokens are sealed with Fernet (AES-128-CBC + HMAC-SHA256, from ``cryptography``), so a
database dump alone does not reveal them and a tampered value fails to open. The key comes from
the setting ``token_encryption_key`` (a urlsafe-base64 Fernet key, shared by every replica), or,
when that is empty, from ``{data_dir}/token-encryption.key``, created with mode 0600 on first use
(fine for one process; replicas on several machines must share the setting instead).
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from control_plane.settings import Settings

KEY_FILE_NAME = "token-encryption.key"


class TokenDecryptionError(Exception):
    """A stored token could not be opened: wrong key, or the value was altered."""


class TokenCipher:
    """Seals and opens short secrets with one Fernet key.

    Args:
        key: A Fernet key (32 bytes, urlsafe base64).

    Raises:
        ValueError: The key is not a valid Fernet key.
    """

    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    @classmethod
    def from_settings(cls, settings: Settings) -> TokenCipher:
        """The cipher for ``settings``; may create the key file, so call it off the event loop.

        Raises:
            ValueError: The configured key is not a valid Fernet key.
            OSError: The key file cannot be read or created.
        """
        if settings.token_encryption_key:
            return cls(settings.token_encryption_key.encode("ascii"))
        return cls(_load_or_create_key(settings.data_dir / KEY_FILE_NAME))

    def encrypt(self, plaintext: str) -> str:
        """Seal ``plaintext``; returns an ASCII token safe to store in a text column."""
        return self._fernet.encrypt(plaintext.encode("utf-8")).decode("ascii")

    def decrypt(self, token: str) -> str:
        """Open a token made by :meth:`encrypt`.

        Raises:
            TokenDecryptionError: Wrong key or altered token.
        """
        try:
            return self._fernet.decrypt(token.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError) as exc:
            raise TokenDecryptionError("stored token cannot be decrypted") from exc


def _load_or_create_key(path: Path) -> bytes:
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Fernet.generate_key()
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    try:
        # link() refuses to replace: when two processes start at once, exactly one key wins
        # and it is complete before anyone can read it.
        os.link(staging, path)
    except FileExistsError:
        key = path.read_bytes().strip()
    finally:
        staging.unlink()
    return key
