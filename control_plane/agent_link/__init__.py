"""The agent link: each bot's WebSocket, its frames, live commands and the reaper."""
