"""The embedded webhook provider: endpoints and attempts in our database, our own delivery.

Endpoint ids are ``ep_…`` and secrets ``whsec_…`` (:mod:`control_plane.webhooks.ids`,
:mod:`control_plane.webhooks.signing`); delivery is :class:`DeliveryWorker`'s job.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from control_plane.db.models.webhook import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from control_plane.token_cipher import TokenCipher
from control_plane.webhooks.delivery import DeliveryWorker
from control_plane.webhooks.errors import WebhookEndpointNotFound
from control_plane.webhooks.ids import new_id
from control_plane.webhooks.metrics import WebhookMetrics
from control_plane.webhooks.schemas import (
    DeliveryAttempt,
    Endpoint,
    EndpointCreate,
    EndpointPatch,
    EndpointSecret,
)
from control_plane.webhooks.sealed_secrets import open_secret, seal_secret
from control_plane.webhooks.signing import new_secret
from meetbot_common.ssrf import TargetPolicy


def _endpoint(row: WebhookEndpoint) -> Endpoint:
    return Endpoint(
        id=row.id,
        url=row.url,
        description=row.description,
        filter_types=list(row.filter_types),
        disabled=row.disabled,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


class EmbeddedProvider:
    """:class:`~control_plane.webhooks.provider.WebhookProvider` on our own database.

    Args:
        sessionmaker: Sessions on the control plane's database.
        retry_schedule: Delays in seconds before each retry, from the failure before it.
        policy: SSRF policy of delivery.
        cipher: Seals endpoint secrets at rest (:mod:`control_plane.webhooks.sealed_secrets`).
        poll_interval: Seconds between the worker's looks at the database when idle.
        metrics: Prometheus collectors to update (none when omitted).
    """

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        *,
        retry_schedule: Sequence[float],
        policy: TargetPolicy,
        cipher: TokenCipher,
        poll_interval: float = 0.25,
        metrics: WebhookMetrics | None = None,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._cipher = cipher
        self.worker = DeliveryWorker(
            sessionmaker,
            retry_schedule=retry_schedule,
            policy=policy,
            cipher=cipher,
            poll_interval=poll_interval,
            metrics=metrics,
        )

    async def _load(
        self, session: AsyncSession, workspace_id: uuid.UUID, endpoint_id: str
    ) -> WebhookEndpoint:
        row = await session.get(WebhookEndpoint, endpoint_id)
        if row is None or row.workspace_id != workspace_id:
            raise WebhookEndpointNotFound()
        return row

    async def create_endpoint(self, workspace_id: uuid.UUID, spec: EndpointCreate) -> Endpoint:
        """Store a new endpoint (``ep_…``) with a fresh secret."""
        async with self._sessionmaker() as session, session.begin():
            row = WebhookEndpoint(
                id=new_id("ep"),
                workspace_id=workspace_id,
                url=spec.url,
                description=spec.description,
                filter_types=list(spec.filter_types or []),
                secret=seal_secret(self._cipher, new_secret()),
                disabled=False,
            )
            session.add(row)
            await session.flush()
            await session.refresh(row)
            return _endpoint(row)

    async def list_endpoints(self, workspace_id: uuid.UUID) -> list[Endpoint]:
        """The workspace's endpoints, newest first."""
        async with self._sessionmaker() as session:
            rows = await session.scalars(
                select(WebhookEndpoint)
                .where(WebhookEndpoint.workspace_id == workspace_id)
                .order_by(WebhookEndpoint.created_at.desc(), WebhookEndpoint.id.desc())
            )
            return [_endpoint(row) for row in rows]

    async def get_endpoint(self, workspace_id: uuid.UUID, endpoint_id: str) -> Endpoint:
        """One endpoint of the workspace."""
        async with self._sessionmaker() as session:
            return _endpoint(await self._load(session, workspace_id, endpoint_id))

    async def update_endpoint(
        self, workspace_id: uuid.UUID, endpoint_id: str, patch: EndpointPatch
    ) -> Endpoint:
        """Apply the fields set in ``patch``; a changed URL gets a fresh failure history."""
        async with self._sessionmaker() as session, session.begin():
            row = await self._load(session, workspace_id, endpoint_id)
            fields = patch.model_fields_set
            if "url" in fields and patch.url is not None and patch.url != row.url:
                row.url = patch.url
                row.failing_since = None
            if "description" in fields:
                row.description = patch.description or ""
            if "filter_types" in fields:
                row.filter_types = list(patch.filter_types or [])
            if "disabled" in fields and patch.disabled is not None:
                row.disabled = patch.disabled
                if not patch.disabled:
                    row.failing_since = None
            await session.flush()
            await session.refresh(row)
            return _endpoint(row)

    async def delete_endpoint(self, workspace_id: uuid.UUID, endpoint_id: str) -> None:
        """Delete the endpoint with its deliveries and attempts."""
        async with self._sessionmaker() as session, session.begin():
            row = await self._load(session, workspace_id, endpoint_id)
            # Explicit, because SQLite enforces ON DELETE CASCADE only with foreign_keys=ON.
            await session.execute(
                delete(WebhookAttempt).where(WebhookAttempt.endpoint_id == endpoint_id)
            )
            await session.execute(
                delete(WebhookDelivery).where(WebhookDelivery.endpoint_id == endpoint_id)
            )
            await session.delete(row)

    async def get_secret(self, workspace_id: uuid.UUID, endpoint_id: str) -> EndpointSecret:
        """The endpoint's ``whsec_`` secret (stored sealed).

        Raises:
            WebhookEndpointNotFound: No such endpoint in the workspace.
            TokenDecryptionError: Sealed with another token encryption key.
        """
        async with self._sessionmaker() as session:
            stored = (await self._load(session, workspace_id, endpoint_id)).secret
        return EndpointSecret(key=open_secret(self._cipher, stored))

    async def list_attempts(
        self, workspace_id: uuid.UUID, endpoint_id: str, limit: int
    ) -> list[DeliveryAttempt]:
        """Attempts to the endpoint, newest first."""
        async with self._sessionmaker() as session:
            await self._load(session, workspace_id, endpoint_id)
            rows = await session.scalars(
                select(WebhookAttempt)
                .where(WebhookAttempt.endpoint_id == endpoint_id)
                .order_by(WebhookAttempt.timestamp.desc(), WebhookAttempt.id.desc())
                .limit(limit)
            )
            return [
                DeliveryAttempt(
                    id=row.id,
                    status=row.status,
                    response_status_code=row.response_status_code,
                    timestamp=row.timestamp,
                    msg_id=row.message_id,
                    response_duration_ms=row.response_duration_ms,
                )
                for row in rows
            ]

    async def run(self) -> None:
        """Run the delivery worker until :meth:`stop` or cancellation."""
        await self.worker.run()

    def wake(self) -> None:
        """Relay and deliver now (called after an event is committed in this process)."""
        self.worker.wake()

    def stop(self) -> None:
        """Let attempts in flight finish and be stored, then end :meth:`run`."""
        self.worker.stop()
