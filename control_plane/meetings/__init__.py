"""Meetings: list with filters, the full record, transcripts, and purge (docs/api.md 2.6)."""
