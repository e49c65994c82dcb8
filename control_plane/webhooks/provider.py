"""The ``WebhookProvider`` seam: who stores endpoints and delivers messages.

The seam is docs/architecture.md §4.

Implementations: :class:`~control_plane.webhooks.embedded.EmbeddedProvider` (default: our
database and delivery worker) and :class:`~control_plane.webhooks.svix_provider.SvixProvider`
(the Svix API). Both relay the same outbox (:mod:`control_plane.webhooks.outbox`); the route
handlers validate input (:mod:`control_plane.webhooks.validation`) before calling them.
"""

from __future__ import annotations

import uuid
from typing import Protocol

from control_plane.webhooks.schemas import (
    DeliveryAttempt,
    Endpoint,
    EndpointCreate,
    EndpointPatch,
    EndpointSecret,
)


class WebhookProvider(Protocol):
    """Endpoint storage and message delivery for workspaces.

    Every method scoped to an endpoint raises
    :class:`~control_plane.webhooks.errors.WebhookEndpointNotFound` for an id of another
    workspace. Provider failures raise ``WebhookProviderError`` (502) and a missing
    configuration ``WebhookProviderNotConfigured`` (503).
    """

    async def create_endpoint(self, workspace_id: uuid.UUID, spec: EndpointCreate) -> Endpoint:
        """Create an endpoint with a fresh ``whsec_`` secret (input already validated)."""
        ...

    async def list_endpoints(self, workspace_id: uuid.UUID) -> list[Endpoint]:
        """The workspace's endpoints, newest first."""
        ...

    async def get_endpoint(self, workspace_id: uuid.UUID, endpoint_id: str) -> Endpoint:
        """One endpoint."""
        ...

    async def update_endpoint(
        self, workspace_id: uuid.UUID, endpoint_id: str, patch: EndpointPatch
    ) -> Endpoint:
        """Change the fields set in ``patch`` (input already validated)."""
        ...

    async def delete_endpoint(self, workspace_id: uuid.UUID, endpoint_id: str) -> None:
        """Delete an endpoint; its pending deliveries stop."""
        ...

    async def get_secret(self, workspace_id: uuid.UUID, endpoint_id: str) -> EndpointSecret:
        """The endpoint's signing secret."""
        ...

    async def list_attempts(
        self, workspace_id: uuid.UUID, endpoint_id: str, limit: int
    ) -> list[DeliveryAttempt]:
        """Delivery attempts to the endpoint, newest first, at most ``limit``."""
        ...

    async def run(self) -> None:
        """Background work (relaying the outbox, delivering) until :meth:`stop` or cancelled."""
        ...

    def wake(self) -> None:
        """New events were committed: look at the outbox now rather than at the next poll."""
        ...

    def stop(self) -> None:
        """Ask :meth:`run` to finish what it has in hand and return."""
        ...
