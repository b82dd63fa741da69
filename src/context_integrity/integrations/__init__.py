"""One module per host: each translates its host's hooks into the judge's seams.

Kept import-free on purpose: importing this package must not import any framework (each
integration imports its host lazily) nor OpenTelemetry.

:data:`SUPPORTED` is the table ``setup(instrument=...)`` reads: a framework's name as the user
writes it, and the module that instruments it. Each module exposes ``instrument_all() -> None``
(arm every agent of that framework, including ones created earlier where the framework allows
it) and ``uninstrument_all() -> None`` (undo it), and imports its framework only when loaded, so a
``ModuleNotFoundError`` from loading it means the framework is not installed.
"""

from __future__ import annotations

from typing import Final

SUPPORTED: Final[tuple[tuple[str, str], ...]] = (
    ("pydantic_ai", "context_integrity.integrations.pydantic_ai"),
    ("langchain", "context_integrity.integrations.langchain"),
    ("openai_agents", "context_integrity.integrations.openai_agents"),
)


def supported_names() -> tuple[str, ...]:
    """The names ``setup(instrument=[...])`` accepts, in table order."""
    return tuple(name for name, _ in SUPPORTED)
