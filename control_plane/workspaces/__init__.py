"""Workspaces (docs/api.md 2.1): the routes and the workspace-of-path access check."""
