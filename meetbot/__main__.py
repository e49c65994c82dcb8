"""``python -m meetbot`` is the ``meetbot`` command."""

from meetbot.cli import main

raise SystemExit(main())
