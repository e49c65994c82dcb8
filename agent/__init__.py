"""The meetbot agent: one bot in one meeting, on its own VM (``python -m agent``)."""

__version__ = "0.1.0"
