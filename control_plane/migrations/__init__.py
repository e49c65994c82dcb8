"""Alembic environment and revisions of the control plane's database schema."""
