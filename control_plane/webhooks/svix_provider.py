"""The ``svix`` webhook provider: endpoints, delivery and attempts live in Svix.

Facts used (research/findings.md "Infrastructure facts"; the ``svix`` 2.x Python SDK):

* one Svix *application* per workspace, addressed by ``uid`` = the workspace UUID and created
  on first use (``application.get_or_create``, or the ``application`` field of a message);
* our ``filter_types`` are Svix's ``eventTypes`` (the renamed ``filterTypes``); the event
  catalogue is registered with ``event_type.upsert`` at start-up, so Svix knows every type;
* Svix's ``MessageAttempt`` status integers are ours (0 success, 1 pending, 2 failed,
  3 sending); its extra 4 (canceled) is reported as 2;
* endpoints are changed with ``endpoint.patch`` (2.x has no ``update``).

The outbox is relayed with ``message.create``, the outbox row id as ``eventId`` and
idempotency key, so a relay repeated after a crash does not create a second message.

Error mapping: no API key → 503 ``webhook_provider_not_configured``; Svix 404 → 404
``webhook_endpoint_not_found``; Svix 422 → our 422 (``unknown_event_type`` when it is about
event types); any other Svix answer or a transport failure → 502 ``webhook_provider_error``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from svix.api import (
    ApplicationIn,
    EndpointIn,
    EndpointListOptions,
    EndpointOut,
    EventTypeUpsertIn,
    MessageAttemptListByEndpointOptions,
    MessageCreateOptions,
    MessageIn,
    SvixAsync,
    SvixOptions,
)
from svix.api import (
    EndpointPatch as SvixEndpointPatch,
)
from svix.exceptions import HttpError, HTTPValidationError

from control_plane.background import BackgroundLoop
from control_plane.enums import AttemptStatus
from control_plane.errors import DomainError, ErrorItem, Validation
from control_plane.webhooks.errors import (
    WebhookEndpointNotFound,
    WebhookProviderError,
    WebhookProviderNotConfigured,
)
from control_plane.webhooks.events import CATALOGUE, openapi_webhooks
from control_plane.webhooks.metrics import WebhookMetrics
from control_plane.webhooks.outbox import claim_message, pending_messages
from control_plane.webhooks.schemas import (
    DeliveryAttempt,
    Endpoint,
    EndpointCreate,
    EndpointPatch,
    EndpointSecret,
)

logger = logging.getLogger(__name__)

_RELAY_BATCH = 100
_MAX_BACKOFF_SECONDS = 30.0


def _endpoint(out: EndpointOut) -> Endpoint:
    return Endpoint(
        id=out.id,
        url=out.url,
        description=out.description,
        filter_types=list(out.event_types or []),
        disabled=bool(out.disabled),
        created_at=out.created_at,
        updated_at=out.updated_at,
    )


def _app_uid(workspace_id: uuid.UUID) -> str:
    return str(workspace_id)


def _app_in(workspace_id: uuid.UUID) -> ApplicationIn:
    return ApplicationIn(name=f"meetbot workspace {workspace_id}", uid=_app_uid(workspace_id))


def _domain_error(error: Exception) -> DomainError | None:
    """The API error for a Svix SDK failure, or None when ``error`` is not one."""
    if isinstance(error, HTTPValidationError):
        items = [
            ErrorItem(loc=[str(part) for part in item.loc], msg=item.msg, type=item.type)
            for item in error.detail
        ]
        about_types = any(
            "eventTypes" in item.loc or "filterTypes" in item.loc for item in error.detail
        )
        return Validation(
            "the webhook provider rejected the input",
            status=422,
            code="unknown_event_type" if about_types else "validation_error",
            errors=items,
        )
    if isinstance(error, HttpError):
        if error.status_code == 404:
            return WebhookEndpointNotFound()
        logger.warning(
            "svix API error", extra={"status_code": error.status_code, "svix_code": error.code}
        )
        return WebhookProviderError(f"the webhook provider answered HTTP {error.status_code}")
    if isinstance(error, httpx.HTTPError | ValueError):
        # ValueError: an answer the SDK's models cannot parse.
        logger.warning("svix API unreachable", extra={"error": type(error).__name__})
        return WebhookProviderError("the webhook provider could not be reached")
    return None


@asynccontextmanager
async def _mapped_errors() -> AsyncIterator[None]:
    """Turn Svix SDK failures into the API's domain errors."""
    try:
        yield
    except (HTTPValidationError, HttpError, httpx.HTTPError, ValueError) as error:
        mapped = _domain_error(error)
        if mapped is None:
            raise
        raise mapped from None


