"""Webhooks: the event catalogue, the outbox, and the delivery providers (docs/api.md 2.8).

* :mod:`~control_plane.webhooks.events` — event types and payload models (also in OpenAPI).
* :mod:`~control_plane.webhooks.outbox` — ``emit(session, workspace_id, event_type, data)``,
  called inside the transaction of the state change that causes the event.
* :mod:`~control_plane.webhooks.provider` — the ``WebhookProvider`` seam; implementations
  :mod:`~control_plane.webhooks.embedded` (default, with :mod:`~control_plane.webhooks.delivery`)
  and :mod:`~control_plane.webhooks.svix_provider`.
* :mod:`~control_plane.webhooks.signing` — Standard Webhooks signatures; the guard on delivery
  targets is the SSRF rules of :mod:`meetbot_common.ssrf`, which the agent enforces too.
"""
