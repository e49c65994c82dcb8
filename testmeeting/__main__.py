"""``python -m testmeeting`` runs the simulator like ``meetbot test-meeting``."""

import sys

from testmeeting.cli import main

sys.exit(main(sys.argv[1:]))
