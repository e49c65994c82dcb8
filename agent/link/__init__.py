"""The agent's link to the control plane: a durable outbox and the WebSocket client."""
