"""``python -m control_plane [options]``: run the control plane, like ``meetbot serve``."""

import sys

from control_plane.cli import serve_main

raise SystemExit(serve_main(sys.argv[1:]))
