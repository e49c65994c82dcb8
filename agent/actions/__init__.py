"""Live action detection: completed transcript segments → language model → typed actions.

The seam is :class:`agent.actions.base.ActionDetector` (DESIGN.md §4) with two providers,
:mod:`agent.actions.openai_provider` (any OpenAI-compatible chat-completions endpoint) and
:mod:`agent.actions.local_provider` (a GGUF model run in-process by ``xllamacpp``).
:func:`agent.actions.factory.open_detector` picks one, or none when ``enable_actions`` is off;
:class:`agent.actions.windowing.ActionWindower` feeds it windows of segments and yields
:class:`agent.actions.model.DetectedAction` objects.
"""
