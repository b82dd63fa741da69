"""Trace backends' query APIs: Tempo and Jaeger (a trace by id, or a service's traces in a time range).

- **Tempo**: ``GET /api/traces/{id}`` for one trace; ``GET /api/search?tags=service.name=<service>
  &start=<unix s>&end=<unix s>&limit=<n>`` lists a service's traces (``{"traces": [{"traceID"}, ...]}``),
  each then fetched by id.
- **Jaeger** (the query service's HTTP API, v1 and v2 alike): ``GET /api/traces/{id}``, and
  ``GET /api/traces?service=<service>&start=<unix µs>&end=<unix µs>&limit=<n>``, which answers with
  whole traces.

Every answer is read up to :data:`~context_integrity.limits.MAX_TRACE_DOCUMENT_BYTES`, every request
waits at most :data:`~context_integrity.limits.TRACE_API_TIMEOUT_SECONDS`, and a search lists at
most :data:`~context_integrity.limits.MAX_SEARCHED_TRACES` traces (and says when it hit that). The
trace JSON itself is converted by :mod:`context_integrity.recording.foreign`, as for a saved file.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Final

from ...limits import MAX_SEARCHED_TRACES, MAX_TRACE_DOCUMENT_BYTES, TRACE_API_TIMEOUT_SECONDS
from ...recording.otlp_json import TRACE_ID_HEX_CHARS, Malformed, hex_id
from ...text import clip
from .base import Say, SourceError, SourceItem, SpanSource
from .files import document_items

_MIB = 1024 * 1024
# A service's traces with no time range given: the last hour, as Tempo's and Jaeger's UIs default to.
DEFAULT_LOOKBACK: Final = timedelta(hours=1)


def get_json(url: str, *, what: str, headers: Mapping[str, str] | None = None) -> Any:
    """``url``'s JSON answer; :class:`SourceError` naming ``what`` for anything else."""
    request = urllib.request.Request(url, headers={"Accept": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=TRACE_API_TIMEOUT_SECONDS) as response:
            body = response.read(MAX_TRACE_DOCUMENT_BYTES + 1)
    except urllib.error.HTTPError as error:
        detail = _error_body(error)
        raise SourceError(f"{what} answered {error.code} {error.reason} for {url}{detail}.") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise SourceError(f"Could not reach {what} at {url} ({clip(str(reason), 200)}).") from None
    if len(body) > MAX_TRACE_DOCUMENT_BYTES:
        raise SourceError(
            f"{what} answered more than {MAX_TRACE_DOCUMENT_BYTES / _MIB:.0f} MiB for {url}; ask for fewer "
            "traces (a narrower time range, or one trace id)."
        )
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as error:
        raise SourceError(
            f"{what} did not answer JSON for {url} ({clip(str(error), 120)}): is this the right base URL?"
        ) from None


def _error_body(error: urllib.error.HTTPError) -> str:
    try:
        text = error.read(400).decode("utf-8", "replace").strip()
    except Exception:
        return ""
    return f": {clip(text, 200)}" if text else ""


def trace_id_of(value: str) -> str:
    """A trace id as 32 lower-case hex digits (a shorter hex id is left-padded, as Jaeger prints them)."""
    text = value.strip().lower()
    if text and len(text) < TRACE_ID_HEX_CHARS and all(c in "0123456789abcdef" for c in text):
        text = text.rjust(TRACE_ID_HEX_CHARS, "0")
    try:
        return hex_id(text, TRACE_ID_HEX_CHARS, "the trace id")
    except Malformed as error:
        raise SourceError(f"{error}: pass the 32-hex-digit trace id the backend shows.") from None


def time_range(
    start: datetime | None, end: datetime | None, *, now: datetime | None = None
) -> tuple[datetime, datetime]:
    """The range to search: as given; an open end is now; an open start is an hour before the end."""
    until = end or now or datetime.now(timezone.utc)
    since = start or until - DEFAULT_LOOKBACK
    if since.tzinfo is None or until.tzinfo is None:
        raise SourceError("The time range must say its time zone (e.g. 2025-06-01T10:00:00+00:00).")
    if since >= until:
        raise SourceError(
            f"The time range is empty: it starts at {since.isoformat()} and ends at {until.isoformat()}."
        )
    return since, until


class _Backend(SpanSource):
    label: str

    def __init__(
        self,
        base_url: str,
        *,
        trace_id: str | None,
        service: str | None,
        start: datetime | None,
        end: datetime | None,
        headers: Mapping[str, str] | None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers or {})
        if trace_id is None and service is None:
            raise SourceError(
                f"Reading {self.label} needs a trace id, or a service (with an optional time range)."
            )
        self.trace_id = trace_id_of(trace_id) if trace_id is not None else None
        self.service = service
        self.start, self.end = time_range(start, end) if trace_id is None else (start, end)
        what = f"trace {self.trace_id}" if self.trace_id else f"service {service!r}"
        self.description = f"{self.label} at {self.base_url}, {what}"

    def _url(self, path: str, query: Mapping[str, object] | None = None) -> str:
        tail = f"?{urllib.parse.urlencode(query)}" if query else ""
        return f"{self.base_url}{path}{tail}"

    def _trace(self, trace_id: str, say: Say) -> Iterator[SourceItem]:
        url = self._url(f"/api/traces/{trace_id}")
        document = get_json(url, what=self.label, headers=self.headers)
        if not isinstance(document, dict):
            raise SourceError(
                f"{self.label} answered a JSON {type(document).__name__}, not a trace, for {url}."
            )
        yield from document_items(document, f"{self.label} trace {trace_id}", say)


class TempoSource(_Backend):
    """Grafana Tempo's HTTP API."""

    label = "Tempo"

    def items(self, say: Say) -> Iterator[SourceItem]:
        if self.trace_id is not None:
            yield from self._trace(self.trace_id, say)
            return
        assert self.start is not None and self.end is not None
        query = {
            "tags": f"service.name={self.service}",
            "start": int(self.start.timestamp()),
            "end": int(self.end.timestamp()) + 1,
            "limit": MAX_SEARCHED_TRACES,
        }
        found = get_json(self._url("/api/search", query), what=self.label, headers=self.headers)
        traces = found.get("traces") if isinstance(found, dict) else None
        if not isinstance(traces, list):
            raise SourceError(
                f"{self.label}'s search did not answer a list of traces (got {clip(str(found), 120)})."
            )
        if len(traces) >= MAX_SEARCHED_TRACES:
            say(
                f"the search listed {MAX_SEARCHED_TRACES} traces, the most one search reads; narrow the "
                "time range to judge the others"
            )
        for entry in traces[:MAX_SEARCHED_TRACES]:
            listed = entry.get("traceID") if isinstance(entry, dict) else None
            if not isinstance(listed, str):
                say(f"the search listed an entry without a traceID ({clip(str(entry), 80)}); skipped")
                continue
            try:
                yield from self._trace(trace_id_of(listed), say)
            except SourceError as error:
                say(f"trace {listed} could not be read: {error}")


class JaegerSource(_Backend):
    """The Jaeger query service's HTTP API."""

    label = "Jaeger"

    def items(self, say: Say) -> Iterator[SourceItem]:
        if self.trace_id is not None:
            yield from self._trace(self.trace_id, say)
            return
        assert self.start is not None and self.end is not None
        query = {
            "service": self.service,
            "start": int(self.start.timestamp() * 1_000_000),
            "end": int(self.end.timestamp() * 1_000_000),
            "limit": MAX_SEARCHED_TRACES,
        }
        url = self._url("/api/traces", query)
        document = get_json(url, what=self.label, headers=self.headers)
        data = document.get("data") if isinstance(document, dict) else None
        if not isinstance(data, list):
            raise SourceError(f'{self.label}\'s search did not answer {{"data": [traces]}} for {url}.')
        if len(data) >= MAX_SEARCHED_TRACES:
            say(
                f"the search answered {MAX_SEARCHED_TRACES} traces, the most one search reads; narrow the "
                "time range to judge the others"
            )
        yield from document_items({"data": data}, f"{self.label} search", say)
