"""The old home of the loop's data model; it now lives in :mod:`context_integrity.loop`.

Kept so code written against the first releases keeps importing; new code imports ``loop``.
"""

from __future__ import annotations

from .loop import *  # noqa: F403
from .loop import __all__ as __all__
