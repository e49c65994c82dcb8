"""The bot/meeting record shared by the bots and meetings resources: its schemas, rendering
and the list query (one level below both, so neither imports the other)."""
