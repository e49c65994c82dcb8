"""Workspace invitations (docs/api.md 2.1): the routes."""
