"""Where spans come from: a SOURCE string, as ``context-integrity judge`` takes it, opened as a span source.

======================================  ==============================================================
SOURCE                                  read as
======================================  ==============================================================
``PATH``                                a file: OTLP/JSON lines (our recording, the Collector's
                                        ``file`` exporter), or one trace saved from Tempo's or
                                        Jaeger's ``/api/traces/<id>``
``tempo+http://HOST:3200``              Tempo's HTTP API (``tempo+https://`` likewise): the trace
                                        ``trace_id``, or the traces of ``service`` in the time range
``jaeger+http://HOST:16686``            the Jaeger query service's HTTP API, the same way
``phoenix+http://HOST:6006``            Phoenix's REST span API: ``project``'s traces in the time
                                        range (``"default"`` when none is named), or ``trace_id``
======================================  ==============================================================

The scheme says which backend, because Tempo, Jaeger and Phoenix all answer plain ``http://`` and
guessing would be wrong in a way that reads as "no traces". A time range left open ends now and
starts an hour before its end (for Tempo and Jaeger; Phoenix reads the whole project).

Every source streams :class:`~..spans.Span`; one that cannot be read raises :class:`SourceError`
(``judge`` exits 2 with its sentence). :func:`spans_of_otlp_request` reads the spans of one OTLP
export request, for a pipeline stage that receives them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime
from typing import Final

from .backends import JaegerSource, TempoSource
from .base import SourceError, SourceItem, SpanSource, TraceComplete
from .files import FileSource
from .otlp import spans_of_document, spans_of_otlp_request
from .phoenix import PhoenixSource

__all__ = [
    "SCHEMES",
    "FileSource",
    "JaegerSource",
    "PhoenixSource",
    "SourceError",
    "SourceItem",
    "SpanSource",
    "TempoSource",
    "TraceComplete",
    "open_source",
    "spans_of_document",
    "spans_of_otlp_request",
]

# The backend schemes a SOURCE may start with (each with http and https).
SCHEMES: Final = ("tempo", "jaeger", "phoenix")


def open_source(
    source: str | os.PathLike[str],
    *,
    trace_id: str | None = None,
    service: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    project: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> SpanSource:
    """The span source ``source`` names (see the table above). Raises :class:`SourceError` for a
    source that cannot be opened, or options it cannot take, with a sentence saying what to do."""
    text = os.fspath(source)
    scheme, separator, rest = text.partition("+")
    if separator and scheme in SCHEMES and rest.startswith(("http://", "https://")):
        if scheme == "phoenix":
            if service is not None:
                raise SourceError("Phoenix is read by project, not by service: name the project instead.")
            return PhoenixSource(
                rest, project=project, trace_id=trace_id, start=start, end=end, headers=headers
            )
        if project is not None:
            raise SourceError(
                f"A project is Phoenix's; {scheme.capitalize()} is read by trace id or service."
            )
        backend = TempoSource if scheme == "tempo" else JaegerSource
        return backend(rest, trace_id=trace_id, service=service, start=start, end=end, headers=headers)
    if text.startswith(("http://", "https://")):
        raise SourceError(
            f"Say which backend {text} is: tempo+{text}, jaeger+{text} or phoenix+{text} "
            "(they all answer plain http, and each is asked differently)."
        )
    if separator and scheme in SCHEMES:
        raise SourceError(
            f"{text}: after '{scheme}+' comes the backend's base URL, e.g. {scheme}+http://localhost:PORT."
        )
    if any(option is not None for option in (trace_id, service, start, end, project)):
        raise SourceError(
            f"{text} is a file: a trace id, a service, a time range and a project choose traces in a "
            "backend (tempo+http://..., jaeger+http://..., phoenix+http://...); every trace in a file is read."
        )
    return FileSource(text)
