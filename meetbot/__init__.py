"""The ``meetbot`` command: one entry point over the control plane, the agent and testmeeting.

This package only composes the three top-level packages (docs/architecture.md §1); each subcommand's
module is imported lazily, so ``meetbot serve`` never loads Playwright or whisper.
"""
