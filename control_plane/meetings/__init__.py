"""Meetings: list with filters, the full record, transcripts, and purge (API.md Part 1, 2.6)."""
