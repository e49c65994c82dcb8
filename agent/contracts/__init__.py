"""Wire contracts shared by the agent and the control plane.

Pure pydantic models and data tables: nothing here imports Playwright, whisper or aiohttp, so
the control plane may import this package (and only this package) of ``agent``.
"""
