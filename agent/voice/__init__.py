"""The bot's voice: speech synthesis, fetched audio, and playing either into the microphone."""
