"""Pytest plugins of the suite (registered in ``tests/conftest.py``)."""
