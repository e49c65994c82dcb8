"""Bots: launch, read, update and stop bots; scheduled bots; the scheduler that launches them."""
