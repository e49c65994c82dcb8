"""API keys of the caller (docs/api.md 2.2): the routes."""
