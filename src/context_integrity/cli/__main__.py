"""``python -m context_integrity.cli``."""

from . import main

raise SystemExit(main())
