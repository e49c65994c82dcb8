"""The token cipher: round trip, tamper detection, and the key file made once and reused."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from control_plane.settings import Settings
from control_plane.token_cipher import KEY_FILE_NAME, TokenCipher, TokenDecryptionError

pytestmark = pytest.mark.unit


def test_sealed_token_opens_and_hides_the_plaintext() -> None:
    cipher = TokenCipher(Fernet.generate_key())
    sealed = cipher.encrypt("zoom-access-token")
    assert "zoom-access-token" not in sealed
    assert cipher.decrypt(sealed) == "zoom-access-token"


def test_altered_token_or_other_key_is_refused() -> None:
    cipher = TokenCipher(Fernet.generate_key())
    sealed = cipher.encrypt("secret")
    altered = sealed[:-4] + ("AAAA" if not sealed.endswith("AAAA") else "BBBB")
    with pytest.raises(TokenDecryptionError):
        cipher.decrypt(altered)
    with pytest.raises(TokenDecryptionError):
        TokenCipher(Fernet.generate_key()).decrypt(sealed)


def test_key_file_is_created_private_once_and_reused(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    first = TokenCipher.from_settings(settings)
    key_file = tmp_path / "data" / KEY_FILE_NAME
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert list(key_file.parent.iterdir()) == [key_file]
    second = TokenCipher.from_settings(settings)
    assert second.decrypt(first.encrypt("x")) == "x"


def test_configured_key_wins_over_the_file(tmp_path: Path) -> None:
    key = Fernet.generate_key()
    settings = Settings(data_dir=tmp_path, token_encryption_key=key.decode())
    assert TokenCipher(key).decrypt(TokenCipher.from_settings(settings).encrypt("y")) == "y"
    assert not (tmp_path / KEY_FILE_NAME).exists()
