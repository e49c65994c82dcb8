"""Stream tokens (EdDSA JWT claims, expiry, key kept across restarts), agent tokens, and the
local storage's keys and URL signatures."""

from __future__ import annotations

import stat
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest

from agent.contracts.wire import bearer_token
from control_plane.agent_hub.agent_tokens import (
    agent_token_digest,
    agent_token_matches,
    mint_agent_token,
)
from control_plane.agent_hub.stream_tokens import StreamTokenSigner, verify_stream_token
from control_plane.storage.base import InvalidArtifactKey, artifact_key, check_key
from control_plane.storage.local import LocalArtifactStorage, SignatureExpired, SignatureInvalid

pytestmark = pytest.mark.unit


def test_stream_token_claims_and_their_checks(tmp_path: Path) -> None:
    signer = StreamTokenSigner.load_or_create(tmp_path)
    bot_id = uuid.uuid4()
    issued = datetime(2026, 11, 21, 9, 30, 15, 123456, tzinfo=UTC)
    minted = signer.mint(bot_id, 900, now=datetime.now(UTC))
    claims = verify_stream_token(minted.token, signer.public_key_pem, bot_id)
    assert claims["sub"] == str(bot_id)
    assert claims["aud"] == "bot-stream"
    assert int(str(claims["exp"])) - int(str(claims["iat"])) == 900
    assert jwt.get_unverified_header(minted.token)["alg"] == "EdDSA"

    expired = signer.mint(bot_id, 900, now=issued)
    assert expired.expires_at == datetime(2026, 11, 21, 9, 45, 15, tzinfo=UTC)
    with pytest.raises(jwt.ExpiredSignatureError):
        verify_stream_token(expired.token, signer.public_key_pem, bot_id)
    with pytest.raises(jwt.InvalidTokenError):
        verify_stream_token(minted.token, signer.public_key_pem, uuid.uuid4())
    other_key = StreamTokenSigner.load_or_create(tmp_path / "elsewhere")
    with pytest.raises(jwt.InvalidSignatureError):
        verify_stream_token(minted.token, other_key.public_key_pem, bot_id)
    wrong_audience = jwt.encode(
        {"sub": str(bot_id), "aud": "api", "exp": int(minted.expires_at.timestamp())},
        signer._private_key,
        algorithm="EdDSA",
    )
    with pytest.raises(jwt.InvalidAudienceError):
        verify_stream_token(wrong_audience, signer.public_key_pem, bot_id)


def test_the_stream_key_is_created_once_privately_and_kept(tmp_path: Path) -> None:
    first = StreamTokenSigner.load_or_create(tmp_path)
    again = StreamTokenSigner.load_or_create(tmp_path)
    assert first.public_key_pem == again.public_key_pem
    key_file = tmp_path / "keys" / "stream_ed25519.pem"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_agent_tokens_are_random_and_stored_as_digests() -> None:
    token = mint_agent_token()
    assert token.startswith("mat_") and len(token) == 4 + 43
    assert token != mint_agent_token()
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
