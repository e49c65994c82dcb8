"""A local webhook receiver that checks every delivery's Standard Webhooks signature.

The demo registers ``{url}`` as a workspace webhook endpoint (docs/api.md 2.8), fetches the
endpoint's ``whsec_`` secret and hands it to :meth:`WebhookReceiver.set_secret`. Deliveries
that arrive before the secret is known are kept and checked as soon as it is. A delivery is
counted once per ``webhook-id`` (delivery is at least once, so retries repeat the id).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from meetbot_common.local_server import LocalServer

HOOK_PATH = "/hooks/meetbot"


@dataclass(slots=True)
class Delivery:
    """One webhook request as received.

    Attributes:
        webhook_id: The ``webhook-id`` header.
        received_at: UNIX epoch seconds of arrival.
        headers: Request headers (lower-case names).
        body: Raw request body.
        verified: True when the signature matched, False when it did not, None while the
            secret is unknown.
        payload: The parsed body once verified (``{type, timestamp, data}``).
    """

    webhook_id: str
    received_at: float
    headers: dict[str, str]
    body: bytes
    verified: bool | None = None
    payload: dict[str, Any] = field(default_factory=dict)


class WebhookReceiver(LocalServer):
    """An HTTP server on loopback that records and verifies webhook deliveries.

    An async context manager (:class:`~meetbot_common.local_server.LocalServer`).

    Args:
        host: Listen address (IPv4).
    """

    def __init__(self, host: str = "127.0.0.1") -> None:
        super().__init__()
        self._host = host
        self._verifier: Webhook | None = None
        self.port = 0
        self.deliveries: dict[str, Delivery] = {}
        self.rejected = 0

    @property
    def url(self) -> str:
        """The endpoint URL to register, e.g. ``http://127.0.0.1:40111/hooks/meetbot``."""
        return f"http://{self._host}:{self.port}{HOOK_PATH}"

    async def start(self) -> None:
        """Listen on a free port."""
        app = web.Application()
        app.router.add_post(HOOK_PATH, self._receive)
        await self._serve(app)
        self.port = await self._listen(self._host)

    def set_secret(self, secret: str) -> None:
        """Use the endpoint's ``whsec_…`` secret; checks deliveries that were waiting for it."""
        self._verifier = Webhook(secret)
        for delivery in self.deliveries.values():
            if delivery.verified is None:
                self._verify(delivery)

    def _verify(self, delivery: Delivery) -> None:
        assert self._verifier is not None  # noqa: S101 -- callers check; narrows the type
        try:
            payload = self._verifier.verify(delivery.body, delivery.headers)
        except (WebhookVerificationError, ValueError):
            delivery.verified = False
            return
        delivery.verified = True
        delivery.payload = payload if isinstance(payload, dict) else {}

    async def _receive(self, request: web.Request) -> web.Response:
        body = await request.read()
        headers = {name.lower(): value for name, value in request.headers.items()}
        webhook_id = headers.get("webhook-id", "")
        if not webhook_id:
            self.rejected += 1
            return web.Response(status=400, text="webhook-id missing")
        delivery = self.deliveries.get(webhook_id)
        if delivery is None:
            delivery = Delivery(webhook_id, time.time(), headers, body)
            self.deliveries[webhook_id] = delivery
        if self._verifier is not None:
            self._verify(delivery)
        if delivery.verified is False:
            self.rejected += 1
            return web.Response(status=401, text="signature mismatch")
        return web.Response(status=204)

    def verified(self) -> list[Delivery]:
        """Deliveries whose signature matched, in arrival order."""
        found = [d for d in self.deliveries.values() if d.verified]
        return sorted(found, key=lambda d: d.received_at)

    def status_changes(self, bot_id: str) -> list[dict[str, Any]]:
        """``data`` of the verified ``bot.status_changed`` deliveries about ``bot_id``."""
        changes: list[dict[str, Any]] = []
        for delivery in self.verified():
            data = delivery.payload.get("data") or {}
            if delivery.payload.get("type") == "bot.status_changed" and (
                str(data.get("bot_id")) == bot_id
            ):
                changes.append(data)
        return changes

    def counts_by_type(self) -> dict[str, int]:
        """How many verified deliveries arrived per event type."""
        counts: dict[str, int] = {}
        for delivery in self.verified():
            kind = str(delivery.payload.get("type"))
            counts[kind] = counts.get(kind, 0) + 1
        return counts
