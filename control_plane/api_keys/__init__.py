"""API keys of the caller (API.md 2.2): the routes."""
