"""The per-bot SSE stream: the meeting's event log and the server that streams it."""
