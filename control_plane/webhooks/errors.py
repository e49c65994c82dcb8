"""Errors of the webhook package, specialising the control plane's domain errors.

The tree (bases from :mod:`control_plane.errors`)::

    NotFound (404)
    └── WebhookEndpointNotFound ........ 404 webhook_endpoint_not_found (also foreign workspaces)
    Validation (422)
    ├── UnknownEventType ............... 422 unknown_event_type (a filter_types entry)
    └── WebhookUrlNotAllowed ........... 422 webhook_url_not_allowed (scheme or address refused)
    ProviderError (502)
    └── WebhookProviderError ........... 502 webhook_provider_error (Svix API failed)
    NotConfigured (503)
    └── WebhookProviderNotConfigured ... 503 webhook_provider_not_configured (+ Retry-After)
"""

from __future__ import annotations

from collections.abc import Sequence

from control_plane.errors import ErrorItem, NotConfigured, NotFound, ProviderError, Validation

RETRY_AFTER_SECONDS = 300


class WebhookEndpointNotFound(NotFound):
    """404: no such endpoint in the caller's workspace."""

    default_code = "webhook_endpoint_not_found"
    title = "Webhook endpoint not found"

    def __init__(self, detail: str = "webhook endpoint not found") -> None:
        super().__init__(detail)


class UnknownEventType(Validation):
    """422: ``filter_types`` names event types outside the catalogue.

    Args:
        names: The unknown names.
        field: Where they came from, for the ``loc`` of each item.
        positions: Index of each unknown name in the request's list.
    """

    default_code = "unknown_event_type"
    title = "Unknown event type"

    def __init__(
        self, names: Sequence[str], *, field: str = "filter_types", positions: Sequence[int] = ()
    ) -> None:
        indices = list(positions) or list(range(len(names)))
        super().__init__(
            f"unknown event type(s): {', '.join(names)}",
            status=422,
            errors=[
                ErrorItem(
                    loc=["body", field, index],
                    msg=f"unknown event type {name!r}",
                    type="unknown_event_type",
                )
                for name, index in zip(names, indices, strict=False)
            ],
        )


class WebhookUrlNotAllowed(Validation):
    """422: the endpoint URL's scheme or address is refused by the SSRF policy."""

    default_code = "webhook_url_not_allowed"
    title = "Webhook URL not allowed"

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"webhook URL not allowed: {reason}",
            status=422,
            errors=[ErrorItem(loc=["body", "url"], msg=reason, type="webhook_url_not_allowed")],
        )


class WebhookProviderError(ProviderError):
    """502: the delivery provider's API failed or answered something unusable."""

    default_code = "webhook_provider_error"
    title = "Webhook provider error"


class WebhookProviderNotConfigured(NotConfigured):
    """503: the ``svix`` provider is selected but ``MEETBOT_SVIX_API_KEY`` is empty."""

    default_code = "webhook_provider_not_configured"
    title = "Webhook provider not configured"

    def __init__(self, detail: str = "the webhook delivery provider has no API key") -> None:
        super().__init__(detail, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
