"""What every side of meetbot runs under and none of them owns.

A leaf package: it imports nothing of ``agent``, ``control_plane``, ``testmeeting`` or
``meetbot`` (import contract ``common-is-a-leaf`` in pyproject.toml), so any of them may
import it. It is for rules and tools that are the same on both sides of a boundary, e.g. the
SSRF egress rules that both the agent and the control plane enforce. Wire models do not
belong here: they are ``agent.contracts``.
"""
