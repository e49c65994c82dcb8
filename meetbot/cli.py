"""Dispatch ``meetbot <subcommand> ...`` to the package that owns the subcommand.

Each entry names ``module:function``; the function takes the remaining argv and returns an
exit code. Modules are imported only when their subcommand runs.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("control_plane.cli:serve_main", "run the control plane (REST API, scheduler)"),
    "admin": ("control_plane.cli:admin_main", "administration: `admin bootstrap --email E`"),
    "db": ("control_plane.cli:db_main", "database: `db upgrade`"),
    "agent": ("agent.cli:main", "send one bot into a meeting from this machine"),
    "test-meeting": ("testmeeting.cli:main", "run the local meeting simulator"),
    "demo": ("meetbot.demo.cli:main", "the whole product on real speech, all local"),
    "image": ("meetbot.image.cli:main", "the bot VM image: `image build`, `image path`"),
}


def _usage() -> str:
    lines = ["usage: meetbot <subcommand> [options]", "", "subcommands:"]
    lines += [f"  {name:<14} {help_text}" for name, (_, help_text) in SUBCOMMANDS.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``meetbot`` command; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help"}:
        print(_usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in SUBCOMMANDS:
        print(f"meetbot: unknown subcommand {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name, _, func_name = SUBCOMMANDS[name][0].partition(":")
    func: Callable[[list[str]], int] = getattr(importlib.import_module(module_name), func_name)
    return func(rest)