class SvixProvider:
    """:class:`~control_plane.webhooks.provider.WebhookProvider` on the Svix API.

    Args:
        sessionmaker: Sessions on the control plane's database (the outbox).
        api_key: Svix API key; empty means not configured (every call answers 503).
        server_url: Svix server URL; empty means Svix's default for the key.
        poll_interval: Seconds between looks at the outbox when idle.
        request_retries: The SDK's retry delays for 5xx answers (seconds, at most 5).
        metrics: Prometheus collectors to update (none when omitted).
    """

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        *,
        api_key: str,
        server_url: str = "",
        poll_interval: float = 0.25,
        request_retries: Sequence[float] = (0.05, 0.1, 0.2),
        metrics: WebhookMetrics | None = None,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._metrics = metrics
        self._poll_interval = poll_interval
        self._client: SvixAsync | None = None
        self._backoff = poll_interval
        self._registered = False
        self._loop = BackgroundLoop("svix-relay", self.step, interval=poll_interval)
        if api_key:
            options = SvixOptions(
                server_url=server_url or None, retry_schedule=list(request_retries), timeout=15.0
            )
            self._client = SvixAsync(api_key, options)

    def _svix(self) -> SvixAsync:
        if self._client is None:
            raise WebhookProviderNotConfigured()
        return self._client

    async def create_endpoint(self, workspace_id: uuid.UUID, spec: EndpointCreate) -> Endpoint:
        """Create the endpoint in the workspace's Svix application (made on first use)."""
        svix = self._svix()
        async with _mapped_errors():
            await svix.application.get_or_create(_app_in(workspace_id))
            out = await svix.endpoint.create(
                _app_uid(workspace_id),
                EndpointIn(
                    url=spec.url,
                    description=spec.description,
                    event_types=list(spec.filter_types) if spec.filter_types else None,
                    metadata={"workspace_id": str(workspace_id)},
                ),
            )
        return _endpoint(out)

    async def list_endpoints(self, workspace_id: uuid.UUID) -> list[Endpoint]:
        """Every endpoint of the workspace's application, newest first."""
        svix = self._svix()
        endpoints: list[Endpoint] = []
        iterator: str | None = None
        try:
            async with _mapped_errors():
                while True:
                    page = await svix.endpoint.list(
                        _app_uid(workspace_id), EndpointListOptions(limit=250, iterator=iterator)
                    )
                    endpoints.extend(_endpoint(out) for out in page.data)
                    if page.done or not page.iterator:
                        break
                    iterator = page.iterator
        except WebhookEndpointNotFound:
            return []  # no application yet: no endpoints
        endpoints.sort(key=lambda endpoint: (endpoint.created_at, endpoint.id), reverse=True)
        return endpoints

    async def get_endpoint(self, workspace_id: uuid.UUID, endpoint_id: str) -> Endpoint:
        """One endpoint of the workspace's application."""
        svix = self._svix()
        async with _mapped_errors():
            return _endpoint(await svix.endpoint.get(_app_uid(workspace_id), endpoint_id))

    async def update_endpoint(
        self, workspace_id: uuid.UUID, endpoint_id: str, patch: EndpointPatch
    ) -> Endpoint:
        """``endpoint.patch`` with the fields set in ``patch``."""
        svix = self._svix()
        fields = patch.model_fields_set
        changes: dict[str, object] = {}
        if "url" in fields and patch.url is not None:
            changes["url"] = patch.url
        if "description" in fields:
            changes["description"] = patch.description or ""
        if "filter_types" in fields:
            # Svix reads null as "every event type", as our empty list means.
            changes["event_types"] = list(patch.filter_types) if patch.filter_types else None
        if "disabled" in fields and patch.disabled is not None:
            changes["disabled"] = patch.disabled
        async with _mapped_errors():
            out = await svix.endpoint.patch(
                _app_uid(workspace_id), endpoint_id, SvixEndpointPatch.model_validate(changes)
            )
        return _endpoint(out)

    async def delete_endpoint(self, workspace_id: uuid.UUID, endpoint_id: str) -> None:
        """Delete the endpoint in Svix."""
        svix = self._svix()
        async with _mapped_errors():
            await svix.endpoint.delete(_app_uid(workspace_id), endpoint_id)

    async def get_secret(self, workspace_id: uuid.UUID, endpoint_id: str) -> EndpointSecret:
        """The endpoint's ``whsec_`` secret as Svix keeps it."""
        svix = self._svix()
        async with _mapped_errors():
            out = await svix.endpoint.get_secret(_app_uid(workspace_id), endpoint_id)
        return EndpointSecret(key=out.key)

    async def list_attempts(
        self, workspace_id: uuid.UUID, endpoint_id: str, limit: int
    ) -> list[DeliveryAttempt]:
        """Svix's attempts to the endpoint, newest first."""
        svix = self._svix()
        async with _mapped_errors():
            await svix.endpoint.get(_app_uid(workspace_id), endpoint_id)
            page = await svix.message_attempt.list_by_endpoint(
                _app_uid(workspace_id),
                endpoint_id,
                MessageAttemptListByEndpointOptions(limit=limit),
            )
        attempts = [
            DeliveryAttempt(
                id=out.id,
                status=int(out.status) if int(out.status) <= 3 else AttemptStatus.FAILED,
                response_status_code=out.response_status_code,
                timestamp=out.timestamp,
                msg_id=out.msg_id,
                response_duration_ms=out.response_duration_ms,
            )
            for out in page.data
        ]
        attempts.sort(key=lambda attempt: (attempt.timestamp, attempt.id), reverse=True)
        return attempts

    async def register_event_types(self) -> None:
        """Create or update every catalogued event type in Svix, with its JSON schema.

        Raises:
            WebhookProviderError: Svix failed.
            WebhookProviderNotConfigured: No API key.
        """
        svix = self._svix()
        _, schemas = openapi_webhooks()
        async with _mapped_errors():
            for event, (model, description) in CATALOGUE.items():
                data_schema = schemas[model.__name__ + "Data"]
                schema = {
                    "type": "object",
                    "required": ["type", "timestamp", "data"],
                    "properties": {
                        "type": {"type": "string", "const": event.value},
                        "timestamp": {"type": "string", "format": "date-time"},
                        "data": data_schema,
                    },
                }
                await svix.event_type.upsert(
                    event.value, EventTypeUpsertIn(description=description, schemas={"1": schema})
                )

    async def relay_once(self) -> int:
        """Send undispatched outbox rows to Svix; returns how many were sent.

        Raises:
            WebhookProviderError: Svix failed (the rows stay in the outbox).
        """
        svix = self._svix()
        async with self._sessionmaker() as session:
            batch = [
                (row.id, row.workspace_id, row.event_type, row.body)
                for row in await pending_messages(session, _RELAY_BATCH)
            ]
        sent = 0
        for message_id, workspace_id, event_type, body in batch:
            try:
                await svix.message.create(
                    _app_uid(workspace_id),
                    MessageIn(
                        event_type=event_type,
                        event_id=message_id,
                        payload=json.loads(body),
                        application=_app_in(workspace_id),
                    ),
                    MessageCreateOptions(idempotency_key=message_id),
                )
            except (HTTPValidationError, HttpError, httpx.HTTPError) as error:
                # 409: Svix already has this eventId (an earlier relay crashed before marking).
                if not (isinstance(error, HttpError) and error.status_code == 409):
                    raise _domain_error(error) or error from None
            async with self._sessionmaker() as session, session.begin():
                await claim_message(session, message_id, datetime.now(UTC))
            sent += 1
            if self._metrics is not None:
                self._metrics.relayed.inc()
        return sent

    async def run(self) -> None:
        """Register event types, then relay the outbox until :meth:`stop` (backoff on errors)."""
        if self._client is None:
            logger.warning("svix webhook provider has no API key; events stay in the outbox")
            return
        try:
            await self._loop.run()
        finally:
            await self.close()

    async def step(self) -> float:
        """One pass: register the event types (once), relay the outbox.

        Returns:
            Seconds to wait before the next pass: 0 after relaying something, the poll
            interval when idle, a doubling backoff (at most 30 s) after a failure.
        """
        backoff = self._backoff
        try:
            if not self._registered:
                await self.register_event_types()
                self._registered = True
            sent = await self.relay_once()
        except (WebhookProviderError, Validation):
            logger.warning("svix relay pass failed", extra={"retry_in_s": backoff})
        except asyncio.CancelledError:
            raise
        except Exception:
            # The database may be briefly away; relaying resumes when it is back.
            logger.exception("svix relay pass failed", extra={"retry_in_s": backoff})
        else:
            self._backoff = self._poll_interval
            return 0.0 if sent else self._poll_interval
        self._backoff = min(backoff * 2, _MAX_BACKOFF_SECONDS)
        return self._backoff

    def wake(self) -> None:
        """Relay now (called after an event is committed in this process)."""
        self._loop.wake()

    def stop(self) -> None:
        """End :meth:`run` after the message it is relaying (the rest stays in the outbox)."""
        self._loop.request_stop()

    async def close(self) -> None:
        """Close the SDK's HTTP connections."""
        if self._client is not None:
            # The SDK offers no close(); its httpx client is the one resource it holds.
            await self._client._httpx_client.aclose()
