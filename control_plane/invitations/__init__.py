"""Workspace invitations (API.md 2.1): the routes."""
