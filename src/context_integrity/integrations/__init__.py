"""One module per host: each translates its host's hooks into the judge's seams.

Kept import-free on purpose: importing this package must not import any framework (each
integration imports its host lazily) nor OpenTelemetry.
"""

from __future__ import annotations

from typing import Final

# Every framework ``setup(instrument=...)`` can arm: (name, the module exposing
# ``instrument_all()`` / ``uninstrument_all()``). A module whose framework is not installed
# fails to import, and is skipped.
INTEGRATIONS: Final[tuple[tuple[str, str], ...]] = (
    ("langchain", "context_integrity.integrations.langchain"),
)
