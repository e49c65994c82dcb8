"""Stream tokens (EdDSA JWT claims, expiry, the key ring: rotation, retirement, a legacy key
file imported and sealed), agent tokens, and the local storage's keys and URL signatures."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import select

from agent.contracts.wire import bearer_token
from control_plane.agent_hub.agent_tokens import (
    agent_token_digest,
    agent_token_matches,
)
from control_plane.agent_hub.signing_keys import LEGACY_KEY_FILE, SigningKeyStore, key_id
from control_plane.agent_hub.stream_tokens import (
    StreamTokenSigner,
    derive_agent_token,
    verify_stream_token,
)
from control_plane.db.engine import create_database
from control_plane.db.models.signing_key import SigningKey
from control_plane.storage.base import InvalidArtifactKey, artifact_key, check_key
from control_plane.storage.local import LocalArtifactStorage, SignatureExpired, SignatureInvalid
from control_plane.token_cipher import TokenCipher
from tests.plugins.api_app import database_file_bytes

pytestmark = pytest.mark.unit


@pytest.fixture
async def keys(tmp_path: Path, sqlite_template: Path) -> AsyncIterator[SigningKeyStore]:
    """A key ring on a migrated SQLite copy, sealed with a fresh cipher."""
    path = tmp_path / "keys.db"
    shutil.copyfile(sqlite_template, path)
    database = create_database(f"sqlite+aiosqlite:///{path}")
    cipher = TokenCipher(Fernet.generate_key())
    yield SigningKeyStore(
        database, cipher, retention_seconds=3600, legacy_file=tmp_path / LEGACY_KEY_FILE
    )
    await database.dispose()


async def test_stream_token_claims_and_their_checks(keys: SigningKeyStore) -> None:
    signer = await StreamTokenSigner.open(keys)
    bot_id = uuid.uuid4()
    issued = datetime(2026, 11, 21, 9, 30, 15, 123456, tzinfo=UTC)
    minted = signer.mint(bot_id, 900, now=datetime.now(UTC))
    claims = await signer.verify(minted.token, bot_id)
    assert claims == verify_stream_token(minted.token, signer.public_key_pem, bot_id)
    assert claims["sub"] == str(bot_id)
    assert claims["aud"] == "bot-stream"
    assert int(str(claims["exp"])) - int(str(claims["iat"])) == 900
    header = jwt.get_unverified_header(minted.token)
    assert (header["alg"], header["kid"]) == ("EdDSA", signer.current.kid)

    expired = signer.mint(bot_id, 900, now=issued)
    assert expired.expires_at == datetime(2026, 11, 21, 9, 45, 15, tzinfo=UTC)
    with pytest.raises(jwt.ExpiredSignatureError):
        await signer.verify(expired.token, bot_id)
    with pytest.raises(jwt.InvalidTokenError):
        await signer.verify(minted.token, uuid.uuid4())
    with pytest.raises(jwt.InvalidTokenError):
        await signer.verify("not.a.token", bot_id)
    claims_now = {"sub": str(bot_id), "aud": "bot-stream", "iat": 1, "exp": 2**40}
    stranger = Ed25519PrivateKey.generate()
    for headers in ({"kid": signer.current.kid}, {"kid": "0123456789abcdef"}, None):
        forged = jwt.encode(claims_now, stranger, algorithm="EdDSA", headers=headers)
        with pytest.raises(jwt.InvalidSignatureError):
            await signer.verify(forged, bot_id)
    wrong_audience = jwt.encode(
        {**claims_now, "aud": "api"},
        signer.current.private_key,
        algorithm="EdDSA",
        headers={"kid": signer.current.kid},
    )
    with pytest.raises(jwt.InvalidAudienceError):
        await signer.verify(wrong_audience, bot_id)


async def test_rotation_signs_with_the_new_key_and_old_tokens_verify_until_retired(
    keys: SigningKeyStore,
) -> None:
    signer = await StreamTokenSigner.open(keys)
    bot_id = uuid.uuid4()
    old_key = signer.current
    old_token = signer.mint(bot_id, 900)
    old_agent_token = signer.agent_token(bot_id)

    new_key = await signer.rotate()
    assert new_key.generation == old_key.generation + 1 and new_key.kid != old_key.kid
    assert signer.current == new_key
    new_token = signer.mint(bot_id, 900)
    assert jwt.get_unverified_header(new_token.token)["kid"] == new_key.kid
    assert await signer.verify(new_token.token, bot_id)
    assert await signer.verify(old_token.token, bot_id)  # the old key still verifies
    # a new bot gets the new key's agent token; a relaunched one keeps its token
    assert signer.agent_token(bot_id) != old_agent_token
    assert signer.agent_token(bot_id, digest=agent_token_digest(old_agent_token)) == (
        old_agent_token
    )

    later = datetime.now(UTC) + timedelta(seconds=3601)  # past the retention
    with pytest.raises(jwt.InvalidSignatureError):
        await signer.verify(old_token.token, bot_id, now=later)
    await keys.rotate(now=later)  # the next rotation drops the retired key from the ring
    await signer.refresh()
    assert [key.kid for key in await keys.load()][1:] == [new_key.kid]


async def test_an_existing_key_file_is_imported_once_and_sealed(
    keys: SigningKeyStore, tmp_path: Path
) -> None:
    """A deployment from before the ring keeps its key: tokens already handed out still work."""
    legacy = Ed25519PrivateKey.generate()
    pem = legacy.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (tmp_path / "keys").mkdir()
    (tmp_path / LEGACY_KEY_FILE).write_bytes(pem)
    bot_id = uuid.uuid4()
    before = jwt.encode(  # a token as the key file's signer minted it: no kid
        {"sub": str(bot_id), "aud": "bot-stream", "iat": 1, "exp": 2**40},
        legacy,
        algorithm="EdDSA",
    )
    signer = await StreamTokenSigner.open(keys)
    again = await StreamTokenSigner.open(keys)
    assert signer.current.kid == again.current.kid == key_id(legacy)
    assert len(await keys.load()) == 1
    assert await signer.verify(before, bot_id)
    assert signer.agent_token(bot_id) == derive_agent_token(legacy, bot_id)
    raw = database_file_bytes(f"sqlite+aiosqlite:///{tmp_path / 'keys.db'}")
    async with keys._db.reads() as session:
        sealed = (await session.scalars(select(SigningKey.private_key_sealed))).one()
    assert sealed.encode() in raw  # the search reads where the row is
    assert pem not in raw and pem.split(b"\n")[1] not in raw  # sealed at rest


def test_agent_tokens_are_per_key_and_bot_and_stored_as_digests() -> None:
    key, bot_id = Ed25519PrivateKey.generate(), uuid.uuid4()
    token = derive_agent_token(key, bot_id)
    assert token.startswith("mat_") and len(token) == 4 + 43
    assert token != derive_agent_token(key, uuid.uuid4())
    assert token != derive_agent_token(Ed25519PrivateKey.generate(), bot_id)
    digest = agent_token_digest(token)
    assert len(digest) == 64 and token not in digest
    assert agent_token_matches(token, digest)
    assert not agent_token_matches(token + "x", digest)
    assert not agent_token_matches(token, None)
    assert bearer_token(f"Bearer {token}") == token
    assert bearer_token(f"bearer  {token} ") == token
    assert bearer_token(f"Basic {token}") is None
    assert bearer_token(None) is None


def test_artifact_keys_cannot_escape_the_storage_root() -> None:
    bot_id = uuid.uuid4()
    assert artifact_key(bot_id, "screenshots", "a.png") == f"bots/{bot_id}/screenshots/a.png"
    # "x\n": ``re.match`` with ``$`` took a trailing newline (issue 18).
    for bad in (
        "",
        "/etc/passwd",
        "bots/../../etc",
        "bots/./x",
        "bots//x",
        "bots/x y",
        "..x",
        "x\n",
    ):
        with pytest.raises(InvalidArtifactKey):
            check_key(bad)


async def test_signed_urls_bind_method_key_and_expiry(tmp_path: Path) -> None:
    storage = LocalArtifactStorage.open(tmp_path, "http://cp.example:8080")
    key = "bots/b/screenshots/a.png"
    url = (await storage.presign_get(key, 60)).url
    assert url.startswith("http://cp.example:8080/artifacts/bots/b/screenshots/a.png?")
    query = parse_qs(urlsplit(url).query)
    expires, signature = query["expires"][0], query["signature"][0]
    storage.verify("GET", key, expires, signature)
    with pytest.raises(SignatureInvalid):
        storage.verify("PUT", key, expires, signature)
    with pytest.raises(SignatureInvalid):
        storage.verify("GET", "bots/b/screenshots/b.png", expires, signature)
    with pytest.raises(SignatureInvalid):
        storage.verify("GET", key, str(int(expires) + 1), signature)
    with pytest.raises(SignatureInvalid):
        storage.verify("GET", key, None, signature)
    past = int((datetime.now(UTC) - timedelta(seconds=1)).timestamp())
    past_signature = storage._signature("GET", key, past)
    with pytest.raises(SignatureExpired):
        storage.verify("GET", key, str(past), past_signature)
    # Only ASCII digits are an expiry: '²' passes str.isdigit() but not int() (a 500 before),
    # and Arabic-Indic digits are int()'s other spelling of the same number (issue 18).
    arabic = "".join(chr(0x0660 + int(d)) for d in expires)
    for spelling in ("\u00b2", arabic):
        with pytest.raises(SignatureInvalid):
            storage.verify("GET", key, spelling, signature)
    # Another data directory has another secret: its URLs do not verify here.
    other = LocalArtifactStorage.open(tmp_path / "other", "http://cp.example:8080")
    with pytest.raises(SignatureInvalid):
        other.verify("GET", key, expires, signature)
