"""The bot/meeting record shared by the bots and meetings resources.

Its schemas, rendering and the list query, one level below both, so neither imports the other.
"""
