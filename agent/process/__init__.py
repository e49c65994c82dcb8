"""The agent process: its settings, logs, heap, display and sound runtime, and errors.

``settings`` (``MEETBOT_AGENT_*``), ``handed_settings`` (the control plane's on top),
``logs``, ``heap`` (glibc arenas), ``runtime`` (Xvfb and PulseAudio) and ``errors`` (the
agent's exceptions). Nothing here imports another part of the agent but ``agent.contracts``.
"""
