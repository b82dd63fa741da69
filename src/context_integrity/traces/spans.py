"""One span as every source hands it to the trace readers: OTLP/JSON, Tempo, Jaeger, Phoenix, a gRPC or
HTTP OTLP request (``serve``). Plain data, with attribute values already decoded to Python values.

Sources turn what they read into :class:`Span`; dialects read a :class:`Span` and never the source's
own shape, so a dialect works the same on a file, a backend's API and the pipeline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

# Attribute values as decoded from OTLP's AnyValue: str, bool, int, float, a list of these, a
# mapping (kvlist), or None. Sources never hand a dialect protobuf or OTLP/JSON nodes.
Attributes = Mapping[str, object]

# Read-only: a shared default must not be a dict (dataclasses refuse one, and a writer would change
# every span's attributes at once).
EMPTY: Final[Mapping[str, object]] = MappingProxyType({})


def _empty() -> Mapping[str, object]:
    return EMPTY


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """One event of a span: its name, time and attributes."""

    name: str
    time_unix_nano: int | None
    attributes: Attributes = field(default_factory=_empty)


@dataclass(frozen=True, slots=True)
class Span:
    """One span, whatever its source.

    ``trace_id`` and ``span_id`` are lower-case hex (32 and 16 characters); ``parent_span_id`` is
    ``None`` for a root. ``resource`` holds the resource's attributes (``service.name`` and the
    like) and ``scope`` the instrumentation scope's name: some dialects are known by them.
    ``status`` is ``"unset"``, ``"ok"`` or ``"error"``.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    start_time_unix_nano: int | None
    end_time_unix_nano: int | None
    attributes: Attributes = field(default_factory=_empty)
    events: tuple[SpanEvent, ...] = ()
    status: str = "unset"
    status_message: str = ""
    kind: str = "internal"
    resource: Attributes = field(default_factory=_empty)
    scope: str | None = None
    # Where the source read it (a line number, "phoenix"), for messages about this span.
    origin: str = field(default="", compare=False)
