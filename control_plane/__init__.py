"""The meetbot control plane: REST API, scheduler, launchers, webhooks, artifact storage."""
