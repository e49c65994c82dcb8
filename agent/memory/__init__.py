"""Memory guard rails of one bot (issue 19): watch the process tree, report, free what can go.

:mod:`agent.memory.tree` reads the PSS of the agent's process tree by role (``agent`` Python,
Playwright's node ``driver``, Chromium's ``browser`` process, its ``renderer`` and
``chromium_other`` processes). :class:`~agent.memory.guard.MemoryGuard` samples it every
``MEETBOT_AGENT_MEMORY_INTERVAL_SECONDS``: above ``MEETBOT_AGENT_MEMORY_WARN_MB`` it logs and
reports a ``memory`` link frame (agent/contracts/link.py ``MemoryReport``) once per crossing;
above ``MEETBOT_AGENT_MEMORY_LIMIT_MB`` it runs the bot's reliefs (what can be freed without
leaving the meeting) and reports what they freed. Unset, both thresholds are shares of the
memory the machine or the agent's cgroup allows (:mod:`agent.memory.budget`).
:mod:`agent.memory.relief` holds the relief of the agent's own heap. Nothing here ends the
meeting.
"""
