"""Standard Webhooks signing with per-endpoint ``whsec_`` secrets.

Signatures come from the ``standardwebhooks`` package (the spec's reference library), so a
receiver verifying with the same package, or with Svix's, accepts them. Headers (docs/api.md 2.8):
``webhook-id`` (the message id, fixed across retries), ``webhook-timestamp`` (Unix seconds of
this attempt) and ``webhook-signature`` (``v1,<base64 HMAC-SHA256 of id.timestamp.body>``).
"""

from __future__ import annotations

import base64
import secrets
from datetime import UTC, datetime

from standardwebhooks.webhooks import Webhook

SECRET_PREFIX = "whsec_"  # noqa: S105 — the spec's prefix of every secret, not a secret
_SECRET_BYTES = 24  # Svix generates 24-byte secrets; the spec asks for 24 to 64.


def new_secret() -> str:
    """A fresh endpoint secret: ``whsec_`` + base64 of 24 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(_SECRET_BYTES)).decode("ascii")


def signed_headers(secret: str, message_id: str, body: str, at: datetime) -> dict[str, str]:
    """Headers that sign ``body`` for one delivery attempt.

    Args:
        secret: The endpoint's ``whsec_…`` secret.
        message_id: The message id (``msg_…``), the same for every attempt of the message.
        body: The exact request body that will be sent (UTF-8 JSON text).
        at: Signing time; it becomes ``webhook-timestamp`` (whole seconds).

    Returns:
        ``webhook-id``, ``webhook-timestamp``, ``webhook-signature`` and ``content-type``.
    """
    at = at.astimezone(UTC)
    signature = Webhook(secret).sign(msg_id=message_id, timestamp=at, data=body)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
    }
