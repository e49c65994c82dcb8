"""Alembic revisions, applied in order; each module's docstring says what it changes."""
