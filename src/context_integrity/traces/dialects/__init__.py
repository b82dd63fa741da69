"""The trace dialects: each one module that knows one instrumentation's spans.

A dialect says whether a span is written in it (:meth:`Dialect.claims`), and reads the span into
one :mod:`~context_integrity.traces.readings` reading (:meth:`Dialect.read`): a value it cannot read
becomes a :class:`~context_integrity.traces.readings.Missing` with its reason. ``read`` never raises
on a value a source decodes (JSON's values: text, numbers, booleans, lists, mappings, ``None``).
Dialects are called only through the detector (:func:`~context_integrity.traces.detect.detect`),
which is the contract's boundary for everything else: a span handed in by a caller may hold any
Python object, and whatever a dialect raises on it is said there, once for every dialect.

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
from . import genai, openai_agents, openinference, openllmetry, ours, pydantic_ai


class Dialect(Protocol):
    """One instrumentation's way of writing agent work into spans."""

    # The dialect's name in reports and in ``--format json`` (e.g. "genai", "openinference").
    key: str

    def claims(self, span: Span) -> bool:
        """Whether ``span`` is written in this dialect. Cheap: it is asked of every span.

        A dialect may also say ``signs``: strings one of which every span it claims carries, as an
        attribute key or as its instrumentation scope's name. The pipeline stage (``serve``) looks
        for them in a span's bytes before it decodes the span, and asks no dialect of a span that
        carries none of any dialect's signs; a dialect without ``signs`` is asked of every span.
        """
        ...

    def read(self, span: Span) -> Reading | None:
        """What the span says of the agent's work, or ``None`` if it is no agent work at all. Never
        raises on values a source decodes; called only through the detector, which says whatever
        else it raises."""
        ...


DIALECTS: Final[tuple[Dialect, ...]] = (
    ours.DIALECT,
    pydantic_ai.DIALECT,
    openinference.DIALECT,
    openllmetry.DIALECT,
    openai_agents.DIALECT,
    genai.DIALECT,
)
