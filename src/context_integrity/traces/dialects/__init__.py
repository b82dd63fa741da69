"""The trace dialects: each one module that knows one instrumentation's spans.

A dialect says whether a span is written in it (:meth:`Dialect.claims`), and reads the span into
one :mod:`~context_integrity.traces.readings` reading (:meth:`Dialect.read`), never raising: a value
it cannot read becomes a :class:`~context_integrity.traces.readings.Missing` with its reason.

:data:`DIALECTS` is THE order in which the detector asks them; the first that claims a span reads
it. Adding a dialect is one module here, exporting ``DIALECT``, and one entry in :data:`DIALECTS`.
The order, and why:

1. ``ours``: our own spans (instrumentation scope ``context_integrity``), known for certain;
2. ``pydantic_ai``, 3. ``openinference``, 4. ``openllmetry``, 5. ``openai_agents``: each
   instrumentation that also writes ``gen_ai.*`` attributes, read by what only it writes;
6. ``genai``: the OpenTelemetry GenAI conventions, last, because every dialect above writes
   ``gen_ai.*`` too and knows its own spans better.
"""

from __future__ import annotations

from typing import Final, Protocol

from ..readings import Reading
from ..spans import Span
from . import genai, ours


class Dialect(Protocol):
    """One instrumentation's way of writing agent work into spans."""

    # The dialect's name in reports and in ``--format json`` (e.g. "genai", "openinference").
    key: str

    def claims(self, span: Span) -> bool:
        """Whether ``span`` is written in this dialect. Cheap: it is asked of every span."""
        ...

    def read(self, span: Span) -> Reading | None:
        """What the span says of the agent's work, or ``None`` if it is no agent work at all."""
        ...


DIALECTS: Final[tuple[Dialect, ...]] = (
    ours.DIALECT,
    genai.DIALECT,
)
